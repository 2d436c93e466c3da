"""torch functions composed of other ops that belong to no family module, and the helpers the family modules
share (`out=`, dim and argument checks, broadcast_tensors). The op families live beside it, each registered in
`_OP_FAMILIES` (__init__.py): _blas_ops (addmm, baddbmm, tensordot, cdist, ...), _layout_ops (movedim, diagonal,
tensor_split, ...), _math_ops (atan2, hypot, logaddexp, ...), _reduce_ops (median, quantile, histc, ...).
"""

from __future__ import annotations

import builtins
import importlib

from . import _C
from ._C import Tensor
from ._tensor import _advanced_put, _index_put_error

# ---- helpers the op families share ----


def _write_out(result, out):
    """torch's `out=` for the functions written here: the result copied into `out` (same shape and
    dtype, as the native ops' `out=` checks), which is what the call returns."""
    if out is None:
        return result
    if tuple(out.shape) != tuple(result.shape):
        raise RuntimeError(f"out= tensor has shape {list(out.shape)}, but the result has shape "
                           f"{list(result.shape)} (candle_bind does not resize out= tensors)")
    if out.dtype != result.dtype:
        raise RuntimeError(f"Expected out tensor to have dtype {result.dtype}, but got {out.dtype} instead")
    return out.copy_(result)


def _dim(d, n: int) -> int:
    """A dim in range for rank n (0-dim tensors take -1 and 0), else torch's IndexError."""
    lo, hi = (-n, n - 1) if n else (-1, 0)
    if not lo <= d <= hi:
        raise IndexError(f"Dimension out of range (expected to be in range of [{lo}, {hi}], but got {d})")
    return d % n if n else 0


def _need_tensor(fn: str, arg: str, pos: int, x) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{fn}(): argument '{arg}' (position {pos}) must be Tensor, not {builtins.type(x).__name__}")


def _int_list(fn: str, arg: str, pos: int, xs) -> list:
    if not isinstance(xs, (list, tuple)):
        raise TypeError(f"{fn}(): argument '{arg}' (position {pos}) must be tuple of ints, not {builtins.type(xs).__name__}")
    for i, x in enumerate(xs):
        if not isinstance(x, int) or isinstance(x, bool):
            raise TypeError(f"{fn}(): argument '{arg}' (position {pos}) must be tuple of ints, but found element of "
                            f"type {builtins.type(x).__name__} at pos {i}")
    return list(xs)


def _check_integral_scalars(tensors, **scalars) -> None:
    """torch's "For integral input tensors, argument alpha must not be a floating point number"."""
    if builtins.all(not t.is_floating_point() for t in tensors):
        for name, v in scalars.items():
            if isinstance(v, float):
                raise RuntimeError(f"For integral input tensors, argument {name} must not be a floating point number.")


def broadcast_tensors(*tensors):
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    from . import broadcast_shapes

    shape = broadcast_shapes(*(t.shape for t in tensors))
    return tuple(t.expand(*shape) for t in tensors)


# ---- comparisons and membership ----


def equal(input, other) -> bool:
    return input.shape == other.shape and bool((input == other).all().item())


def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """Whether each element occurs in test_elements (sorted lookup: n log m)."""
    if not isinstance(elements, Tensor):
        elements = _C.tensor(elements)
    if not isinstance(test_elements, Tensor):
        test_elements = _C.tensor(test_elements)
    values = test_elements.reshape(-1).sort().values
    if values.numel() == 0:
        found = _C.zeros(*elements.shape, dtype=_C.bool)
    else:
        from . import promote_types

        common = promote_types(elements.dtype, values.dtype)
        e, v = elements.to(common), values.to(common)
        pos = _C.searchsorted(v, e.reshape(-1)).clamp(max=v.numel() - 1)
        found = (v[pos] == e.reshape(-1)).reshape(*elements.shape)
    return ~found if invert else found


def is_nonzero(input) -> bool:
    if input.numel() != 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous" if input.numel()
                           else "Boolean value of Tensor with no values is ambiguous")
    return bool(input.item())


def is_complex(input) -> bool:
    return False


def can_cast(from_, to) -> bool:
    """torch's casting rule: no float→integral, no non-bool→bool."""
    def kind(d):
        return 0 if d == _C.bool else (2 if d.is_floating_point else 1)

    return kind(from_) <= kind(to)


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):  # noqa: A002
    """torch.unique: the sorted distinct values, or with `dim` the sorted distinct slices."""
    from ._tensor import unique as tensor_unique

    return tensor_unique(input, sorted, return_inverse, return_counts, dim)


def permute(input, dims):
    """torch.permute(input, dims): the dims as one sequence (Tensor.permute also takes them spread)."""
    return input.permute(*dims) if isinstance(dims, (list, tuple)) else input.permute(dims)


def arange(*args, start=None, **kwargs):
    """torch.arange, also with `start=` as a keyword (diffusers' timestep embedding:
    `arange(start=0, end=half)`); the native op takes `end=` and `step=` keywords only."""
    if start is not None:
        args = (start, *args)
    return _C.arange(*args, **kwargs)


# ---- random ----


def normal(mean, std=1.0, size=None, *, generator=None, dtype=None, device=None, out=None):
    """normal(mean, std, size) with floats, or elementwise means/stds as tensors (broadcast)."""
    from ._generator import randn

    if size is not None:
        return randn(*size, dtype=dtype, device=device, generator=generator) * std + mean
    shape = broadcast_tensors(*(t for t in (mean, std) if isinstance(t, Tensor)))[0].shape
    ref = mean if isinstance(mean, Tensor) else std
    return randn(*shape, dtype=ref.dtype, device=ref.device, generator=generator) * std + mean


