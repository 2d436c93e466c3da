"""torch's statistics over existing tensor ops: cov, corrcoef, cummax/cummin, mode, nanmedian, nanquantile,
histogram/histogramdd. A family module (see _OP_FAMILIES). Running scans (cummax, a run's start) are
Hillis-Steele prefix scans: log2(n) elementwise steps over the whole tensor, no per-element Python.
"""

from __future__ import annotations

import builtins
import math

from . import _C
from . import return_types
from ._C import Tensor


def _wrap(dim: int, ndim: int, name: str) -> int:
    n = builtins.max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    return dim % n


def _is_int(t) -> bool:
    return not t.is_floating_point() and t.dtype != _C.bool and not getattr(t, "is_complex", lambda: False)()


# ---------------------------------------------------------------------------------------------- cov


def _check_cov_weights(name, w, integral, n):
    """torch's checks of cov's frequency (integral) and analytic (floating) weights."""
    if w.dim() > 1:
        raise RuntimeError(f"cov(): expected {name} to have one or fewer dimensions but got {name} with "
                           f"{w.dim()} dimensions")
    if integral and not _is_int(w) or not integral and not w.is_floating_point():
        kind = "integral" if integral else "floating point"
        raise RuntimeError(f"cov(): expected {name} to have {kind} dtype but got {name} with {w.dtype} dtype")
    if w.numel() != n:
        raise RuntimeError(f"cov(): expected {name} to have the same numel as there are observations in the "
                           f"input but got {w.numel()} != {n}")
    if n and w.min().item() < 0:
        raise RuntimeError(f"cov(): {name} cannot be negative")


def cov(input, *, correction=1, fweights=None, aweights=None):
    """Covariance of the rows (variables) over the columns (observations), torch's Correlation.cpp."""
    if input.dim() > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an input with "
                           f"{input.dim()} dimensions")
    if input.dtype == _C.bool:
        raise NotImplementedError("cov(): bool dtype is not supported for input")
    x = input.reshape(1, -1) if input.dim() < 2 else input
    n = x.shape[1]
    w = None
    for name, weights, integral in (("fweights", fweights, True), ("aweights", aweights, False)):
        if weights is not None:
            _check_cov_weights(name, weights, integral, n)
            w = weights if w is None else w * weights
    if w is None:
        w_sum = _C.tensor(n, dtype=_C.int64)
    else:
        w = w.reshape(-1)
        w_sum = w.sum()
        if w_sum.item() == 0:
            raise RuntimeError("cov(): weights sum to zero, can't be normalized")
    avg = (x if w is None else x * w).sum(1) / w_sum
    if w is not None and correction != 0 and aweights is not None:
        norm = w_sum - correction * (w * aweights.reshape(-1)).sum() / w_sum
    else:
        norm = w_sum - correction
    if norm.item() <= 0:
        import warnings

        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less than the number of "
                      "observations.", UserWarning, stacklevel=2)
        norm = norm * 0
    x = x - avg.unsqueeze(1)
    c = x.matmul((x if w is None else x * w).t())
    return (c / norm).squeeze()


def corrcoef(input):
    if input.dim() > 2:
        raise RuntimeError(f"corrcoef(): expected input to have two or fewer dimensions but got an input with "
                           f"{input.dim()} dimensions")
    c = cov(input)
    if c.dim() == 0:
        return c / c  # nan for a zero, inf or nan variance, else 1
    std = c.diagonal().sqrt()
    c = c / std.reshape(-1, 1)
    c = c / std.reshape(1, -1)
    return c.clamp(-1, 1)


# ----------------------------------------------------------------------------------- running scans


def _scan_max(x, dim: int):
    """Inclusive running maximum along dim (NaN propagates, as torch.maximum)."""
    n, s = x.shape[dim], 1
    while s < n:
        shifted = _C.cat([x.narrow(dim, 0, s), x.narrow(dim, 0, n - s)], dim)
        x = x.maximum(shifted)
        s *= 2
    return x


