"""Pooling functionals: max/avg pools, adaptive pools and lp pools over the Rust pooling kernel."""

from __future__ import annotations

import builtins

from ... import _C
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
    return _C.pool(input, kind, wins, [1] * n, False, None)


def _ntuple_none(x, n):
    if len(x) == 1:
        return tuple(x) * n
    if len(x) != n:
        raise ValueError(f"output_size must have {n} elements, got {x}")
    return tuple(x)


def adaptive_avg_pool1d(input, output_size):
    return _adaptive(input, "avg", 1, output_size, "adaptive_avg_pool1d")[0]


def adaptive_avg_pool2d(input, output_size):
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
