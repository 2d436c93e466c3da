"""torch.linalg: decompositions and solvers on LAPACK through numpy.linalg (a maintained library, as
design §8 asks), under torch's semantics: batched inputs `(*, m, n)`, float32 stays float32, torch's
return types and error types (a singular or non-positive-definite input raises `LinAlgError`, a
RuntimeError, with torch's message). Norms are compositions of candle_bind's own ops, so they stay on
the tensor's device and take half precision as torch's do. The legacy top-level functions
(`torch.svd`, `torch.det`, `torch.svd_lowrank`, ...) live here too; `torch.X` resolves to them."""

from __future__ import annotations

import builtins
import functools
import math

import numpy as np

from . import _C
from ._C import Tensor
from ._ops import _write_out
from ._tensor import dtype_title
from .return_types import linalg_eigh, linalg_lstsq, linalg_qr, linalg_slogdet, linalg_svd, svd as _svd_tuple

__all__ = [
    "LinAlgError", "svd", "svdvals", "qr", "norm", "vector_norm", "matrix_norm", "solve", "solve_triangular", "inv",
    "det", "slogdet", "pinv", "eigh", "eigvalsh", "cholesky", "lstsq", "matrix_rank", "multi_dot", "vecdot", "cross",
    "matrix_power",
]


class LinAlgError(RuntimeError):
    """torch.linalg.LinAlgError: the input is singular, or not positive-definite."""


# ---- tensor <-> LAPACK ----


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


def _check(fn: str, A, *, square=False, min_dim=2) -> None:
    if not isinstance(A, Tensor):
        raise TypeError(f"{fn.replace('.', '_')}(): argument 'A' (position 1) must be Tensor, not "
                        f"{builtins.type(A).__name__}")
    if A.dim() < min_dim:
        raise RuntimeError(f"{fn}: The input tensor A must have at least {min_dim} dimensions.")
    if not A.is_floating_point():
        raise NotImplementedError(f"{fn}: Expected a floating point or complex tensor as input. Got "
                                  f"{dtype_title(A.dtype)}")
    if A.dtype not in (_C.float32, _C.float64):
        # LAPACK has no half precision: torch's CPU kernels are not built for it either
        raise NotImplementedError(f"\"{fn.replace('.', '_')}_cpu\" not implemented for '{dtype_title(A.dtype)}'")
    if square and A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{fn}: A must be batches of square matrices, but they are {A.shape[-2]} by "
                           f"{A.shape[-1]} matrices")


def _np(A: Tensor) -> np.ndarray:
    return A.detach().cpu().numpy()


def _back(arr, like: Tensor, dtype=None) -> Tensor:
    """A LAPACK result as a tensor of `like`'s dtype (or `dtype`) on `like`'s device."""
    arr = np.array(arr, dtype=_np_dtype(dtype or like.dtype), order="C")
    out = _C.from_numpy(arr)
    return out if like.device.type == "cpu" else out.to(like.device)


def _np_dtype(dtype):
    return {_C.float32: np.float32, _C.float64: np.float64, _C.int64: np.int64}[dtype]


def _same_dtype(fn: str, A: Tensor, B, arg="B") -> None:
    if not isinstance(B, Tensor):
        raise TypeError(f"{fn.replace('.', '_')}(): argument '{arg}' (position 2) must be Tensor, not "
                        f"{builtins.type(B).__name__}")
    if A.dtype != B.dtype:
        raise RuntimeError(f"{fn}: Expected A and B to have the same dtype, but found A of type "
                           f"{dtype_title(A.dtype)} and B of type {dtype_title(B.dtype)} instead")


def _each(a: np.ndarray):
    """The matrices of a batch `(*, m, n)` with their flat batch index."""
    return enumerate(a.reshape(-1, *a.shape[-2:]))


def _batch_prefix(a: np.ndarray, i: int) -> str:
    return f"(Batch element {i}): " if a.ndim > 2 else ""


