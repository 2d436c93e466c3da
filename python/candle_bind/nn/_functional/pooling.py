"""Pooling functionals: max/avg pools, adaptive pools and lp pools over the Rust pooling kernel."""

from __future__ import annotations

import builtins

from ... import _C
from ..._opmath import rounding_dtype
from ..._tensor import dtype_title, not_implemented
# Functionals call each other as F.x, looked up at call time as the one-file module's globals were:
# a monkeypatched nn.functional.x reaches these callers too.
from .. import functional as F
from ._utils import _ntuple


def _pool_out(length: int, k: int, s: int, p: int, d: int, ceil_mode: bool) -> int:
    """torch's pooling_output_shape: floor (or ceil) windows, the last one starting inside the input
    or its left padding."""
    out = (length + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (out - 1) * s >= length + p:
        out -= 1
    return out


def _pool_windows(length: int, k: int, s: int, p: int, d: int, ceil_mode: bool):
    out = _pool_out(length, k, s, p, d, ceil_mode)
    wins = []
    for i in range(out):
        start = i * s - p
        padded = min(start + k, length + p) - start
        wins.append((start, k, padded))
    return wins


def _pool(input, kind, n, kernel_size, stride, padding, dilation, ceil_mode, count_include_pad=True, divisor_override=None, name="pool", indices=True):
    if input.dim() not in (n + 1, n + 2):
        raise RuntimeError(f"{name}: Expected {n + 1}D or {n + 2}D input, but got input of size: {list(input.shape)}")
    k = _ntuple(kernel_size, n, "kernel_size", name)
    s = _ntuple(stride if stride is not None and stride != [] and stride != () else kernel_size, n, "stride", name)
    p, d = _ntuple(padding, n, "padding", name), _ntuple(dilation, n, "dilation", name)
    if builtins.any(v <= 0 for v in k) or builtins.any(v <= 0 for v in s):
        raise RuntimeError(f"{name}: kernel_size and stride must be greater than zero")
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    spatial = input.shape[-n:]
    for i in range(n):
        if p[i] > (d[i] * (k[i] - 1) + 1) // 2 and p[i] > k[i] // 2:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got pad={p[i]}, "
                               f"kernel_size={k[i]} and dilation={d[i]}")
    outs = [_pool_out(spatial[i], k[i], s[i], p[i], d[i], ceil_mode) for i in range(n)]
    if builtins.any(o < 1 for o in outs):
        chans = input.shape[-n - 1]
        if n == 1 and kind == "max":
            raise RuntimeError(f"max_pool1d() Invalid computed output size: {outs[0]}")
        if n == 3 and kind == "avg" and builtins.any(spatial[i] + 2 * p[i] < k[i] for i in range(3)):
            raise RuntimeError(f"input image (T: {spatial[0]} H: {spatial[1]} W: {spatial[2]}) smaller than kernel size "
                               f"(kT: {k[0]} kH: {k[1]} kW: {k[2]})")
        ins, os_ = ([chans, 1, spatial[0]], [chans, 1, outs[0]]) if n == 1 else ([chans, *spatial], [chans, *outs])
        raise RuntimeError(f"Given input size: ({'x'.join(map(str, ins))}). Calculated output size: "
                           f"({'x'.join(map(str, os_))}). Output size is too small")
    wins = [_pool_windows(spatial[i], k[i], s[i], p[i], d[i], ceil_mode) for i in range(n)]
    if kind == "avg" and input.dtype == _C.int64:  # torch's integer mean: exact sum, quotient truncated
        out = _C.pool(input.double(), kind, wins, list(d), count_include_pad, divisor_override, indices)
        return (out[0].trunc().long(), *out[1:])
    return _C.pool(input, kind, wins, list(d), count_include_pad, divisor_override, indices)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    out, idx = _pool(input, "max", 1, kernel_size, stride, padding, dilation, ceil_mode, name="max_pool1d",
                     indices=return_indices)
    return (out, idx) if return_indices else out


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    out, idx = _pool(input, "max", 2, kernel_size, stride, padding, dilation, ceil_mode, name="max_pool2d",
                     indices=return_indices)
    return (out, idx) if return_indices else out


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    out, idx = _pool(input, "max", 3, kernel_size, stride, padding, dilation, ceil_mode, name="max_pool3d",
                     indices=return_indices)
    return (out, idx) if return_indices else out