def _cum_extreme(input, dim, largest: bool, name: str):
    d = _wrap(dim, input.dim(), name)
    x = input if input.dim() else input.reshape(1)
    if x.numel() == 0:
        return getattr(return_types, name)(input.clone(), _C.zeros(input.shape, dtype=_C.int64))
    work = x.to(_C.uint8) if x.dtype == _C.bool else x
    values = _scan_max(work, d) if largest else -_scan_max(-work, d) if work.is_floating_point() or work.dtype in (
        _C.int64, _C.int32, _C.int16, _C.int8) else None
    if values is None:  # uint8: min through the complement, no negation wrap-around
        values = 255 - _scan_max(255 - work, d)
    shape = [1] * x.dim()
    shape[d] = x.shape[d]
    pos = _C.arange(x.shape[d], dtype=_C.int64).reshape(shape).expand(x.shape)
    # ties and NaNs move the index to the newest position (torch's `x >= out` / isnan(x) update)
    hit = (work == values) | (work != work) if work.is_floating_point() else work == values
    indices = _scan_max(_C.where(hit, pos, _C.zeros_like(pos)), d)
    values = values.to(input.dtype)
    if input.dim() == 0:
        values, indices = values.reshape(()), indices.reshape(())
    return getattr(return_types, name)(values, indices)


def cummax(input, dim):
    return _cum_extreme(input, dim, True, "cummax")


def cummin(input, dim):
    return _cum_extreme(input, dim, False, "cummin")


# --------------------------------------------------------------------------------- order statistics


def mode(input, dim=-1, keepdim=False):
    """The most frequent value along dim (the smallest of equally frequent ones) and its last index."""
    d = _wrap(dim, input.dim(), "mode")
    x = input if input.dim() else input.reshape(1)
    n = x.shape[d]
    if n == 0:
        raise IndexError("mode(): Expected reduction dim " + str(d) + " to have non-zero size.")
    s = x.to(_C.uint8).sort(d, stable=True) if x.dtype == _C.bool else x.sort(d, stable=True)
    v, p = s.values, s.indices
    shape = [1] * x.dim()
    shape[d] = n
    pos = _C.arange(n, dtype=_C.int64).reshape(shape).expand(x.shape)
    if n > 1:
        differ = v.narrow(d, 1, n - 1) != v.narrow(d, 0, n - 1)
        true = _C.ones([*x.shape[:d], 1, *x.shape[d + 1:]], dtype=_C.bool)
        starts = _C.cat([true, differ], d)
        ends = _C.cat([differ, true], d)
    else:
        starts = ends = _C.ones(x.shape, dtype=_C.bool)
    run_start = _scan_max(_C.where(starts, pos, _C.zeros_like(pos)), d)
    freq = _C.where(ends, pos - run_start + 1, _C.zeros_like(pos))
    best = freq.argmax(d, keepdim=True)
    values = v.gather(d, best).to(input.dtype)
    indices = p.gather(d, best)
    if not keepdim or input.dim() == 0:
        values, indices = values.squeeze(d), indices.squeeze(d)
    if input.dim() == 0:
        values, indices = values.reshape(()), indices.reshape(())
    return return_types.mode(values, indices)