def randint_like(input, low=0, high=None, *, dtype=None, device=None, **kw):
    if high is None:
        low, high = 0, low
    return _C.randint(low, high, tuple(input.shape), dtype=dtype or input.dtype, device=device)


# ---- indexing ----


def index_put_(self, indices, values, accumulate=False):
    """self[indices] = values; with accumulate, repeated positions add up (all dims indexed)."""
    indices = tuple(indices)
    if isinstance(values, Tensor) and values.dtype != self.dtype and (accumulate or _advanced_put(indices, values)):
        raise _index_put_error(self, values)
    if not accumulate:
        self[indices] = values
        return self
    # a bool mask stands for the indices of its True elements, one index tensor per masked dim
    indices = [j for t in indices for j in (t.nonzero().unbind(1) if t.dtype == _C.bool else (t,))]
    if len(indices) > self.dim() or builtins.any(t is None for t in indices):
        raise NotImplementedError("index_put_(accumulate=True) takes index tensors for the leading dims")
    idx = broadcast_tensors(*indices)
    linear = idx[0].long() % self.shape[0]
    for i, t in enumerate(idx[1:], 1):
        linear = linear * self.shape[i] + t.long() % self.shape[i]
    rest = tuple(self.shape[len(idx):])  # dims not indexed: whole slices add up
    src = values if isinstance(values, Tensor) else _C.tensor(values, dtype=self.dtype)
    src = src.to(self.dtype).expand(*linear.shape, *rest).reshape(-1, *rest)
    self.view(-1, *rest).index_add_(0, linear.reshape(-1), src)
    return self


def index_put(input, indices, values, accumulate=False):
    return index_put_(input.clone(), indices, values, accumulate)


# ---- legacy type names ----


_TYPE_NAMES = {"float32": "FloatTensor", "float64": "DoubleTensor", "float16": "HalfTensor",
               "bfloat16": "BFloat16Tensor", "int64": "LongTensor", "int32": "IntTensor", "uint8": "ByteTensor",
               "bool": "BoolTensor", "int8": "CharTensor", "int16": "ShortTensor", "uint16": "UInt16Tensor",
               "uint32": "UInt32Tensor", "uint64": "UInt64Tensor", "complex64": "ComplexFloatTensor",
               "complex128": "ComplexDoubleTensor"}


def type(self, dtype=None, non_blocking=False, **kwargs):  # noqa: A001 - torch's name
    """Tensor.type(): 'torch.FloatTensor'-style name; Tensor.type(dtype or name): a cast."""
    if dtype is None:
        name = repr(self.dtype).rsplit(".", 1)[-1]
        prefix = "torch.cuda." if self.device.type == "cuda" else "torch."
        return prefix + _TYPE_NAMES.get(name, name[:1].upper() + name[1:] + "Tensor")  # torch.Float8_e4m3fnTensor
    if isinstance(dtype, str):
        by_name = {v: k for k, v in _TYPE_NAMES.items()}
        name = dtype.rsplit(".", 1)[-1]
        if name not in by_name:
            raise ValueError(f"invalid type: '{dtype}'")
        dtype = getattr(_C, by_name[name])
    return self.to(dtype)


# Tensor methods torch has under the same names.
METHODS = ("equal", "is_nonzero", "is_complex", "index_put_", "index_put", "type")

FUNCTIONS = ("equal", "is_nonzero", "is_complex", "index_put_", "index_put", "broadcast_tensors", "isin", "can_cast",
             "normal", "randint_like", "permute", "unique", "arange")

# Names that moved from here to the family modules stay importable as `from ._ops import X`.
_MOVED_TO = ("_blas_ops", "_layout_ops", "_math_ops", "_reduce_ops")


def __getattr__(name):
    for family in _MOVED_TO:
        module = importlib.import_module(f"{__package__}.{family}")
        if name in getattr(module, "FUNCTIONS", ()) or name in getattr(module, "METHODS", ()):
            return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _to_sparse(self, *args, **kwargs):
    """Tensor.to_sparse(): torch.sparse's COO tensor (candle_bind/sparse.py, loaded on first use)."""
    from .sparse import to_sparse

    return to_sparse(self, *args, **kwargs)

def _install() -> None:
    from ._runtime import strided

    for name in METHODS:
        if not hasattr(Tensor, name):
            setattr(Tensor, name, globals()[name])
    Tensor.__contains__ = lambda self, element: bool((self == element).any().item())
    Tensor.is_sparse = property(lambda self: False)
    if not hasattr(Tensor, "is_quantized"):
        Tensor.is_quantized = property(lambda self: False)  # torchvision.ops branches on it
    Tensor.layout = property(lambda self: strided)
    Tensor.to_sparse = _to_sparse
    Tensor.to_sparse_coo = lambda self: _to_sparse(self)
    Tensor.H = property(lambda self: self.t() if self.dim() == 2 else self)
    Tensor.mH = property(lambda self: self.mT)  # real dtypes only: the adjoint is the transpose
    for name in ("svd", "qr", "det", "logdet", "slogdet", "inverse", "pinverse", "matrix_power", "cholesky"):
        if not hasattr(Tensor, name):
            setattr(Tensor, name, _linalg_method(name))


def _linalg_method(name):
    """Tensor.<name> for a torch.linalg-backed function (linalg loads numpy on first call)."""

    def method(self, *args, **kwargs):
        from .linalg import TOP_LEVEL

        return TOP_LEVEL[name](self, *args, **kwargs)

    method.__name__ = method.__qualname__ = name
    return method


_install()