def _singular(fn: str, a: np.ndarray) -> LinAlgError:
    """torch's message for a singular input: the first exactly-zero pivot of LU with partial
    pivoting (getrf's, which is what stopped LAPACK), in the first batch element that has one."""
    for i, m in _each(a):
        m = m.astype(np.float64, copy=True)
        for k in range(m.shape[0]):
            p = k + int(np.argmax(np.abs(m[k:, k])))
            if m[p, k] == 0:
                return LinAlgError(f"{fn}: {_batch_prefix(a, i)}The diagonal element {k + 1} is zero, the inversion "
                                   "could not be completed because the input matrix is singular.")
            m[[k, p]] = m[[p, k]]
            m[k + 1:] -= np.outer(m[k + 1:, k] / m[k, k], m[k])
    return LinAlgError(f"{fn}: The input matrix is singular.")


# ---- decompositions ----


@_writes_out
def svd(A, full_matrices=True, *, driver=None):
    """A = U diag(S) Vh; returns torch.return_types.linalg_svd(U, S, Vh)."""
    _check("linalg.svd", A)
    if driver is not None:
        raise RuntimeError("torch.linalg.svd: keyword argument `driver=` is only supported on CUDA inputs with "
                           "cuSOLVER backend.")
    u, s, vh = np.linalg.svd(_np(A), full_matrices=full_matrices)
    return linalg_svd(_back(u, A), _back(s, A), _back(vh, A))


@_writes_out
def svdvals(A, *, driver=None):
    _check("linalg.svdvals", A)
    return _back(np.linalg.svd(_np(A), compute_uv=False), A)


@_writes_out
def qr(A, mode="reduced"):
    """Householder QR; returns torch.return_types.linalg_qr(Q, R) (Q empty for mode='r')."""
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), 'r', "
                           "or 'complete'")
    _check("linalg.qr", A)
    if mode == "r":
        return linalg_qr(_back(np.zeros(0), A), _back(np.linalg.qr(_np(A), mode="r"), A))
    q, r = np.linalg.qr(_np(A), mode=mode)
    return linalg_qr(_back(q, A), _back(r, A))


@_writes_out
def eigh(A, UPLO="L"):
    """Eigenvalues (ascending) and eigenvectors of symmetric matrices, from the UPLO triangle."""
    _check_uplo(UPLO)
    _check("linalg.eigh", A, square=True)
    w, v = np.linalg.eigh(_np(A), UPLO=UPLO)
    return linalg_eigh(_back(w, A), _back(v, A))


@_writes_out
def eigvalsh(A, UPLO="L"):
    _check_uplo(UPLO)
    _check("linalg.eigvalsh", A, square=True)
    return _back(np.linalg.eigvalsh(_np(A), UPLO=UPLO), A)


