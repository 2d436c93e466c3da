"""torch's reductions and order statistics composed from sum/sort/amax: histc, aminmax, std_mean/var_mean,
nanmean, median, quantile, msort, unique_consecutive. A family module (see _OP_FAMILIES).
"""

from __future__ import annotations

import builtins
import math

from . import _C
from ._C import Tensor
from . import return_types
from ._ops import _dim, _write_out
from ._tensor import need_float


def histc(input, bins=100, min=0, max=0, *, out=None):  # noqa: A002 - torch's names
    """Counts of the values in `bins` equal-width bins over [min, max] (the data's range when both are
    0); values outside are dropped, `max` itself falls in the last bin. Float input, float counts."""
    need_float(input, "histogram_cpu")
    x = input.reshape(-1)
    lo, hi = float(min), float(max)
    if lo == hi and x.numel():
        lo, hi = x.min().item(), x.max().item()
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if lo > hi:
        raise RuntimeError("torch.histc: max must be larger than min")
    # torch's kernel: edges and bin position in the input's dtype, (x - lo) * bins / (hi - lo) truncated
    lo_t, hi_t = x.new_tensor(lo), x.new_tensor(hi)
    x = x[(x >= lo_t) & (x <= hi_t)]
    idx = ((x - lo_t) * bins / (hi_t - lo_t)).long().clamp(0, bins - 1)
    return _write_out(idx.bincount(minlength=bins).to(input.dtype), out)


def aminmax(input, *, dim=None, keepdim=False):
    if dim is None:
        lo, hi = input.amin(), input.amax()
        if keepdim:
            lo, hi = lo.reshape(*[1] * input.dim()), hi.reshape(*[1] * input.dim())
    else:
        lo, hi = input.amin(dim, keepdim=keepdim), input.amax(dim, keepdim=keepdim)
    return return_types.aminmax(lo, hi)


def _with_mean(spread, input, dim, correction, keepdim, unbiased):
    if isinstance(dim, bool):  # torch's (input, unbiased) overload
        dim, unbiased = None, dim
    if unbiased is not None:
        correction = 1 if unbiased else 0
    if dim is None:
        mean = input.mean()
        mean = mean.reshape(*[1] * input.dim()) if keepdim else mean
    else:
        mean = input.mean(dim, keepdim=keepdim)
    return spread(dim, correction=correction, keepdim=keepdim), mean


def std_mean(input, dim=None, *, correction=1, keepdim=False, unbiased=None):
    return _with_mean(input.std, input, dim, correction, keepdim, unbiased)


def var_mean(input, dim=None, *, correction=1, keepdim=False, unbiased=None):
    return _with_mean(input.var, input, dim, correction, keepdim, unbiased)


def nanmean(input, dim=None, keepdim=False, *, dtype=None):
    keep = ~input.isnan()
    total = input.nansum(dim, keepdim=keepdim) if dim is not None else input.nansum()
    count = keep.sum(dim, keepdim=keepdim) if dim is not None else keep.sum()
    return total / count


