"""Reducing scatters and flat-index writes: scatter_reduce, index_reduce, masked_scatter, put, nonzero_static.
A family module (see _OP_FAMILIES).

sum and mean are index_add, prod is Tensor.scatter(reduce="multiply"). amax/amin sort the (position, value)
pairs by position and reduce each run pairwise in log2(longest run) vectorised steps (~25x torch's time: a
Rust scatter-max/min kernel would want to replace it where it is hot, graph networks' scatter_max).
"""

from __future__ import annotations

from . import _C
from ._C import Tensor
from ._ops import _dim

_REDUCES = ("sum", "prod", "mean", "amax", "amin")


def _dtype_name(dtype) -> str:
    return repr(dtype).rsplit(".", 1)[-1]


def _check_scatter(fn, input, dim, index, src):
    if index.dtype not in (_C.int64, _C.int32):
        raise RuntimeError(f"{fn}(): Expected dtype int64 for index")
    if not isinstance(src, Tensor):
        raise TypeError(f"{fn}(): argument 'src' must be Tensor, not {type(src).__name__}")
    if src.dtype != input.dtype:
        raise RuntimeError(f"{fn}(): Expected self.dtype to be equal to src.dtype")
    n = input.dim()
    if index.numel() and not max(index.dim(), 1) == max(n, 1) == max(src.dim(), 1):
        raise RuntimeError("Index tensor must have the same number of dimensions as self tensor")
    d = _dim(dim, n)
    for i in range(index.dim()):
        if index.numel() and (index.shape[i] > (src.shape[i] if src.dim() else 1)
                              or i != d and index.shape[i] > (input.shape[i] if n else 1)):
            raise RuntimeError(f"Size does not match at dimension {i} expected index {list(index.shape)} to be "
                               f"smaller than self {list(input.shape)} apart from dimension {d} and to be "
                               f"smaller size than src {list(src.shape)}")
    return d


def _targets(input, dim, index):
    """The flat positions in `input` that `index` scatters to along `dim` (a gather of the positions)."""
    pos = _C.arange(input.numel()).reshape(*input.shape)
    if input.dim() == 0:
        pos, index = pos.reshape(1), index.reshape(-1)
    size = input.shape[dim] if input.dim() else 1
    if index.numel() and (int(index.max().item()) >= size or int(index.min().item()) < -size):
        bad = int(index.max().item()) if int(index.max().item()) >= size else int(index.min().item())
        raise RuntimeError(f"index {bad} is out of bounds for dimension {dim} with size {size}")
    return pos.gather(dim, index.remainder(size) if size else index).reshape(-1)


def scatter_reduce(input, dim, index, src, reduce, *, include_self=True, out=None):
    reduce = {"max": "amax", "min": "amin"}.get(reduce, reduce)  # aten takes the old names too
    if reduce not in _REDUCES:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    d = _check_scatter("scatter_reduce", input, dim, index, src)
    if index.numel() == 0:
        return input.clone()
    shape = tuple(input.shape)
    index = index.long()
    pos = _targets(input, d, index)
    if src.dim():
        vals = src[tuple(slice(0, s) for s in index.shape)].reshape(-1)
    else:
        vals = src.reshape(-1)
    flat = input.reshape(-1).clone()
    hit = _C.zeros(flat.numel(), dtype=_C.bool)
    hit[pos] = True
    if reduce in ("sum", "mean"):
        wide = flat.dtype == _C.bool
        acc = flat.long() if wide else flat
        base = acc if include_self else acc.masked_fill(hit, 0)
        if flat.dtype in (_C.float16, _C.bfloat16):  # summed in float32, rounded once (torch's opmath)
            total = base.float().index_add(0, pos, vals.float()).to(flat.dtype)
        else:
            total = base.index_add(0, pos, vals.long() if wide else vals)
        if reduce == "sum":
            result = total.bool() if wide else total
        else:
            count = _C.zeros(flat.numel(), dtype=_C.int64).index_add(0, pos, _C.ones(pos.numel(), dtype=_C.int64))
            count = (count + int(include_self)).clamp(min=1)
            if flat.is_floating_point():
                result = (total / count.to(total.dtype)).to(flat.dtype)
            else:
                result = total.div(count, rounding_mode="floor").to(flat.dtype)
        return result.reshape(*shape) if shape else result.reshape(())
    wide = flat.dtype == _C.bool  # products and extremes of bools as uint8
    if reduce == "prod":  # Tensor.scatter's multiply
        acc = flat.to(_C.uint8) if wide else flat
        acc = acc if include_self else acc.masked_fill(hit, 1)
        result = acc.scatter(0, pos, vals.to(acc.dtype), reduce="multiply").to(flat.dtype)
        return result.reshape(*shape) if shape else result.reshape(())
    up, gv = _segment_reduce(pos, vals.to(_C.uint8) if wide else vals, reduce)
    if wide:
        gv = gv.bool()
    if include_self:
        cur = flat[up]
        gv = cur * gv if reduce == "prod" else cur.maximum(gv) if reduce == "amax" else cur.minimum(gv)
    result = flat
    result[up] = gv.to(flat.dtype)
    return result.reshape(*shape) if shape else result.reshape(())


