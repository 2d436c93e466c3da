"""What the torch.linalg families share: torch's argument checks and errors, the `out=` wrapper, and the
trip between a tensor and the numpy array LAPACK works on."""

from __future__ import annotations

import builtins
import functools

import numpy as np

from .. import _C
from .._C import Tensor
from .._ops import _write_out
from .._tensor import dtype_title


class LinAlgError(RuntimeError):
    """torch.linalg.LinAlgError: the input is singular, or not positive-definite."""


def _writes_out(fn):
    """torch's `out=`: the result copied into the given tensor (or tuple of tensors), which is what
    the call returns."""

    @functools.wraps(fn)
    def wrapper(*args, out=None, **kwargs):
        result = fn(*args, **kwargs)
        if out is None:
            return result
        if isinstance(result, tuple):
            return type(result)(*(_write_out(r, o) for r, o in zip(result, out)))
        return _write_out(result, out)

    return wrapper


# Their complex paths do not match torch yet (pivoting by |re|+|im|, complex Householder, ...): refused.
_REAL_ONLY = {"cholesky_inverse", "cholesky_solve", "linalg.householder_product", "torch.linalg.ldl_factor",
              "torch.linalg.ldl_factor_ex", "torch.linalg.ldl_solve", "linalg.lstsq", "linalg.lu", "linalg.lu_factor",
              "linalg.lu_factor_ex", "torch.lu", "linalg.lu_solve", "lu_solve", "linalg.matrix_sqrth", "linalg.pinv",
              "linalg.polar", "logdet", "linalg.matrix_exp", "ormqr", "geqrf", "torch.lu_unpack", "triangular_solve",
              "linalg.ldl_factor", "linalg.ldl_factor_ex", "linalg.ldl_solve"}


def _check(fn: str, A, *, square=False, min_dim=2, arg="A") -> None:
    if not isinstance(A, Tensor):
        raise TypeError(f"{fn.replace('.', '_')}(): argument '{arg}' (position 1) must be Tensor, not "
                        f"{builtins.type(A).__name__}")
    if A.dim() < min_dim:
        raise RuntimeError(f"{fn}: The input tensor {arg} must have at least {min_dim} dimensions.")
    if not (A.is_floating_point() or A.is_complex() and fn not in _REAL_ONLY):
        raise NotImplementedError(f"{fn}: Expected a floating point or complex tensor as input. Got "
                                  f"{dtype_title(A.dtype)}")
    if A.dtype not in (_C.float32, _C.float64, _C.complex64, _C.complex128):
        # LAPACK has no half precision: torch's CPU kernels are not built for it either
        raise NotImplementedError(f"\"{fn.replace('.', '_')}_cpu\" not implemented for '{dtype_title(A.dtype)}'")
    if square and A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{fn}: A must be batches of square matrices, but they are {A.shape[-2]} by "
                           f"{A.shape[-1]} matrices")


def _np(A: Tensor) -> np.ndarray:
    _sync_blas_threads()
    return A.detach().cpu().numpy()


_blas = {}


def _sync_blas_threads() -> None:
    """numpy's OpenBLAS runs as many threads as candle_bind's set_num_threads asks (it starts with one per
    core, and an oversubscribed thread that spins waiting made a 256 solve 50x slower than one thread)."""
    want = _C.get_num_threads()
    if _blas.get("threads") == want:
        return
    if "set" not in _blas:
        import ctypes
        import glob
        import os

        libs = glob.glob(os.path.join(os.path.dirname(np.__file__), os.pardir, "numpy.libs", "libscipy_openblas*"))
        fn = None
        for lib in libs:
            fn = getattr(ctypes.CDLL(lib), "scipy_openblas_set_num_threads64_", None) or fn
        _blas["set"] = fn
    if _blas["set"] is not None:
        _blas["set"](int(want))
    _blas["threads"] = want


def _np_dtype(dtype):
    return {_C.float32: np.float32, _C.float64: np.float64, _C.int64: np.int64, _C.int32: np.int32}[dtype]


def _back(arr, like: Tensor, dtype=None) -> Tensor:
    """A LAPACK result as a tensor of `like`'s dtype (or `dtype`) on `like`'s device."""
    want = dtype or like.dtype
    if want in (_C.complex64, _C.complex128) or np.iscomplexobj(arr):
        out = _back_complex(arr, want)
    else:
        out = _C.from_numpy(np.array(arr, dtype=_np_dtype(want), order="C"))
    return out if like.device.type == "cpu" else out.to(like.device)