def median(input, dim=None, keepdim=False):
    """The lower of the two middle values (torch's median); with dim, (values, indices)."""
    if dim is None:
        flat = input.reshape(-1)
        if flat.numel() == 0:
            return _C.full((), float("nan"), dtype=input.dtype)
        return flat.sort().values[(flat.numel() - 1) // 2]
    if input.dim() == 0:  # a 0-d tensor is its own median, at index 0
        _dim(dim, 0)
        return return_types.median(input.clone(), _C.zeros((), dtype=_C.int64))
    n = input.shape[dim]
    ordered = input.sort(dim)
    k = (n - 1) // 2
    values = ordered.values.narrow(dim, k, 1)
    indices = ordered.indices.narrow(dim, k, 1)
    if not keepdim:
        values, indices = values.squeeze(dim), indices.squeeze(dim)
    return return_types.median(values, indices)


def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    """q-th quantiles (float or 1-D tensor of floats in [0, 1]) with torch's interpolation modes."""
    if input.dtype not in (_C.float32, _C.float64):
        raise RuntimeError("quantile() input tensor must be either float or double dtype")
    if isinstance(q, Tensor) and q.dtype != input.dtype:
        raise RuntimeError("quantile() q tensor must be same dtype as the input tensor")
    scalar_q = not isinstance(q, Tensor)
    qs = [float(q)] if scalar_q else [float(v) for v in q.reshape(-1).tolist()]
    if builtins.any(not 0 <= v <= 1 for v in qs):
        raise RuntimeError("quantile() q values must be in the range [0, 1]")
    x = input.reshape(-1) if dim is None or input.dim() == 0 else input
    d = 0 if dim is None else _dim(dim, input.dim())
    ordered = x.sort(d).values
    n = ordered.shape[d]
    outs = []
    for v in qs:
        pos = v * (n - 1)
        lo, hi = math.floor(pos), math.ceil(pos)
        a, b = ordered.narrow(d, lo, 1), ordered.narrow(d, hi, 1)
        frac_ = pos - lo
        if interpolation == "linear":
            r = a + (b - a) * frac_
        elif interpolation == "lower":
            r = a
        elif interpolation == "higher":
            r = b
        elif interpolation == "midpoint":
            r = (a + b) / 2
        elif interpolation == "nearest":
            r = ordered.narrow(d, round(pos) if abs(frac_ - 0.5) > 1e-12 else (lo if lo % 2 == 0 else hi), 1)
        else:
            raise RuntimeError(f"quantile() interpolation must be one of linear, lower, higher, midpoint or nearest. Got {interpolation}")
        if dim is None or input.dim() == 0:
            r = r.reshape(*([1] * input.dim())) if keepdim else r.reshape(())
        elif not keepdim:
            r = r.squeeze(d)
        outs.append(r)
    return outs[0] if scalar_q else _C.stack(outs, 0)


def msort(input):
    """The values sorted along dim 0."""
    return input.sort(0).values


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    for name, v in (("return_inverse", return_inverse), ("return_counts", return_counts)):
        if not isinstance(v, bool):
            raise TypeError(f"unique_consecutive(): argument '{name}' must be bool, not {builtins.type(v).__name__}")
    if dim is not None and (not isinstance(dim, int) or isinstance(dim, bool)):
        raise TypeError(f"unique_consecutive(): argument 'dim' must be int, not {builtins.type(dim).__name__}")
    if dim is not None:
        return _unique_consecutive_dim(input, return_inverse, return_counts, dim)
    flat = input.reshape(-1)
    n = flat.numel()
    if n == 0:
        starts = _C.zeros(0, dtype=_C.bool)
    else:
        starts = _C.cat([_C.ones(1, dtype=_C.bool), flat[1:] != flat[:-1]])
    values = flat[starts]
    out = [values]
    if return_inverse:
        out.append((starts.long().cumsum(0) - 1).reshape(*input.shape))
    if return_counts:
        pos = starts.nonzero().reshape(-1)
        out.append(_C.cat([pos[1:], _C.tensor([n])]) - pos)
    return out[0] if len(out) == 1 else tuple(out)


def _unique_consecutive_dim(input, return_inverse, return_counts, dim):
    """Runs of equal slices along `dim` collapsed to one (NaN != NaN, as torch compares)."""
    if input.dim() == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    d = _dim(dim, input.dim())
    n = input.shape[d]
    if n and input.numel() == 0:
        raise RuntimeError("There are 0 sized dimensions, and they aren't selected, so unique cannot be applied")
    if n == 0:
        starts = _C.zeros(0, dtype=_C.bool)
    else:
        rows = input.movedim(d, 0).reshape(n, -1)
        starts = _C.cat([_C.ones(1, dtype=_C.bool), (rows[1:] != rows[:-1]).any(1)])
    out = [input.index_select(d, starts.nonzero().reshape(-1))]
    if return_inverse:
        out.append(starts.long().cumsum(0) - 1)
    if return_counts:
        pos = starts.nonzero().reshape(-1)
        out.append(_C.cat([pos[1:], _C.tensor([n])]) - pos)
    return out[0] if len(out) == 1 else tuple(out)


# Tensor methods torch has under the same names (set where the Rust Tensor has none).
METHODS = (
    "aminmax", "nanmean", "median", "quantile", "unique_consecutive", "histc", "msort",
)
FUNCTIONS = (
    "aminmax", "nanmean", "median", "quantile", "unique_consecutive", "histc", "msort", "std_mean",
    "var_mean",
)