def _check_uplo(uplo) -> None:
    if uplo not in ("L", "U", "l", "u"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {uplo}")


@_writes_out
def cholesky(A, *, upper=False):
    """L with A = L L^T from A's lower triangle (upper=True: U = L^T from the upper triangle)."""
    _check("linalg.cholesky", A, square=True)
    a = _np(A)
    if upper:
        a = np.swapaxes(a, -1, -2)
    try:
        low = np.linalg.cholesky(a)
    except np.linalg.LinAlgError:
        raise _not_positive_definite(a) from None
    return _back(np.swapaxes(low, -1, -2) if upper else low, A)


def _not_positive_definite(a: np.ndarray) -> LinAlgError:
    """torch's message: the order of the first leading minor that is not positive-definite (the
    property is monotone in the order, so a bisection finds it)."""
    for i, m in _each(a):
        if not _is_pd(m, m.shape[0]):
            lo, hi = 0, m.shape[0]  # minors up to lo are PD, minor hi is not
            while hi - lo > 1:
                mid = (lo + hi) // 2
                lo, hi = (mid, hi) if _is_pd(m, mid) else (lo, mid)
            return LinAlgError(f"linalg.cholesky: {_batch_prefix(a, i)}The factorization could not be completed "
                               f"because the input is not positive-definite (the leading minor of order {hi} is not "
                               "positive-definite).")
    return LinAlgError("linalg.cholesky: The factorization could not be completed because the input is not "
                       "positive-definite.")


def _is_pd(m: np.ndarray, k: int) -> bool:
    try:
        np.linalg.cholesky(m[:k, :k])
        return True
    except np.linalg.LinAlgError:
        return False


# ---- inverses and solvers ----


@_writes_out
def inv(A):
    _check("linalg.inv", A, square=True)
    a = _np(A)
    try:
        return _back(np.linalg.inv(a), A)
    except np.linalg.LinAlgError:
        raise _singular("linalg.inv", a) from None


@_writes_out
def det(A):
    _check("linalg.det", A, square=True)
    return _back(np.linalg.det(_np(A)), A)


@_writes_out
def slogdet(A):
    _check("linalg.slogdet", A, square=True)
    sign, logabsdet = np.linalg.slogdet(_np(A))
    return linalg_slogdet(_back(sign, A), _back(logabsdet, A))


def logdet(A):
    """log det A: nan for a negative determinant, -inf for a zero one (torch.logdet)."""
    _check("logdet", A, square=True)
    sign, logabsdet = np.linalg.slogdet(_np(A))
    with np.errstate(invalid="ignore"):
        return _back(np.where(sign < 0, np.nan, logabsdet), A)


def _rhs(fn: str, A: Tensor, B: Tensor, vector: bool):
    """B as a batch of matrices `(*, n, k)`, broadcast against A's batch (a vector B gets a trailing 1)."""
    b = _np(B)
    if vector:
        b = b[..., None]
    rows = A.shape[-2]
    if b.shape[-2] != rows:
        shape = "x".join(str(s) for s in b.shape[-2:])
        raise RuntimeError(f"{fn}: Incompatible shapes of A and B for the equation AX = B ({A.shape[-2]}x"
                           f"{A.shape[-1]} and {shape})")
    try:
        batch = np.broadcast_shapes(tuple(A.shape[:-2]), b.shape[:-2])
    except ValueError:
        raise RuntimeError(f"{fn}: Incompatible batch shapes of A {list(A.shape[:-2])} and B "
                           f"{list(b.shape[:-2])}") from None
    return np.broadcast_to(_np(A), batch + tuple(A.shape[-2:])), np.broadcast_to(b, batch + b.shape[-2:])


def _vector_rhs(A: Tensor, B: Tensor) -> bool:
    return B.dim() == 1 or (B.dim() == A.dim() - 1 and tuple(B.shape) == tuple(A.shape[:-1]))


@_writes_out
def solve(A, B, *, left=True):
    """X with A X = B (left=False: X A = B); B a matrix, a batch of them, or a vector."""
    _check("linalg.solve", A, square=True)
    _same_dtype("linalg.solve", A, B)
    vector = _vector_rhs(A, B)
    if not left:  # X A = B  <=>  A^T X^T = B^T (a vector B is a column, as torch reads it)
        cols = 1 if vector else B.shape[-1]
        if cols != A.shape[-1]:
            rows = B.shape[-1] if vector else B.shape[-2]
            raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation XA = B "
                               f"({A.shape[-2]}x{A.shape[-1]} and {rows}x{cols})")
        return solve(A.mT, B.mT).mT
    a, b = _rhs("linalg.solve", A, B, vector)
    try:
        x = np.linalg.solve(a, b)
    except np.linalg.LinAlgError:
        raise LinAlgError("torch.linalg.solve: The solver failed because the input matrix is singular.") from None
    return _back(x[..., 0] if vector else x, A)