def _back_complex(arr, want):
    """numpy's complex result as a ComplexTensor; a real one (singular values, norms, logabsdet) for a
    complex input is real of its parts' precision, as torch's."""
    from .._complex import from_numpy_complex, real_dtype

    parts = np.float64 if real_dtype(want) == _C.float64 else np.float32
    if np.iscomplexobj(arr):
        return from_numpy_complex(arr, parts)
    return _C.from_numpy(np.array(arr, dtype=parts, order="C"))


def _int32(arr, like: Tensor) -> Tensor:
    """Pivots and LAPACK info codes: int32, as torch's."""
    return _back(arr, like, _C.int32)


def _same_dtype(fn: str, A: Tensor, B, arg="B") -> None:
    if not isinstance(B, Tensor):
        raise TypeError(f"{fn.replace('.', '_')}(): argument '{arg}' (position 2) must be Tensor, not "
                        f"{builtins.type(B).__name__}")
    if A.dtype != B.dtype:
        raise RuntimeError(f"{fn}: Expected A and B to have the same dtype, but found A of type "
                           f"{dtype_title(A.dtype)} and B of type {dtype_title(B.dtype)} instead")


def _flat(a: np.ndarray) -> np.ndarray:
    """A batch `(*, m, n)` as `(b, m, n)` (explicit b: -1 cannot be inferred for empty matrices)."""
    return a.reshape(int(np.prod(a.shape[:-2], dtype=np.int64)), *a.shape[-2:])


def _each(a: np.ndarray):
    """The matrices of a batch `(*, m, n)` with their flat batch index."""
    return enumerate(_flat(a))


def _batch_prefix(a: np.ndarray, i: int) -> str:
    return f"(Batch element {i}): " if a.ndim > 2 else ""


def _singular(fn: str, a: np.ndarray) -> LinAlgError:
    """torch's message for a singular input: the first exactly-zero pivot of LU with partial
    pivoting (getrf's, which is what stopped LAPACK), in the first batch element that has one."""
    from ._decomp import _getrf

    info = _getrf(a.astype(np.float64))[2].reshape(-1)
    for i, k in enumerate(info):
        if k:
            return LinAlgError(f"{fn}: {_batch_prefix(a, i)}The diagonal element {k} is zero, the inversion "
                               "could not be completed because the input matrix is singular.")
    return LinAlgError(f"{fn}: The input matrix is singular.")


def _check_uplo(uplo) -> None:
    if uplo not in ("L", "U", "l", "u"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {uplo}")


def _tol(v, like: np.ndarray):
    """atol/rtol as given (a number or a tensor of batch shape) as an array that broadcasts against
    singular values `(*, k)`."""
    if isinstance(v, Tensor):
        return _np(v).astype(like.dtype)[..., None]
    return np.asarray(v, like.dtype)


def _tolerance(s: np.ndarray, m: int, n: int, atol, rtol, smax) -> np.ndarray:
    """max(atol, rtol * smax), torch's rule for the defaults: rtol is eps * max(m, n) unless given, and 0
    where a given atol is positive."""
    default = np.finfo(s.dtype).eps * builtins.max(m, n)
    a = np.zeros((), s.dtype) if atol is None else _tol(atol, s)
    if rtol is not None:
        r = _tol(rtol, s)
    elif atol is None:
        r = np.asarray(default, s.dtype)
    else:
        r = np.where(a > 0, 0, default).astype(s.dtype)
    return np.maximum(a, r * smax)


def _lapack(name: str, fallback, *arrays, nout=1, **kwargs):
    """float32 arrays through numpy's LAPACK gufunc `name` in single precision (numpy.linalg computes
    float32 in double: twice the flops plus two conversions, where torch runs sgesv/ssyevd/...); anything
    else, an empty or a failing input (singular, nan: numpy's path raises its error) goes to `fallback`."""
    if arrays[0].dtype == np.float32 and all(a.size for a in arrays):
        from numpy.linalg import _umath_linalg

        sig = "f" * len(arrays) + "->" + "f" * nout
        try:
            with np.errstate(invalid="raise", over="ignore", divide="ignore", under="ignore"):
                return getattr(_umath_linalg, name)(*arrays, signature=sig)
        except FloatingPointError:
            pass
    return fallback(*arrays, **kwargs)