def _segment_reduce(pos, vals, reduce):
    """(positions, reduced value per position) for the (position, value) pairs: the pairs sorted by position,
    then each run reduced pairwise in log2(longest run) vectorised steps."""
    order = pos.argsort(stable=True)
    sp, sv = pos[order], vals[order]
    n = sp.numel()
    start = _C.ones(n, dtype=_C.bool)
    if n > 1:
        start = _C.cat([start[:1], sp[1:] != sp[:-1]])
    firsts = start.nonzero().reshape(-1)
    group = start.long().cumsum(0) - 1
    sizes = _C.cat([firsts[1:], _C.full((1,), n, dtype=_C.int64)]) - firsts
    rank = _C.arange(n) - firsts[group]
    size = sizes[group]
    longest = int(sizes.max().item())
    step = 1
    while step < longest:
        at = ((rank.remainder(2 * step) == 0) & (rank + step < size)).nonzero().reshape(-1)
        a, b = sv[at], sv[at + step]
        sv[at] = a * b if reduce == "prod" else a.maximum(b) if reduce == "amax" else a.minimum(b)
        step *= 2
    return sp[firsts], sv[firsts]


def scatter_reduce_(self, dim, index, src, reduce, *, include_self=True):
    self._assign_result(scatter_reduce(self, dim, index, src, reduce, include_self=include_self), "scatter_reduce_")
    return self


def index_reduce(input, dim, index, source, reduce, *, include_self=True):
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got {reduce}.")
    if index.dim() > 1:
        raise IndexError("index_reduce_(): Index is supposed to be a vector")
    if index.dtype not in (_C.int64, _C.int32):
        raise TypeError("index_reduce_(): Expected dtype int32/int64 for index")
    if source.dtype != input.dtype:
        raise RuntimeError("index_reduce_(): self and source expected to have the same dtype")
    n = input.dim()
    d = _dim(dim, n)
    if source.dim() != n and source.dim() and n:
        raise IndexError("index_reduce_(): Source/destination tensor must have same number of dimensions")
    k = source.shape[d] if source.dim() else 1
    if index.numel() != k:
        raise IndexError(f"index_reduce_(): Number of indices ({index.numel()}) should be equal to "
                         f"source.size(dim) ({k})")
    if not n:
        return scatter_reduce(input, 0, index.long().reshape(()), source.reshape(()), reduce, include_self=include_self)
    shape = [1] * n
    shape[d] = -1
    full = index.long().reshape(*shape).expand(*source.shape).contiguous()
    return scatter_reduce(input, d, full, source, reduce, include_self=include_self)


def index_reduce_(self, dim, index, source, reduce, *, include_self=True):
    self._assign_result(index_reduce(self, dim, index, source, reduce, include_self=include_self), "index_reduce_")
    return self


def masked_scatter(input, mask, source):
    if mask.dtype != _C.bool:
        raise RuntimeError(f"masked_scatter_: expected BoolTensor for mask, got {_dtype_name(mask.dtype)}")
    if source.dtype != input.dtype:
        raise RuntimeError(f"masked_scatter: expected self and source to have same dtypes but got "
                           f"{_dtype_name(input.dtype)} and {_dtype_name(source.dtype)}")
    from . import broadcast_shapes

    shape = tuple(broadcast_shapes(input.shape, mask.shape))
    out = input.expand(*shape).reshape(-1).clone() if shape else input.reshape(-1).clone()
    where = mask.expand(*shape).reshape(-1).nonzero().reshape(-1) if shape else mask.reshape(-1).nonzero().reshape(-1)
    k = where.numel()
    if k > source.numel():
        raise RuntimeError("masked_scatter: expected source to have at least as many elements as ones in mask")
    if k:
        out[where] = source.reshape(-1)[:k]
    return out.reshape(*shape) if shape else out.reshape(())


def masked_scatter_(self, mask, source):
    from . import broadcast_shapes

    if tuple(broadcast_shapes(self.shape, mask.shape)) != tuple(self.shape):
        raise RuntimeError(f"masked_scatter_: mask of shape {list(mask.shape)} cannot be broadcast to "
                           f"{list(self.shape)}")
    self._assign_result(masked_scatter(self, mask, source), "masked_scatter_")
    return self


def put(input, index, source, accumulate=False):
    if index.dtype != _C.int64:
        raise RuntimeError(f"put_(): Expected a long tensor for index, but got {_dtype_name(index.dtype)}")
    if source.dtype != input.dtype:
        raise RuntimeError(f"put_(): self and source expected to have the same dtype, but got "
                           f"self.dtype = {_dtype_name(input.dtype)} and source.dtype = {_dtype_name(source.dtype)}")
    if index.numel() != source.numel():
        raise IndexError(f"put_(): Expected source and index to have the same number of elements, but got "
                           f"source.numel() = {source.numel()}, index.numel() = {index.numel()}")
    n = input.numel()
    out = input.reshape(-1).clone()
    if index.numel():
        lo, hi = int(index.min().item()), int(index.max().item())
        if lo < -n or hi >= n:
            raise IndexError(f"out of range: tried to access index {hi if hi >= n else lo} on a tensor of {n} elements.")
        at, vals = index.reshape(-1).remainder(n), source.reshape(-1)
        if accumulate:
            out = out.index_add(0, at, vals) if out.dtype != _C.bool else out.long().index_add(0, at, vals.long()).bool()
        else:
            out[at] = vals
    return out.reshape(*input.shape)


def put_(self, index, source, accumulate=False):
    self._assign_result(put(self, index, source, accumulate), "put_")
    return self


def nonzero_static(input, *, size, fill_value=-1):
    if size < 0:
        raise RuntimeError(f"nonzero_static: 'size' must be an non-negative integer, but got size: {size}")
    nz = input.nonzero()
    n = nz.shape[0]
    if n >= size:
        return nz[:size]
    return _C.cat([nz, _C.full((size - n, nz.shape[1]), fill_value, dtype=_C.int64)])


FUNCTIONS = ("scatter_reduce", "index_reduce", "masked_scatter", "put", "nonzero_static")
METHODS = ("scatter_reduce", "scatter_reduce_", "index_reduce", "index_reduce_", "masked_scatter",
           "masked_scatter_", "put", "put_", "nonzero_static")
INPLACE = ()