def nanmedian(input, dim=None, keepdim=False):
    """The lower median of the non-NaN values (NaN where all are NaN); with dim, (values, indices)."""
    if dim is None:
        flat = input.reshape(-1)
        if flat.numel() == 0:
            return _C.full((), float("nan"), dtype=input.dtype)
        return nanmedian(flat, 0).values
    d = _wrap(dim, input.dim(), "nanmedian")
    x = input if input.dim() else input.reshape(1)
    if x.shape[d] == 0:
        raise IndexError(f"nanmedian(): Expected reduction dim {d} to have non-zero size.")
    s = x.sort(d, stable=True)  # NaNs sort last
    valid = (x == x).sum(d, keepdim=True) if x.is_floating_point() else _C.full_like(
        x.narrow(d, 0, 1), x.shape[d], dtype=_C.int64)
    k = ((valid - 1) // 2).clamp(min=0)  # C++ truncation: an all-NaN row reads position 0
    values, indices = s.values.gather(d, k), s.indices.gather(d, k)
    if not keepdim or input.dim() == 0:
        values, indices = values.squeeze(d), indices.squeeze(d)
    if input.dim() == 0:
        values, indices = values.reshape(()), indices.reshape(())
    return return_types.nanmedian(values, indices)


def _nanquantile(input, q, dim, keepdim, interpolation, name: str):
    """torch's quantile_impl ignoring NaNs: sort, ranks q * (count - 1), gather below/above, lerp."""
    if input.dtype not in (_C.float32, _C.float64):
        raise RuntimeError(f"{name}() input tensor must be either float or double dtype")
    if isinstance(q, Tensor):
        if q.dim() > 1:
            raise RuntimeError(f"{name}() q must be a scalar or 1D tensor")
        if q.dtype != input.dtype:
            raise RuntimeError(f"{name}() q tensor must be same dtype as the input tensor")
        qs = [float(v) for v in q.reshape(-1).tolist()]
    else:
        qs = [float(q)]
    if input.numel() == 0 and dim is None:
        raise RuntimeError(f"{name}() input tensor must be non-empty")
    if builtins.any(not 0 <= v <= 1 for v in qs):
        raise RuntimeError(f"{name}() q values must be in the range [0, 1]")
    if interpolation not in ("linear", "lower", "higher", "midpoint", "nearest"):
        raise RuntimeError(f"{name}() interpolation must be one of linear, lower, higher, midpoint or nearest. "
                           f"Got {interpolation}")
    if dim is None:
        x, d = input.reshape(-1), 0
        out_shape = [1] * input.dim() if keepdim else []
    else:
        d = _wrap(dim, input.dim(), name)
        x = input if input.dim() else input.reshape(1)
        out_shape = list(x.shape)
        if keepdim:
            out_shape[d] = 1
        else:
            del out_shape[d]
        if input.dim() == 0:
            out_shape = []
    x = x.movedim(d, -1) if x.dim() > 1 else x
    if x.shape[-1] == 0:
        raise RuntimeError(f"{name}() input tensor must be non-empty")
    srt = x.sort(-1).values
    # NaNs sort last: the ranks run over the leading non-NaN values; an all-NaN row reads its first (NaN)
    last = (~srt.isnan()).sum(-1, keepdim=True).to(srt.dtype) - 1
    outs = []
    for v in qs:
        ranks = (last * v).clamp(min=0)
        if interpolation == "lower":
            ranks = ranks.floor()
        elif interpolation == "higher":
            ranks = ranks.ceil()
        elif interpolation == "nearest":
            ranks = ranks.round()
        below = ranks.long()
        r = srt.gather(-1, below)
        if interpolation in ("linear", "midpoint"):
            above = srt.gather(-1, ranks.ceil().long())
            weight = ranks - below.to(srt.dtype) if interpolation == "linear" else _C.full_like(ranks, 0.5)
            r = r.lerp(above, weight)
        outs.append(r.reshape(out_shape))
    return outs[0] if not isinstance(q, Tensor) else _C.stack(outs, 0)


def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
    return _nanquantile(input, q, dim, keepdim, interpolation, "nanquantile")


# ---------------------------------------------------------------------------------------- histograms


def _outer_edges(x, rng, D: int):
    """[leftmost, rightmost] per dimension, as torch's select_outer_bin_edges."""
    if rng is not None:
        rng = [float(v) for v in rng]
        if len(rng) != 2 * D:
            raise RuntimeError(f"torch.histogramdd: for a {D}-dimensional histogram range should have {2 * D} "
                               f"elements, but got {len(rng)}")
        pairs = [(rng[2 * i], rng[2 * i + 1]) for i in range(D)]
    elif x.shape[0]:
        lo, hi = x.amin(0).tolist(), x.amax(0).tolist()
        pairs = list(zip(lo, hi))
    else:
        pairs = [(0.0, 1.0)] * D
    out = []
    for i, (lo, hi) in enumerate(pairs):
        if not (math.isfinite(lo) and math.isfinite(hi)):
            raise ValueError(f"torch.histogramdd: dimension {i}'s range [{lo}, {hi}] is not finite")
        if lo > hi:
            raise ValueError(f"torch.histogramdd: min should not exceed max, but got min {lo} max {hi} for "
                             f"dimension {i}")
        if lo == hi:
            lo, hi = lo - 0.5, hi + 0.5
        out.append((lo, hi))
    return out


def _histdd(x, bins, rng, weight, density, name):
    """x: (N, D) float. Returns (hist, [edges per dim])."""
    if x.dtype not in (_C.float32, _C.float64):
        raise NotImplementedError(f"\"histogramdd\" not implemented for '{str(x.dtype).split('.')[-1].capitalize()}'")
    N, D = x.shape
    if isinstance(bins, (int, builtins.bool)) or (isinstance(bins, Tensor) and bins.dim() == 0 and _is_int(bins)):
        bins = [int(bins)] * D
    if len(bins) != D:
        raise RuntimeError(f"{name}: expected {D} sequences of bin edges for each of the {D} input dimensions, "
                           f"but got {len(bins)} bin edge sequences")
    if weight is not None:
        if weight.dtype != x.dtype:
            raise RuntimeError(f"{name}: if weight tensor is provided it should have the same dtype as the input "
                               f"tensor")
        if weight.numel() != N:
            raise RuntimeError(f"{name}: if weight tensor is provided it should have the same shape as the input "
                               f"tensor excluding its innermost dimension")
    from . import linspace

    edges = []
    if builtins.all(isinstance(b, Tensor) for b in bins):
        for i, b in enumerate(bins):
            if b.dtype != x.dtype:
                raise RuntimeError(f"{name}: input tensor and bins tensors should have the same dtype, but got "
                                   f"input {x.dtype} and bins for dimension {i} {b.dtype}")
            if b.dim() != 1:
                raise RuntimeError(f"{name}: bins tensor should have one dimension, but got {b.dim()} dimensions")
            if b.numel() < 1:
                raise RuntimeError(f"{name}: bins tensor should have at least 1 element, but got {b.numel()}")
            edges.append(b.contiguous())
    else:
        counts = [int(b) for b in bins]
        for b in counts:
            if b <= 0:
                raise RuntimeError(f"{name}(): bins must be > 0, but got {b} for dimension")
        for i, (lo, hi) in enumerate(_outer_edges(x, rng, D)):
            edges.append(linspace(lo, hi, counts[i] + 1, dtype=x.dtype))
    nb = [e.numel() - 1 for e in edges]
    keep = _C.ones(N, dtype=_C.bool)
    flat = _C.zeros(N, dtype=_C.int64)
    for i, e in enumerate(edges):
        col = x[:, i]
        keep = keep & (col >= e[0]) & (col <= e[-1])
        idx = (_C.bucketize(col, e, right=True) - 1).clamp(0, builtins.max(nb[i] - 1, 0))
        flat = flat * nb[i] + idx
    total = math.prod(nb)
    w = _C.ones(N, dtype=x.dtype) if weight is None else weight.reshape(-1)
    w = _C.where(keep, w, _C.zeros_like(w))
    hist = _C.zeros(total, dtype=x.dtype)
    if N and total:
        hist = hist.index_add(0, flat.clamp(0, total - 1), w)
    hist = hist.reshape(nb)
    if density:
        hist = hist / hist.sum()
        for i, e in enumerate(edges):
            shape = [1] * D
            shape[i] = nb[i]
            hist = hist / (e[1:] - e[:-1]).reshape(shape)
    return hist, edges


def histogram(input, bins=100, *, range=None, weight=None, density=False, out=None):  # noqa: A002 - torch's names
    """Counts (or densities) of input in bins (a count over `range` or the data's, or a tensor of edges)."""
    if input.dtype not in (_C.float32, _C.float64):
        raise NotImplementedError(f"\"histogramdd\" not implemented for '{str(input.dtype).split('.')[-1].capitalize()}'")
    if isinstance(bins, Tensor) and bins.dim() == 0 and _is_int(bins):
        bins = int(bins.item())
    hist, edges = _histdd(input.reshape(-1, 1), bins if isinstance(bins, int) else [bins], range, weight, density,
                          "torch.histogram")
    return return_types.histogram(hist, edges[0])


def histogramdd(input, bins=10, *, range=None, weight=None, density=False):  # noqa: A002
    """The D-dimensional histogram of the rows of input (..., D)."""
    if input.dim() < 1:
        raise RuntimeError("torch.histogramdd: input tensor should have at least 1 dimension, but got 0")
    D = input.shape[-1]
    x = input.reshape(-1, D)
    if weight is not None and tuple(weight.shape) != tuple(input.shape[:-1]):
        raise RuntimeError("torch.histogramdd: if weight tensor is provided it should have the same shape as the "
                           "input tensor excluding its innermost dimension")
    if isinstance(bins, Tensor) and bins.dim() == 0:
        bins = int(bins.item())
    hist, edges = _histdd(x, bins, range, weight, density, "torch.histogramdd")
    return return_types.histogramdd(hist, tuple(edges))


FUNCTIONS = ("cov", "corrcoef", "cummax", "cummin", "mode", "nanmedian", "nanquantile", "histogram", "histogramdd")
METHODS = ("cov", "corrcoef", "cummax", "cummin", "mode", "nanmedian", "nanquantile", "histogram")
INPLACE = ("cumsum", "cumprod")