@_writes_out
def solve_triangular(A, B, *, upper, left=True, unitriangular=False):
    """X with A X = B for triangular A (only the `upper` or lower triangle of A is read)."""
    _check("linalg.solve_triangular", A, square=True)
    _same_dtype("linalg.solve_triangular", A, B)
    if not left:
        return solve_triangular(A.mT, B.mT, upper=not upper, unitriangular=unitriangular).mT
    a, b = _rhs("linalg.solve_triangular", A, B, False)
    a = np.triu(a) if upper else np.tril(a)
    if unitriangular:
        a = a.copy()
        idx = np.arange(a.shape[-1])
        a[..., idx, idx] = 1
    with np.errstate(divide="ignore", invalid="ignore"):
        try:
            x = np.linalg.solve(a, b)
        except np.linalg.LinAlgError:  # torch's trsm divides by the zero diagonal: inf/nan, no error
            x = np.full(np.broadcast_shapes(a.shape[:-1] + (1,), b.shape), np.nan)
    return _back(x, A)


@_writes_out
def pinv(A, *, atol=None, rtol=None, hermitian=False):
    """Moore-Penrose pseudo-inverse: singular values at or below max(atol, rtol * sigma_max) are
    dropped; rtol defaults to eps * max(m, n) when atol is not given, else to 0 (torch's rule)."""
    _check("linalg.pinv", A)
    a = _np(A)
    m, n = a.shape[-2:]
    if 0 in a.shape:
        return _back(np.zeros(a.shape[:-2] + (n, m)), A)
    eps = np.finfo(a.dtype).eps
    if rtol is None:
        rtol = eps * builtins.max(m, n) if atol is None else 0.0
    atol = 0.0 if atol is None else atol
    tol = lambda v: _np(v)[..., None] if isinstance(v, Tensor) else v  # noqa: E731
    if hermitian:
        w, v = np.linalg.eigh(a)
        s = np.abs(w)
        keep = s > np.maximum(tol(atol), tol(rtol) * s.max(-1, keepdims=True))
        with np.errstate(divide="ignore"):
            winv = np.where(keep, 1 / np.where(keep, w, 1), 0)
        return _back((v * winv[..., None, :]) @ np.swapaxes(v, -1, -2), A)
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    keep = s > np.maximum(tol(atol), tol(rtol) * s[..., :1])
    sinv = np.where(keep, 1 / np.where(keep, s, 1), 0)
    return _back(np.swapaxes(vh, -1, -2) @ (sinv[..., :, None] * np.swapaxes(u, -1, -2)), A)


_LSTSQ_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


def lstsq(A, B, rcond=None, *, driver=None):
    """Least-squares solution of A X = B, minimum-norm when A is rank-deficient. The result fields
    follow the driver as torch's do: `rank` (not for gels), `singular_values` (gelsd and gelss only),
    `residuals` (m > n and full rank, not for gelsy)."""
    _check("linalg.lstsq", A)
    _same_dtype("linalg.lstsq", A, B, "b")
    driver = driver or "gelsy"
    if driver not in _LSTSQ_DRIVERS:
        raise RuntimeError(f"torch.linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)")
    if B.dim() not in (A.dim(), A.dim() - 1):
        raise RuntimeError("torch.linalg.lstsq: input.dim() must be greater or equal to other.dim() and "
                           "(input.dim() - other.dim()) <= 1")
    vector = B.dim() == A.dim() - 1
    m, n = A.shape[-2:]
    if (B.shape[-1] if vector else B.shape[-2]) != m:
        raise RuntimeError(f"torch.linalg.lstsq: input.size(-2) should match other.size(-{1 if vector else 2})")
    a, b = _rhs("linalg.lstsq", A, B, vector)
    eps = np.finfo(a.dtype).eps
    rcond = eps * builtins.max(m, n) if rcond is None or rcond < 0 else rcond
    batch = a.shape[:-2]
    x = np.zeros(batch + (n, b.shape[-1]), a.dtype)
    ranks = np.zeros(batch, np.int64)
    svals = np.zeros(batch + (builtins.min(m, n),), a.dtype)
    for i, (ai, bi) in enumerate(zip(a.reshape(-1, m, n), b.reshape(-1, m, b.shape[-1]))):
        xi, _, rank, s = np.linalg.lstsq(ai, bi, rcond=rcond)
        idx = np.unravel_index(i, batch) if batch else ()
        x[idx], ranks[idx], svals[idx] = xi, rank, s
    empty = np.zeros(0, a.dtype)
    residuals = empty
    if m > n and driver != "gelsy" and (driver == "gels" or bool((ranks == n).all())):
        residuals = ((a @ x - b) ** 2).sum(-2)
        if vector:
            residuals = residuals[..., 0]
    return linalg_lstsq(_back(x[..., 0] if vector else x, A), _back(residuals, A),
                        _back(ranks if driver != "gels" else np.zeros(0, np.int64), A, _C.int64),
                        _back(svals if driver in ("gelsd", "gelss") else empty, A))


