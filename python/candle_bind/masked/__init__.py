"""torch.masked: reductions and normalizations over the elements a boolean `mask` keeps.

Strided tensors only, as torch.masked's dense path (torch/masked/_ops.py): the mask broadcasts to the
input, masked-out elements take the reduction's identity (0 for sum, 1 for prod, -inf / the dtype's
minimum for amax, ...) and the plain torch op runs on the result. mean/var/std divide by the count of
kept elements, so fully masked-out slices give nan. MaskedTensor (torch.masked.MaskedTensor) is not
provided.
"""

from __future__ import annotations

import builtins
import math

from .. import _C

__all__ = [
    "amax", "amin", "argmax", "argmin", "cumprod", "cumsum", "log_softmax", "logaddexp", "logsumexp", "mean",
    "median", "norm", "normalize", "prod", "softmax", "softmin", "std", "sum", "var",
]

_INT_TO_LONG = (_C.uint8, _C.bool, _C.int8, _C.int16, _C.int32)


def _is_float(t) -> bool:
    return t.dtype.is_floating_point


def _is_int(dtype) -> bool:
    return not dtype.is_floating_point and not dtype.is_complex and dtype != _C.bool


def _reduction_identity(op_name: str, input, *args):
    """The scalar that leaves the reduction unchanged (torch.masked._ops._reduction_identity); None if none."""
    import candle_bind as torch

    dtype = input.dtype
    if op_name in ("sum", "cumsum"):
        return torch.tensor(0, dtype=dtype)
    if op_name in ("prod", "cumprod"):
        return torch.tensor(1, dtype=dtype)
    if op_name in ("amax", "argmax", "logaddexp", "logsumexp"):
        if dtype.is_floating_point:
            return torch.tensor(-math.inf, dtype=dtype)
        if _is_int(dtype):
            return torch.tensor(torch.iinfo(dtype).min, dtype=dtype)
    elif op_name in ("amin", "argmin"):
        if dtype.is_floating_point:
            return torch.tensor(math.inf, dtype=dtype)
        if _is_int(dtype):
            return torch.tensor(torch.iinfo(dtype).max, dtype=dtype)
    elif op_name in ("mean", "var", "std"):
        return None  # depends on the data: fully masked-out slices come out nan
    elif op_name == "norm":
        ord = args[0] if args else 2
        if ord == -math.inf:
            if not dtype.is_floating_point:
                raise AssertionError(f"input must be floating point, got {dtype}")
            return torch.tensor(math.inf, dtype=dtype)
        return torch.tensor(0, dtype=dtype)
    elif op_name == "median":  # nan: the nanmedian below skips it
        return torch.tensor(math.nan, dtype=dtype if dtype.is_floating_point else _C.float32)
    raise NotImplementedError(f"identity of {op_name} on {dtype} input")


def _canonical_dim(dim, ndim: int) -> tuple:
    """dim as a sorted tuple of non-negative dims (None and () mean all of them)."""
    if dim == () or dim is None:
        return tuple(range(ndim))
    ndim = builtins.max(ndim, 1)
    dims: list = []
    for d in ((dim,) if isinstance(dim, int) else dim):
        if d in dims:
            raise RuntimeError(f"dim={d} appears multiple times in the list of dims")
        if d >= ndim or d < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}], but got {d})")
        dims.append(d % ndim)
    return tuple(sorted(dims))


def _dims(dim_: tuple):
    # A 0-d input canonicalizes to (): reduce "everything" (torch's dim=() rule).
    return dim_ if dim_ else None


def _input_mask(input, mask):
    """The mask as a bool tensor of the input's shape."""
    if mask is None:
        raise ValueError("_input_mask requires explicit mask")
    if tuple(mask.shape) != tuple(input.shape):
        if mask.dim() > input.dim():
            raise IndexError("_input_mask expected broadcastable mask (got mask dimensionality higher than of the input)")
        mask = mask.broadcast_to(tuple(input.shape))
    return mask.to(_C.bool)


def _combine(op_name: str, input, mask, *args):
    """The input with masked-out elements replaced by the identity of op_name."""
    if mask is None:
        return input
    return _C.where(_input_mask(input, mask), input, _reduction_identity(op_name, input, *args))