max_pool1d_with_indices = lambda *a, **k: F.max_pool1d(*a, **{**k, "return_indices": True})  # noqa: E731
max_pool2d_with_indices = lambda *a, **k: F.max_pool2d(*a, **{**k, "return_indices": True})  # noqa: E731
max_pool3d_with_indices = lambda *a, **k: F.max_pool3d(*a, **{**k, "return_indices": True})  # noqa: E731


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    return _pool(input, "avg", 1, kernel_size, stride, padding, 1, ceil_mode, count_include_pad, None, "avg_pool1d")[0]


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None):
    return _pool(input, "avg", 2, kernel_size, stride, padding, 1, ceil_mode, count_include_pad, divisor_override, "avg_pool2d")[0]


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None):
    return _pool(input, "avg", 3, kernel_size, stride, padding, 1, ceil_mode, count_include_pad, divisor_override, "avg_pool3d")[0]


def _adaptive(input, kind, n, output_size, name):
    if input.dim() not in (n + 1, n + 2):
        raise RuntimeError(f"{name}: Expected {n + 1}D or {n + 2}D tensor, but got {list(input.shape)}")
    spatial = input.shape[-n:]
    if not isinstance(output_size, (list, tuple)):
        if output_size is None or isinstance(output_size, float) or not hasattr(output_size, "__index__"):
            if n == 1:
                raise TypeError(f"{name}(): argument 'output_size' (position 2) must be tuple of ints, not "
                                f"{type(output_size).__name__}")
            raise TypeError(f"object of type '{type(output_size).__name__}' has no len()")
        sizes = (output_size.__index__(),) * n
    else:
        sizes = tuple(spatial[i] if v is None else v for i, v in enumerate(_ntuple_none(output_size, n)))
    if kind == "avg" and builtins.all(o == 1 for o in sizes):
        # Global average pooling (every CNN head): a mean over the spatial dims, as torch.
        if not input.is_floating_point() and input.numel():
            raise NotImplementedError("mean(): could not infer output dtype. Input dtype must be either a floating "
                                      f"point or complex dtype. Got: {dtype_title(input.dtype)}")
        return input.mean(tuple(range(-n, 0)), keepdim=True), None
    if not input.is_floating_point() and input.numel():  # (torch's kernels never see an empty input)
        raise not_implemented(f"adaptive_{kind}_pool{max(n, 2)}d" + ("_cpu" if n == 3 else ""), input.dtype)
    if builtins.any(o < 0 for o in sizes):
        if kind == "max":
            shape = list(input.shape[:-n]) + ([1] if n == 1 else []) + list(sizes)
            raise RuntimeError(f"Trying to create tensor with negative dimension {min(sizes)}: {shape}")
        raise RuntimeError(f"adaptive_avg_pool{max(n, 2)}d: elements of output_size must be greater than or equal to 0 "
                           f"but received {{{', '.join(map(str, sizes))}}}")
    for i, L in enumerate(spatial):
        if L == 0:
            shape = list(input.shape)
            if n == 1 and kind == "avg":
                shape.insert(-1, 1)
            fn = f"adaptive_{kind}_pool{max(n, 2) if kind == 'avg' else n}d"
            raise RuntimeError(f"{fn}(): Expected input to have non-zero size for non-batch dimensions, but input "
                               f"has sizes {shape} with dimension {len(shape) - n + i} being empty")
    if input.numel() == 0 or builtins.any(o == 0 for o in sizes):
        out_shape = list(input.shape[:-n]) + list(sizes)
        return (_C.empty(*out_shape, dtype=input.dtype, device=input.device),
                _C.empty(*out_shape, dtype=_C.int64, device=input.device))
    wins = []
    for L, o in zip(spatial, sizes):
        ws = []
        for i in range(o):
            start = (i * L) // o
            end = -(-((i + 1) * L) // o)
            ws.append((start, end - start, end - start))
        wins.append(ws)
    # half inputs (also those an opmath caller, interpolate's area mode, has put in float32) as torch's kernel
    half = input.dtype if input.dtype in (_C.float16, _C.bfloat16) else rounding_dtype()
    if kind == "avg" and n == 3 and half is not None:
        return _adaptive_avg3d_half(input.to(half), wins).to(input.dtype), None
    return _C.pool(input, kind, wins, [1] * n, False, None)


def _adaptive_avg3d_half(input, wins):
    """torch's half adaptive_avg_pool3d kernel: the window summed in the input's dtype element by element
    (d, h, w order), then divided by kd, kh and kw in turn, each step rounded."""
    import itertools

    taps = []  # per dim: (index tensor per window offset, mask per offset, window sizes)
    for ws in wins:
        kmax = builtins.max(k for _, k, _ in ws)
        idx = [_C.tensor([builtins.min(s + j, s + k - 1) for s, k, _ in ws], device=input.device) for j in range(kmax)]
        mask = [_C.tensor([j < k for _, k, _ in ws], device=input.device) for j in range(kmax)]
        taps.append((idx, mask, _C.tensor([float(k) for _, k, _ in ws], dtype=input.dtype, device=input.device)))
    nd = input.dim()
    shapes = [[-1 if a == i else 1 for a in range(3)] for i in range(3)]
    total = None
    for a, b, c in itertools.product(*(range(len(t[0])) for t in taps)):
        v = input.index_select(nd - 3, taps[0][0][a]).index_select(nd - 2, taps[1][0][b])
        v = v.index_select(nd - 1, taps[2][0][c])
        m = taps[0][1][a].reshape(*shapes[0]) & taps[1][1][b].reshape(*shapes[1]) & taps[2][1][c].reshape(*shapes[2])
        v = v.masked_fill(~m, 0.0)
        total = v if total is None else total + v
    for i in range(3):
        total = total / taps[i][2].reshape(*shapes[i])
    return total


def _ntuple_none(x, n):
    if len(x) == 1:
        return tuple(x) * n
    if len(x) != n:
        raise ValueError(f"output_size must have {n} elements, got {x}")
    return tuple(x)


def adaptive_avg_pool1d(input, output_size):
    return _adaptive(input, "avg", 1, output_size, "adaptive_avg_pool1d")[0]


def adaptive_avg_pool2d(input, output_size):
    if ((type(output_size) is int and output_size == 1) or (type(output_size) in (tuple, list) and tuple(output_size) == (1, 1))) \
            and input.dim() in (3, 4) and input.is_floating_point():
        return input.mean((-2, -1), keepdim=True)  # every CNN head: as `_adaptive` below, without its checks
    return _adaptive(input, "avg", 2, output_size, "adaptive_avg_pool2d")[0]


def adaptive_avg_pool3d(input, output_size):
    return _adaptive(input, "avg", 3, output_size, "adaptive_avg_pool3d")[0]


def adaptive_max_pool1d(input, output_size, return_indices=False):
    out, idx = _adaptive(input, "max", 1, output_size, "adaptive_max_pool1d")
    return (out, idx) if return_indices else out


def adaptive_max_pool2d(input, output_size, return_indices=False):
    out, idx = _adaptive(input, "max", 2, output_size, "adaptive_max_pool2d")
    return (out, idx) if return_indices else out


def adaptive_max_pool3d(input, output_size, return_indices=False):
    out, idx = _adaptive(input, "max", 3, output_size, "adaptive_max_pool3d")
    return (out, idx) if return_indices else out


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    kw, kh = _ntuple(kernel_size, 2)
    out = F.avg_pool2d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return (out.sign() * F.relu(out.abs())).mul(kw * kh).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    out = F.avg_pool1d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return (out.sign() * F.relu(out.abs())).mul(kernel_size).pow(1.0 / norm_type)


# ------------------------------------------------------------------------------------------ max unpooling


def _unpool_output_size(input, kernel_size, stride, padding, output_size):
    n = len(kernel_size)
    default = [(input.shape[-n + d] - 1) * stride[d] + kernel_size[d] - 2 * padding[d] for d in range(n)]
    if output_size is None:
        ret = default
    else:
        output_size = list(output_size)
        if len(output_size) == n + 2:
            output_size = output_size[2:]
        if len(output_size) != n:
            raise ValueError(f"output_size should be a sequence containing {n} or {n + 2} elements, but it has a "
                             f"length of '{len(output_size)}'")
        for d in range(n):
            lo, hi = default[d] - stride[d], default[d] + stride[d]
            if not lo < output_size[d] < hi:
                raise ValueError(f'invalid output_size "{output_size}" (dim {d} must be between {lo} and {hi})')
        ret = output_size
    for d in range(n):
        if ret[d] < 0:
            raise ValueError(f"max_unpooling: output_size must contain non-negative spatial dimensions, but got "
                             f"output_size[{d}]={ret[d]}")
    return list(ret)


def _max_unpool(input, indices, n, kernel_size, stride, padding, output_size):
    k = _ntuple(kernel_size, n, "kernel_size")
    s = _ntuple(stride, n, "stride") if stride is not None else k
    p = _ntuple(padding, n, "padding")
    size = _unpool_output_size(input, k, s, p, output_size)
    name = f"max_unpooling{builtins.max(n, 2)}d"
    if indices.dtype != _C.int64:
        raise RuntimeError(f"elements in indices should be type int64 but got: {dtype_title(indices.dtype)}")
    nd = builtins.max(n, 2)  # 1-d unpooling is torch's 2-d kernel over a trailing unit dim
    if input.dim() + nd - n not in (nd + 1, nd + 2):
        raise RuntimeError(f"Input to {name} should be a {nd + 1}d or {nd + 2}d Tensor, but got a tensor with "
                           f"{input.dim() + nd - n} dimensions.")
    if tuple(input.shape) != tuple(indices.shape):
        raise RuntimeError(f"Expected shape of indices to be same as that of the input tensor ({list(input.shape)}) "
                           f"but got indices tensor with shape: {list(indices.shape)}")
    if n == 3 and builtins.any(v <= 0 for v in s):
        raise RuntimeError(f"strides should be greater than zero, but got stride: {list(s)}")
    if n == 3 and builtins.any(v < 0 for v in p):
        raise RuntimeError(f"padding should be non-negative, but got padding: {list(p)}")
    for i in range(1, input.dim()):
        if input.shape[i] <= 0:
            raise RuntimeError(f"{name}_forward_out_cpu(): Expected input to have non-zero size for non-batch "
                               f"dimensions, but got {list(input.shape)} with dimension {i} being empty.")
    lead = tuple(input.shape[:-n])
    planes = 1
    for v in lead:
        planes *= v
    total = 1
    for v in size:
        total *= v
    idx = indices.reshape(planes, -1)
    if idx.numel() and ((idx < 0).any().item() or (idx >= total).any().item()):
        bad = idx[(idx < 0) | (idx >= total)][0].item()
        raise RuntimeError(f"Found an invalid max index: {bad} (output volumes are of size "
                           f"{'x'.join(map(str, size))}")
    out = _C.zeros(planes, total, dtype=input.dtype)
    if idx.numel():
        out = out.scatter(1, idx, input.reshape(planes, -1))
    return out.reshape(*lead, *size)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    return _max_unpool(input, indices, 1, kernel_size, stride, padding, output_size)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    return _max_unpool(input, indices, 2, kernel_size, stride, padding, output_size)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    return _max_unpool(input, indices, 3, kernel_size, stride, padding, output_size)


# --------------------------------------------------------------------------------- fractional max pooling


def _fractional_starts(samples, in_size, out_size, k):
    """torch's generate_intervals for all planes at once: (P,) samples -> (P, out_size) window starts,
    computed in the samples' dtype as torch's kernel does."""
    P = samples.shape[0]
    starts = _C.zeros(P, out_size, dtype=_C.int64)
    if out_size > 1:
        alpha = _C.tensor(float(in_size - k), dtype=samples.dtype) / _C.tensor(float(out_size - 1), dtype=samples.dtype)
        i = _C.arange(out_size).to(samples.dtype).reshape(1, out_size)
        u = samples.reshape(P, 1)
        starts = ((i + u) * alpha).to(_C.int64) - (u * alpha).to(_C.int64)
    if out_size > 0:
        starts[:, out_size - 1] = in_size - k
    return starts


def _fractional_max_pool(input, n, kernel_size, output_size, output_ratio, return_indices, _random_samples):
    name = f"fractional_max_pool{n}d"
    if output_size is None and output_ratio is None:
        raise ValueError(f"{name} requires specifying either an output_size or an output_ratio")
    if output_size is None:
        if len(output_ratio) > n:  # torch takes len() of it too: a bare float is a TypeError
            raise ValueError(f"{name} requires output_ratio to either be a single Int or tuple of Ints.")
        ratio = tuple(output_ratio) * (n if len(output_ratio) == 1 else 1)
        output_size = [int(input.shape[-n + d] * ratio[d]) for d in range(n)]
    k = _ntuple(kernel_size, n, "kernel_size", name)
    o = _ntuple(output_size, n, "output_size", name)
    if input.dim() not in (n + 1, n + 2):
        raise RuntimeError(f"{name}(): Expected {n + 1}D or {n + 2}D tensor, but got: {list(input.shape)}")
    for i in range(1, input.dim()):
        if input.shape[i] <= 0:
            raise RuntimeError(f"{name}(): Expected input to have non-zero size for non-batch dimensions, but got"
                               f"{list(input.shape)} with dimension {i} being empty.")
    spatial = tuple(input.shape[-n:])
    labels = ("time", "height", "width")[3 - n:]
    for d in range(n):
        if o[d] + k[d] - 1 > spatial[d]:
            raise RuntimeError(f"{name}(): pool {labels[d]} {k[d]} too large relative to input {labels[d]} {spatial[d]}")
    batch = 1 if input.dim() == n + 1 else input.shape[0]
    chans = input.shape[-n - 1]
    if _random_samples is None:
        _random_samples = _C.rand(batch, chans, n, dtype=input.dtype)
    if _random_samples.dtype != input.dtype:
        raise RuntimeError("Expect _random_samples to have the same dtype as input")
    if _random_samples.dim() != 3:
        raise RuntimeError(f"Expect _random_samples to be 3D tensor, got: {_random_samples.dim()}D")
    if _random_samples.shape[0] < batch:
        raise RuntimeError("Expect _random_samples.size(0) no less than input batch size.")
    if _random_samples.shape[1] != chans:
        raise RuntimeError("Expect _random_samples.size(1) equals to input channel size.")
    if _random_samples.shape[2] != n:
        raise RuntimeError(f"Expect _random_samples.size(2) equals to {n}; got: {_random_samples.shape[2]}.")
    P = batch * chans
    if P == 0:  # an empty batch: nothing to pool
        out = _C.zeros(*input.shape[:-n], *o, dtype=input.dtype)
        return (out, _C.zeros(*input.shape[:-n], *o, dtype=_C.int64)) if return_indices else out
    samples = _random_samples[:batch].reshape(P, n)
    # torch's sample order: (w, h) in 2-d, (t, h, w) in 3-d.
    order = (1, 0) if n == 2 else (0, 1, 2)
    strides = [1] * n
    for d in range(n - 2, -1, -1):
        strides[d] = strides[d + 1] * spatial[d + 1]
    flat = None
    for d in range(n):
        starts = _fractional_starts(samples[:, order[d]], spatial[d], o[d], k[d])
        win = (starts.unsqueeze(-1) + _C.arange(k[d]).reshape(1, 1, k[d])) * strides[d]  # (P, o_d, k_d)
        shape = [P] + [1] * (2 * n)
        shape[1 + d], shape[1 + n + d] = o[d], k[d]
        win = win.reshape(*shape)
        flat = win if flat is None else flat + win
    n_out, n_win = 1, 1
    for d in range(n):
        n_out, n_win = n_out * o[d], n_win * k[d]
    flat = flat.expand(P, *o, *k).reshape(P, n_out * n_win)
    vals = input.reshape(P, -1).gather(1, flat).reshape(P, n_out, n_win)
    best = vals.argmax(-1, keepdim=True)
    out = vals.gather(2, best).reshape(*input.shape[:-n], *o)
    idx = flat.reshape(P, n_out, n_win).gather(2, best).reshape(*input.shape[:-n], *o)
    return (out, idx) if return_indices else out


def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                          _random_samples=None):
    return _fractional_max_pool(input, 2, kernel_size, output_size, output_ratio, return_indices, _random_samples)


def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                          _random_samples=None):
    return _fractional_max_pool(input, 3, kernel_size, output_size, output_ratio, return_indices, _random_samples)


def fractional_max_pool2d_with_indices(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                                       _random_samples=None):
    return _fractional_max_pool(input, 2, kernel_size, output_size, output_ratio, True, _random_samples)


def fractional_max_pool3d_with_indices(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                                       _random_samples=None):
    return _fractional_max_pool(input, 3, kernel_size, output_size, output_ratio, True, _random_samples)