@_writes_out
def matrix_rank(A, *, atol=None, rtol=None, hermitian=False):
    _check("linalg.matrix_rank", A)
    s = np.abs(np.linalg.eigvalsh(_np(A))) if hermitian else np.linalg.svd(_np(A), compute_uv=False)
    m, n = A.shape[-2:]
    if rtol is None:
        rtol = np.finfo(s.dtype).eps * builtins.max(m, n) if atol is None else 0.0
    smax = s.max(-1, keepdims=True) if s.shape[-1] else np.zeros(s.shape[:-1] + (1,), s.dtype)
    return _back((s > np.maximum(atol or 0.0, rtol * smax)).sum(-1), A, _C.int64)


def matrix_power(A, n):
    _check("linalg.matrix_power", A, square=True)
    try:
        return _back(np.linalg.matrix_power(_np(A), n), A)
    except np.linalg.LinAlgError:
        raise _singular("linalg.matrix_power", _np(A)) from None


@_writes_out
def multi_dot(tensors):
    if len(tensors) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(tensors)}")
    out = tensors[0]
    for t in tensors[1:]:
        out = out @ t
    return out


@_writes_out
def vecdot(x, y, *, dim=-1):
    return (x * y).sum(dim)


@_writes_out
def cross(input, other, *, dim=-1):
    from ._ops import cross as _cross

    return _cross(input, other, dim)


# ---- norms: candle_bind ops, so they run on the tensor's device and in its dtype ----


def _dims(dim, ndim: int) -> list:
    if dim is None:
        return list(range(ndim))
    dims = [dim] if isinstance(dim, int) else list(dim)
    for d in dims:
        if not -builtins.max(ndim, 1) <= d < builtins.max(ndim, 1):
            raise IndexError(f"Dimension out of range (expected to be in range of [{-builtins.max(ndim, 1)}, "
                             f"{builtins.max(ndim, 1) - 1}], but got {d})")
    return sorted({d % builtins.max(ndim, 1) for d in dims})


@_writes_out
def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    """(sum |x|^ord)^(1/ord) over `dim` (all dims when None); ord inf/-inf: max/min |x|, 0: count of nonzeros."""
    _need_float("linalg.vector_norm", x)
    if dtype is not None:
        x = x.to(dtype)
    out_dtype = x.dtype
    if x.dtype in (_C.float16, _C.bfloat16):  # torch accumulates half precision in float32
        x = x.float()
    scalar = x.dim() == 0
    if scalar:
        x = x.reshape(1)
    dims = [0] if scalar else _dims(dim, x.dim())
    if x.numel() == 0 and ord in (math.inf, -math.inf) and builtins.any(x.shape[d] == 0 for d in dims):
        raise RuntimeError("linalg.vector_norm cannot compute the inf norm on an empty tensor because the "
                           "operation does not have an identity")
    a = x.abs()
    if ord == math.inf:
        r = a.amax(dim=dims, keepdim=True)
    elif ord == -math.inf:
        r = a.amin(dim=dims, keepdim=True)
    elif ord == 0:
        r = (a != 0).to(x.dtype).sum(dims, keepdim=True)
    elif ord == 1:
        r = a.sum(dims, keepdim=True)
    elif ord == 2:
        r = (a * a).sum(dims, keepdim=True).sqrt()
    else:
        r = a.pow(ord).sum(dims, keepdim=True).pow(1.0 / ord)
    return (r.reshape(()) if scalar else _squeeze(r, dims, keepdim)).to(out_dtype)