def _upcast(x):
    # torch's CPU kernels accumulate float16/bfloat16 in float32; ours would round every step.
    return x.float() if x.dtype in (_C.float16, _C.bfloat16) else x


def _widened(input, dtype):
    if dtype is None:
        return _C.int64 if input.dtype in _INT_TO_LONG else input.dtype
    return dtype


def sum(input, dim=None, *, keepdim=False, dtype=None, mask=None):  # noqa: A001
    dtype = _widened(input, dtype)
    dim_ = _canonical_dim(dim, input.dim())
    return _combine("sum", input, mask).sum(_dims(dim_), bool(keepdim), dtype=dtype)


def prod(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    dtype = _widened(input, dtype)
    dim_ = _canonical_dim(dim, input.dim())
    result = _combine("prod", input, mask).to(dtype)
    if not dim_:
        return result.prod()
    for d in reversed(dim_):
        result = result.prod(d, keepdim=bool(keepdim))
    return result


def cumsum(input, dim, *, dtype=None, mask=None):
    dtype = input.dtype if dtype is None else dtype
    dim_ = _canonical_dim(dim, input.dim())[0]
    return _combine("sum", input, mask).cumsum(dim_, dtype=dtype).to(dtype)


def cumprod(input, dim, *, dtype=None, mask=None):
    dtype = input.dtype if dtype is None else dtype
    dim_ = _canonical_dim(dim, input.dim())[0]
    return _combine("prod", input, mask).cumprod(dim_, dtype=dtype).to(dtype)


def amax(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    dtype = input.dtype if dtype is None else dtype
    x = _combine("amax", input, mask)
    return x.amax(_canonical_dim(dim, x.dim()), bool(keepdim)).to(dtype)


def amin(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    dtype = input.dtype if dtype is None else dtype
    x = _combine("amin", input, mask)
    return x.amin(_canonical_dim(dim, x.dim()), bool(keepdim)).to(dtype)


def argmax(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    dtype = input.dtype if dtype is None else dtype
    return _combine("argmax", input, mask).argmax(dim, bool(keepdim)).to(dtype)


def argmin(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    dtype = input.dtype if dtype is None else dtype
    return _combine("argmin", input, mask).argmin(dim, bool(keepdim)).to(dtype)


def mean(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    source = "Optional"
    if dtype is None:
        dtype, source = input.dtype, "Input"
    if not (dtype.is_floating_point or dtype.is_complex):
        raise ValueError(f"mean(): Could not infer output dtype. {source} dtype must be either "
                         f"a floating point or complex dtype. Got: {dtype}")
    if mask is None:
        count = sum(_C.ones(tuple(input.shape), dtype=_C.int64), dim, keepdim=keepdim)
        total = sum(input, dim, keepdim=keepdim, dtype=dtype)
    else:
        inmask = _input_mask(input, mask)
        count = sum(inmask, dim, keepdim=keepdim)
        total = sum(input, dim, keepdim=keepdim, dtype=dtype, mask=inmask)
    return total / count


def _nanmedian(x, dim: int, keepdim: bool):
    """The lower median of the non-nan values along dim (nan where all are nan), as torch.nanmedian."""
    if x.dim() == 0:
        return x.clone()
    n = (~x.isnan()).sum(dim, keepdim=True)  # nan sorts last, so the kept values lead each row
    pos = ((n - 1).clamp_min(0)) // 2
    picked = x.sort(dim).values.gather(dim, pos)
    picked = _C.where(n > 0, picked, _C.full_like(picked, math.nan))
    return picked if keepdim else picked.squeeze(dim)


def median(input, dim=-1, *, keepdim=False, dtype=None, mask=None):
    dtype = input.dtype if dtype is None else dtype
    dim_ = _canonical_dim(dim, input.dim())[0]
    is_float = input.dtype.is_floating_point
    if not is_float:
        input = input.to(_C.float32)
    output = _nanmedian(_combine("median", input, mask), dim_, keepdim)
    if is_float:
        return output
    if output.isnan().any().item():
        raise ValueError("masked median expects no fully masked out rows if dtype is not floating point")
    return output.to(dtype)


def logsumexp(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    dtype = input.dtype if dtype is None else dtype
    dim_ = _canonical_dim(dim, input.dim())
    x = _upcast(_combine("logsumexp", input, mask))
    return x.logsumexp(dim_ if dim_ else (), keepdim=keepdim).to(dtype)


def logaddexp(input, other, *, dtype=None, input_mask=None, other_mask=None):
    dtype = input.dtype if dtype is None else dtype
    x, y = _combine("logaddexp", input, input_mask), _combine("logaddexp", other, other_mask)
    return _upcast(x).logaddexp(_upcast(y)).to(dtype)


def norm(input, ord=2.0, dim=None, *, keepdim=False, dtype=None, mask=None):
    from ..linalg import vector_norm

    dtype = input.dtype if dtype is None else dtype
    x = _combine("norm", input, mask, ord)
    return vector_norm(x, ord, _dims(_canonical_dim(dim, input.dim())), bool(keepdim), dtype=dtype)


def _std_var(input, dim, unbiased, *, correction_opt, keepdim, dtype, mask, take_sqrt):
    if unbiased is not None and correction_opt is not None:
        raise AssertionError("Only one of unbiased and correction may be given")
    correction = 1.0
    if unbiased is not None:
        correction = 1.0 if unbiased else 0.0
    if correction_opt is not None:
        correction = float(correction_opt)
    if dtype is None:
        dtype = input.dtype
        if not (dtype.is_floating_point or dtype.is_complex):
            dtype = _C.float32
    compute_dtype = dtype if (dtype.is_floating_point or dtype.is_complex) else _C.float32
    if mask is None:
        inmask = None
        count = sum(_C.ones(tuple(input.shape), dtype=_C.int64), dim, keepdim=True)
    else:
        inmask = _input_mask(input, mask)
        count = sum(inmask, dim, keepdim=True)
    sample_mean = sum(input, dim, keepdim=True, dtype=dtype, mask=inmask) / count
    x = input - sample_mean
    total = sum(x * x, dim, keepdim=keepdim, dtype=compute_dtype, mask=inmask)
    if not keepdim:
        count = count.reshape(tuple(total.shape))
    if correction != 0:
        count = (count.to(compute_dtype) - correction).clamp_min(0)
    output = (total / count).to(dtype)
    return output.sqrt() if take_sqrt else output


def _real_only(name, input):
    if input.is_complex():
        raise NotImplementedError(f"torch.masked.{name} is not supported for complex tensors by candle_bind yet")


def var(input, dim=None, unbiased=None, *, correction=None, keepdim=False, dtype=None, mask=None):
    _real_only("var", input)
    return _std_var(input, dim, unbiased, correction_opt=correction, keepdim=keepdim, dtype=dtype, mask=mask,
                    take_sqrt=False)


def std(input, dim=None, unbiased=None, *, correction=None, keepdim=False, dtype=None, mask=None):
    _real_only("std", input)
    return _std_var(input, dim, unbiased, correction_opt=correction, keepdim=keepdim, dtype=dtype, mask=mask,
                    take_sqrt=True)


def softmax(input, dim, *, dtype=None, mask=None):
    from ..nn import functional as F

    dtype = input.dtype if dtype is None else dtype
    return F.softmax(_combine("amax", input, mask), _canonical_dim(dim, input.dim())[0], dtype=dtype)


def log_softmax(input, dim, *, dtype=None, mask=None):
    from ..nn import functional as F

    dtype = input.dtype if dtype is None else dtype
    x = _combine("amax", input, mask).to(dtype)
    return F.log_softmax(_upcast(x), _canonical_dim(dim, input.dim())[0]).to(dtype)


def softmin(input, dim, *, dtype=None, mask=None):
    from ..nn import functional as F

    dtype = input.dtype if dtype is None else dtype
    return F.softmin(_combine("amin", input, mask), _canonical_dim(dim, input.dim())[0], dtype=dtype)


def normalize(input, ord, dim, *, eps=1e-12, dtype=None, mask=None):
    dtype = input.dtype if dtype is None else dtype
    x = _combine("sum", input, mask)
    nrm = norm(input, ord, dim, keepdim=True, dtype=dtype, mask=mask)
    return x / nrm.clamp_min(eps)