def _squeeze(r, dims, keepdim):
    if keepdim:
        return r
    for d in sorted(dims, reverse=True):
        r = r.squeeze(d)
    return r


def _need_float(fn: str, x) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{fn.replace('.', '_')}(): argument 'input' (position 1) must be Tensor, not "
                        f"{builtins.type(x).__name__}")
    if not x.is_floating_point():
        raise NotImplementedError(f"{fn}: Expected a floating point or complex tensor as input. Got "
                                  f"{dtype_title(x.dtype)}")


@_writes_out
def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):
    """'fro', 'nuc', 2/-2 (largest/smallest singular value), 1/-1 (max/min column sum), inf/-inf (rows)."""
    _need_float("linalg.matrix_norm", A)
    if A.dim() < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 dimensions.")
    if ord not in ("fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf):
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    if dtype is not None:
        A = A.to(dtype)
    if not isinstance(dim, (tuple, list)) or len(dim) != 2:
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {dim}")
    d0, d1 = (_dims(d, A.dim())[0] for d in dim)
    if d0 == d1:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({dim[0]}, {dim[1]})")
    if ord == "fro":
        r = (A * A).sum([d0, d1], keepdim=True).sqrt()
    elif ord in ("nuc", 2, -2):
        moved = A.movedim((d0, d1), (-2, -1))
        s = svdvals(moved)
        s = s.sum(-1) if ord == "nuc" else s.amax(-1) if ord == 2 else s.amin(-1)
        r = s.unsqueeze(-1).unsqueeze(-1).movedim((-2, -1), (d0, d1))
    else:
        rows, cols = (d0, d1) if ord in (1, -1) else (d1, d0)  # 1: sum down columns; inf: along rows
        sums = A.abs().sum(rows, keepdim=True)
        r = sums.amax(cols, keepdim=True) if ord in (1, math.inf) else sums.amin(cols, keepdim=True)
    return _squeeze(r, [d0, d1], keepdim)


@_writes_out
def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None):
    """A vector norm over one dim (or all, when neither ord nor dim is given), a matrix norm over two."""
    _need_float("linalg.norm", A)
    if isinstance(dim, int):
        dim = (dim,)
    if dim is None and ord is not None:
        if A.dim() not in (1, 2):
            raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got "
                               f"{A.dim()}D.")
        dim = tuple(range(A.dim()))
    if dim is not None and len(dim) == 2:
        return matrix_norm(A, "fro" if ord is None else ord, dim, keepdim, dtype=dtype)
    if isinstance(ord, str):
        raise RuntimeError(f"linalg.vector_norm: Order {ord} not supported.")
    return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype)


# ---- torch's top-level (legacy) functions ----


@_writes_out
def legacy_svd(input, some=True, compute_uv=True):
    """torch.svd: returns torch.return_types.svd(U, S, V) with V, not V^H; compute_uv=False gives
    zero-filled U and V of the full shapes."""
    _check("linalg.svd", input)
    m, n = input.shape[-2:]
    if not compute_uv:
        batch = tuple(input.shape[:-2])
        s = svdvals(input)
        zeros = lambda *shape: _C.zeros(*batch, *shape, dtype=input.dtype, device=input.device)  # noqa: E731
        return _svd_tuple(zeros(m, m), s, zeros(n, n))
    u, s, vh = svd(input, full_matrices=not some)
    return _svd_tuple(u, s, vh.mT)


def legacy_qr(input, some=True, *, out=None):
    """torch.qr was removed in torch 2.x: the same error torch gives."""
    raise RuntimeError(
        "This function was deprecated since version 1.9 and is now removed. `torch.qr` is deprecated in favor of "
        "`torch.linalg.qr` and the boolean parameter `some` has been replaced with a string parameter `mode`.\n\n"
        "Q, R = torch.qr(A) should be replaced with:\nQ, R = torch.linalg.qr(A, mode='reduced')\n\nand\n\n"
        "Q, R = torch.qr(A, some=False) should be replaced with:\nQ, R = torch.linalg.qr(A, mode='complete')\n\n"
        f"Since `some` was set to {some}, use mode='{'reduced' if some else 'complete'}'.")


def legacy_cholesky(input, upper=False, *, out=None):
    """torch.cholesky was removed in torch 2.x: the same error torch gives."""
    raise RuntimeError(
        "This function was deprecated since version 1.9 and is now removed. `torch.cholesky` is deprecated in favor "
        "of `torch.linalg.cholesky`.\nL = torch.cholesky(A) should be replaced with:\nL = torch.linalg.cholesky(A)\n"
        "U = torch.cholesky(A, upper=True) should be replaced with:\nU = torch.linalg.cholesky(A).mH")


def pinverse(input, rcond=1e-15):
    return pinv(input, rtol=rcond)


def _approximate_basis(A, q, niter, M):
    """Q with q orthonormal columns such that Q Q^H (A - M) approximates A - M (Halko et al. 2009,
    algorithm 4.4, as torch._lowrank)."""
    R = _C.randn(A.shape[-1], q, dtype=A.dtype, device=A.device)
    X = A @ R if M is None else A @ R - M @ R
    Q = qr(X).Q
    for _ in range(niter):
        X = A.mT @ Q if M is None else A.mT @ Q - M.mT @ Q
        Q = qr(X).Q
        X = A @ Q if M is None else A @ Q - M @ Q
        Q = qr(X).Q
    return Q


def svd_lowrank(A, q=6, niter=2, M=None):
    """A randomized (U, S, V) with A - M ~ U diag(S) V^T (Halko et al. 2009, algorithm 5.1). The
    random projection comes from candle_bind's generator, so the factors match torch's only up to
    the approximation, not bit for bit."""
    q = 6 if q is None else q
    niter = 2 if niter is None else niter
    if not A.is_floating_point():
        A = A.float()
    m, n = A.shape[-2:]
    if M is not None:
        M = M.broadcast_to(A.shape)
    if m < n:
        A = A.mT
        M = None if M is None else M.mT
    Q = _approximate_basis(A, q, niter, M)
    B = Q.mT @ A if M is None else Q.mT @ A - Q.mT @ M
    U, S, Vh = svd(B, full_matrices=False)
    U, V = Q @ U, Vh.mT
    return (V, S, U) if m < n else (U, S, V)


def pca_lowrank(A, q=None, center=True, niter=2):
    m, n = A.shape[-2:]
    if q is None:
        q = builtins.min(6, m, n)
    elif not 0 <= q <= builtins.min(m, n):
        raise ValueError(f"q(={q}) must be non-negative integer and not greater than min(m, n)={builtins.min(m, n)}")
    if not niter >= 0:
        raise ValueError(f"niter(={niter}) must be non-negative integer")
    if not center:
        return svd_lowrank(A, q, niter=niter)
    return svd_lowrank(A - A.mean(dim=(-2,), keepdim=True), q, niter=niter)


# torch.<name> (and Tensor.<name>) served from this module
TOP_LEVEL = {"svd": legacy_svd, "qr": legacy_qr, "det": det, "logdet": logdet, "slogdet": slogdet, "inverse": inv,
             "pinverse": pinverse, "svd_lowrank": svd_lowrank, "pca_lowrank": pca_lowrank, "matrix_power": matrix_power,
             "cholesky": legacy_cholesky}
