"""torch.nn.functional: argument handling as torch does it, compute in Rust (`candle_bind._C`)."""

from __future__ import annotations

import builtins
import math
from typing import Optional, Sequence

from .. import _C
from .._C import Tensor
from .._tensor import dtype_cpp, dtype_title, need_float, not_implemented

__all__ = [
    "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d", "adaptive_max_pool1d", "adaptive_max_pool2d",
    "adaptive_max_pool3d", "alpha_dropout", "avg_pool1d", "avg_pool2d", "avg_pool3d", "bilinear", "celu", "channel_shuffle",
    "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "cosine_similarity", "dropout",
    "dropout1d", "dropout2d", "dropout3d", "elu", "embedding", "embedding_bag", "feature_alpha_dropout", "fold", "gelu", "glu",
    "hardshrink", "hardsigmoid", "hardswish", "hardtanh", "leaky_relu", "linear", "log_softmax", "logsigmoid", "max_pool1d",
    "max_pool2d", "max_pool3d", "mish", "normalize", "one_hot", "pad", "pairwise_distance", "pixel_shuffle", "pixel_unshuffle",
    "prelu", "relu", "relu6", "rrelu", "selu", "sigmoid", "silu", "snake", "softmax", "softmin", "softplus", "softshrink",
    "softsign", "tanh", "tanhshrink", "threshold", "unfold",
]


def _int(v, name: str, fn: str) -> int:
    if isinstance(v, float) or not hasattr(v, "__index__"):
        raise TypeError(f"{fn + '(): ' if fn else ''}argument '{name}' must be tuple of ints, not {type(v).__name__}")
    return v.__index__()


def _ntuple(x, n: int, name: str = "argument", fn: str = "") -> tuple:
    if isinstance(x, (list, tuple)):
        if len(x) == 1:
            return (_int(x[0], name, fn),) * n
        if len(x) != n:
            raise ValueError(f"{name} must be an int or a tuple of {n} ints, got {x}")
        return tuple(_int(v, name, fn) for v in x)
    return (_int(x, name, fn),) * n


# ---------------------------------------------------------------------------------------- linear
def linear(input: Tensor, weight: Tensor, bias: Optional[Tensor] = None) -> Tensor:
    """y = x Wᵀ + b (the matmul reads Wᵀ in place; the bias add runs in the result's memory)."""
    if input.dim() == 0 or weight.dim() not in (1, 2):
        raise RuntimeError(f"linear(): expected input of at least 1 dim and a 1-D or 2-D weight, got {input.dim()}-D and {weight.dim()}-D")
    if input.dtype == _C.bool and weight.dtype == _C.bool and input.numel() and weight.numel():
        raise not_implemented("addmm_impl_cpu_", input.dtype)
    out = input.matmul(weight.t()) if weight.dim() == 2 else input.matmul(weight)
    if bias is not None:
        out += bias
    return out


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Optional[Tensor] = None) -> Tensor:
    """y_k = x1ᵀ W_k x2 + b_k over the last dims."""
    named = [("input1", input1), ("input2", input2), ("weight", weight)] + ([("bias", bias)] if bias is not None else [])
    if builtins.any(t.dtype != input1.dtype for _, t in named):
        raise RuntimeError("All tensors must have the same dtype, got "
                           + ", ".join(f"{n}: {dtype_cpp(t.dtype)}" for n, t in named))
    if input1.shape[:-1] != input2.shape[:-1]:
        raise RuntimeError(f"bilinear(): input batch dimensions do not match: got {input1.shape[:-1]} and {input2.shape[:-1]}")
    lead = input1.shape[:-1]
    x1 = input1.reshape(-1, input1.shape[-1])
    x2 = input2.reshape(-1, input2.shape[-1])
    out_f, in1, in2 = weight.shape
    # (B, in1) @ (in1, out·in2) → (B, out, in2), then contract with x2.
    t = (x1 @ weight.permute(1, 0, 2).reshape(in1, out_f * in2)).reshape(-1, out_f, in2)
    out = (t * x2.unsqueeze(1)).sum(-1)
    if bias is not None:
        out = out + bias
    return out.reshape(*lead, out_f)


# ---------------------------------------------------------------------------------------- padding
def pad(input: Tensor, pad: Sequence[int], mode: str = "constant", value: Optional[float] = None) -> Tensor:
    """torch.nn.functional.pad: pairs (left, right) from the last dim backwards; negative pads crop."""
    if len(pad) % 2 != 0:
        raise RuntimeError("Padding length must be divisible by 2")
    npairs = len(pad) // 2
    if npairs > input.dim():
        raise RuntimeError("Padding length should be less than or equal to two times the input dimension "
                           f"but got padding length {len(pad)} and input of dimension {input.dim()}")
    pairs = [(int(pad[2 * i]), int(pad[2 * i + 1])) for i in range(npairs)]  # pairs[0] is the last dim
    if mode == "constant":
        fill = 0 if value is None else value
        shape = list(input.shape)
        src = [builtins.slice(None)] * input.dim()
        dst = [builtins.slice(None)] * input.dim()
        x = input
        for i, (lo, hi) in enumerate(pairs):
            d = input.dim() - 1 - i
            n = shape[d]
            new = n + lo + hi
            if new < 0:
                raise RuntimeError(f"The input size {n}, plus negative padding {lo} and {hi} resulted in a negative output size, which is invalid. Check dimension {d} of your input.")
            shape[d] = new
            # Crop for negative pads, place after the positive ones.
            s0, s1 = max(-lo, 0), n - max(-hi, 0)
            src[d] = builtins.slice(s0, max(s1, s0))
            dst[d] = builtins.slice(max(lo, 0), max(lo, 0) + max(s1 - s0, 0))
        out = _C.full(shape, fill, dtype=input.dtype, device=input.device)
        out[tuple(dst)] = x[tuple(src)]
        return out
    if mode not in ("reflect", "replicate", "circular"):
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if value is not None and value != 0:
        raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
    _check_nonconstant_pad(input, pairs, mode)
    x = input
    for i, (lo, hi) in enumerate(pairs):
        d = input.dim() - 1 - i
        n = x.shape[d]
        if mode == "reflect" and (lo >= n or hi >= n):
            raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding input dimension, but got: padding ({lo}, {hi}) at dimension {d} of input {list(input.shape)}")
        if mode == "circular" and (lo > n or hi > n):
            raise RuntimeError("Padding value causes wrapping around more than once.")
        shape = list(x.shape)
        shape[d] = n + lo + hi
        _C.reserve(shape, x.dtype)  # the size is the user's: checked before the index is built
        j = _C.arange(-lo, n + hi)
        if mode == "reflect":
            j = j.abs()
            idx = _C.where(j >= n, 2 * (n - 1) - j, j)
        elif mode == "replicate":
            idx = j.clamp(0, builtins.max(n - 1, 0))
        else:
            idx = j.remainder(builtins.max(n, 1))
        x = x.index_select(d, idx)
    return x


def _check_nonconstant_pad(input, pairs, mode):
    """torch's checks for reflect / replicate / circular padding: 1-3 padded dims on a (batched)
    input of that rank, non-empty non-batch dims and outputs of at least 1 (reflect, replicate),
    no negative output size (circular)."""
    k, nd = len(pairs), input.dim()
    if k not in (1, 2, 3) or nd not in (k + 1, k + 2):
        raise NotImplementedError(
            f"Padding size {2 * k} is not supported for {nd}D input tensor.\n"
            "Supported combinations for non-constant padding:\n"
            "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
            "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
            "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")
    shape = list(input.shape)
    if mode == "circular":
        for i, (lo, hi) in enumerate(pairs):
            if shape[nd - 1 - i] + lo + hi < 0:
                raise RuntimeError("Negative padding value is resulting in an empty dimension")
        return
    if builtins.any(s == 0 for s in shape[1 if nd == k + 2 else 0:]):
        raise RuntimeError(f"Expected {k + 1}D or {k + 2}D (batch mode) tensor with possibly 0 batch size and other "
                           f"non-zero dimensions for input, but got: {shape}")
    if mode == "reflect":
        for i, (lo, hi) in enumerate(pairs):
            d = nd - 1 - i
            if lo >= shape[d] or hi >= shape[d]:
                raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding input dimension, "
                                   f"but got: padding ({lo}, {hi}) at dimension {d} of input {shape}")
    names = "DHW"[3 - k:]
    ins = [shape[nd - k + j] for j in range(k)]
    outs = [ins[j] + pairs[k - 1 - j][0] + pairs[k - 1 - j][1] for j in range(k)]
    if builtins.any(o < 1 for o in outs):
        if k == 1:
            raise RuntimeError(f"input (W: {ins[0]}) is too small. Calculated output W: {outs[0]}")
        raise RuntimeError("Calculated output " + " ".join(f"{c}: {o}" for c, o in zip(names, outs))
                           + " must be >= 1 in every dimension (input "
                           + ", ".join(f"{c}: {v}" for c, v in zip(names, ins)) + ")")


# ---------------------------------------------------------------------------------------- convolution
def _conv(input, weight, bias, stride, padding, dilation, groups, n: int, name: str):
    batched = input.dim() == n + 2
    if input.dim() not in (n + 1, n + 2):
        raise RuntimeError(f"Expected {n + 1}D (unbatched) or {n + 2}D (batched) input to {name}, but got input of size: {list(input.shape)}")
    x = input if batched else input.unsqueeze(0)
    stride, dilation = _ntuple(stride, n, "stride", name), _ntuple(dilation, n, "dilation", name)
    k = tuple(weight.shape[2:])
    if isinstance(padding, str):
        if padding == "valid":
            padding = (0,) * n
        elif padding == "same":
            if builtins.any(s != 1 for s in stride):
                raise RuntimeError("padding='same' is not supported for strided convolutions")
            total = [d * (kk - 1) for d, kk in zip(dilation, k)]
            lo = [t // 2 for t in total]
            if builtins.any(t % 2 for t in total):
                pads = []
                for t, l in reversed(list(zip(total, lo))):
                    pads += [l, t - l]
                x = pad(x, pads)
                padding = (0,) * n
            else:
                padding = tuple(lo)
        else:
            raise ValueError(f"Invalid padding string {padding!r}, should be one of ['valid', 'same']")
    padding = _ntuple(padding, n, "padding")
    weight, bias = _empty_input_params(x, weight, bias)
    out = _C.conv(x, weight, bias, list(stride), list(padding), list(dilation), int(groups))
    return out if batched else out.squeeze(0)


def _empty_input_params(x, weight, bias):
    """For an empty input torch only computes the output's shape: weight and bias of another dtype
    are fine then (cast here so the shape checks run)."""
    if x.numel() == 0:
        if weight.dtype != x.dtype:
            weight = weight.to(x.dtype)
        if bias is not None and bias.dtype != x.dtype:
            bias = bias.to(x.dtype)
    return weight, bias


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _conv(input, weight, bias, stride, padding, dilation, groups, 1, "conv1d")


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _conv(input, weight, bias, stride, padding, dilation, groups, 2, "conv2d")


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _conv(input, weight, bias, stride, padding, dilation, groups, 3, "conv3d")


def _conv_t(input, weight, bias, stride, padding, output_padding, groups, dilation, n: int, name: str):
    batched = input.dim() == n + 2
    if input.dim() not in (n + 1, n + 2):
        raise RuntimeError(f"Expected {n + 1}D (unbatched) or {n + 2}D (batched) input to {name}, but got input of size: {list(input.shape)}")
    x = input if batched else input.unsqueeze(0)
    stride, padding = _ntuple(stride, n, "stride"), _ntuple(padding, n, "padding")
    output_padding, dilation = _ntuple(output_padding, n, "output_padding"), _ntuple(dilation, n, "dilation")
    if x.numel():  # torch checks these in its kernels, which an empty input never reaches
        for op, s, d in zip(output_padding, stride, dilation):
            if op >= s and op >= d:
                raise RuntimeError("output padding must be smaller than either stride or dilation")
    weight, bias = _empty_input_params(x, weight, bias)
    out = _C.conv_transpose(x, weight, bias, list(stride), list(padding), list(output_padding), list(dilation), int(groups))
    return out if batched else out.squeeze(0)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return _conv_t(input, weight, bias, stride, padding, output_padding, groups, dilation, 1, "conv_transpose1d")


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return _conv_t(input, weight, bias, stride, padding, output_padding, groups, dilation, 2, "conv_transpose2d")


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return _conv_t(input, weight, bias, stride, padding, output_padding, groups, dilation, 3, "conv_transpose3d")


# ---------------------------------------------------------------------------------------- pooling
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


max_pool1d_with_indices = lambda *a, **k: max_pool1d(*a, **{**k, "return_indices": True})  # noqa: E731
max_pool2d_with_indices = lambda *a, **k: max_pool2d(*a, **{**k, "return_indices": True})  # noqa: E731
max_pool3d_with_indices = lambda *a, **k: max_pool3d(*a, **{**k, "return_indices": True})  # noqa: E731


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
    out = avg_pool2d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return (out.sign() * relu(out.abs())).mul(kw * kh).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    out = avg_pool1d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return (out.sign() * relu(out.abs())).mul(kernel_size).pow(1.0 / norm_type)


# ---------------------------------------------------------------------------------------- activations
def _maybe_inplace(input: Tensor, out: Tensor, inplace: bool) -> Tensor:
    if inplace:
        input.copy_(out)
        return input
    return out


def relu(input, inplace=False):
    if input.dtype == _C.bool:
        raise NotImplementedError("Boolean inputs not supported for relu")
    return _maybe_inplace(input, input.relu(), inplace)


def relu6(input, inplace=False):
    return hardtanh(input, 0.0, 6.0, inplace)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    if input.dtype == _C.bool:
        raise NotImplementedError("Bool inputs not supported for hardtanh")
    return _maybe_inplace(input, input.clamp(min_val, max_val), inplace)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    need_float(input, "leaky_relu_cpu")
    return _maybe_inplace(input, _C.leaky_relu(input, negative_slope), inplace)


def elu(input, alpha=1.0, inplace=False):
    need_float(input, "elu_cpu")
    return _maybe_inplace(input, _C.elu(input, alpha), inplace)


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(input, inplace=False):
    need_float(input, "elu_cpu")
    return _maybe_inplace(input, _C.elu(input, _SELU_ALPHA, _SELU_SCALE), inplace)


def celu(input, alpha=1.0, inplace=False):
    need_float(input, "elu_cpu")
    return _maybe_inplace(input, _C.elu(input, alpha, 1.0, 1.0 / alpha), inplace)


def gelu(input, approximate="none"):
    need_float(input, "GeluKernelImpl")
    return _C.gelu(input, approximate)


def silu(input, inplace=False):
    need_float(input, "silu_cpu")
    return _maybe_inplace(input, _C.silu(input), inplace)


def mish(input, inplace=False):
    need_float(input, "mish_cpu")
    return _maybe_inplace(input, _C.mish(input), inplace)


def sigmoid(input):
    return input.sigmoid()


def tanh(input):
    return input.tanh()


def hardsigmoid(input, inplace=False):
    need_float(input, "hardsigmoid_cpu")
    return _maybe_inplace(input, _C.hardsigmoid(input), inplace)


def hardswish(input, inplace=False):
    need_float(input, "hardswish_cpu")
    return _maybe_inplace(input, _C.hardswish(input), inplace)


def softplus(input, beta=1.0, threshold=20.0):
    need_float(input, "softplus_cpu")
    return _C.softplus(input, beta, threshold)


def softsign(input):
    if input.dtype == _C.bool:
        raise not_implemented("abs_cpu", input.dtype)
    return _C.softsign(input)


def logsigmoid(input):
    need_float(input, "log_sigmoid_cpu")
    return _C.logsigmoid(input)


def tanhshrink(input):
    if input.dtype == _C.bool:
        raise NotImplementedError("Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying "
                                  "to invert a mask, use the `~` or `logical_not()` operator instead.")
    return _C.tanhshrink(input)


def softshrink(input, lambd=0.5):
    need_float(input, "softshrink_check")
    if lambd < 0:
        raise RuntimeError(f"lambda must be greater or equal to 0, but found to be {lambd}.")
    return _C.softshrink(input, lambd)


def hardshrink(input, lambd=0.5):
    need_float(input, "hardshrink_cpu")
    return _C.hardshrink(input, lambd)


def threshold(input, threshold, value, inplace=False):
    return _maybe_inplace(input, _C.threshold(input, threshold, value), inplace)


def prelu(input, weight):
    """max(0, x) + weight · min(0, x), weight broadcast over the channel dim (dim 1)."""
    if input.dtype != weight.dtype:
        raise RuntimeError(f"prelu: Type promoting not supported. Got {dtype_title(input.dtype)} and {dtype_title(weight.dtype)}")
    need_float(input, "prelu_cpu")
    if weight.numel() != 1 and (input.dim() < 1 or weight.numel() != (input.shape[1] if input.dim() >= 2 else input.shape[0])):
        raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found parameter numbers = {weight.numel()} and channel size = {input.shape[1] if input.dim() >= 2 else 1}.")
    w = weight
    if weight.numel() != 1 and input.dim() >= 2:
        w = weight.reshape(-1, *([1] * (input.dim() - 2)))
    return _C.where(input > 0, input, input * w)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    if lower > upper:
        raise RuntimeError("Lower bound should be less than or equal to the upper bound")
    need_float(input, "rrelu_with_noise_out_cpu" if training else "leaky_relu_cpu")
    if training:
        a = _C.empty(*input.shape, dtype=input.dtype).uniform_(lower, upper)
        return _maybe_inplace(input, _C.where(input >= 0, input, input * a), inplace)
    return leaky_relu(input, (lower + upper) / 2, inplace)


def glu(input, dim=-1):
    if input.dim() == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    need_float(input, "glu_cpu")
    if input.shape[dim] % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {dim % input.dim()} is size {input.shape[dim]}")
    a, b = input.chunk(2, dim)
    return a * b.sigmoid()


def _softmax_dim(ndim: int) -> int:
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _softmax_dim(input.dim())
    return input.softmax(dim, dtype=dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _softmax_dim(input.dim())
    return input.log_softmax(dim, dtype=dtype)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _softmax_dim(input.dim())
    return (-input).softmax(dim, dtype=dtype)


def snake(input, alpha):
    """Snake activation (candle_bind addition, from audio codecs): x + sin²(αx)/(α + 1e-9)."""
    return _C.snake(input, alpha)


# ---------------------------------------------------------------------------------------- dropout
def _check_p(p):
    if p != p:  # NaN: torch's native check
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {p}")
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def dropout(input, p=0.5, training=True, inplace=False):
    _check_p(p)
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return _maybe_inplace(input, input * 0.0, inplace)
    keep = _C.empty(*input.shape, dtype=input.dtype).bernoulli_(1 - p)
    return _maybe_inplace(input, input * keep / (1 - p), inplace)


def _feature_dropout(input, p, training, inplace, n, name):
    _check_p(p)
    if not training or p == 0.0:
        return input
    if input.dim() not in (n + 1, n + 2):
        raise RuntimeError(f"{name}: Expected {n + 1}D or {n + 2}D input, but got input of size: {list(input.shape)}")
    shape = list(input.shape[:-n]) + [1] * n
    keep = _C.empty(*shape, dtype=input.dtype).bernoulli_(1 - p)
    return _maybe_inplace(input, input * keep / (1 - p) if p < 1 else input * 0.0, inplace)


def dropout1d(input, p=0.5, training=True, inplace=False):
    return _feature_dropout(input, p, training, inplace, 1, "dropout1d")


def dropout2d(input, p=0.5, training=True, inplace=False):
    return _feature_dropout(input, p, training, inplace, 2, "dropout2d")


def dropout3d(input, p=0.5, training=True, inplace=False):
    return _feature_dropout(input, p, training, inplace, 3, "dropout3d")


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    _check_p(p)
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return _maybe_inplace(input, input * 0.0, inplace)
    alpha = -_SELU_ALPHA * _SELU_SCALE
    keep = _C.empty(*input.shape, dtype=input.dtype).bernoulli_(1 - p)
    a = ((1 - p) * (1 + p * alpha**2)) ** -0.5
    b = -a * alpha * p
    return _maybe_inplace(input, (input * keep + alpha * (1 - keep)) * a + b, inplace)


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    return alpha_dropout(input, p, training, inplace)


# ---------------------------------------------------------------------------------------- sparse
def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False, sparse=False):
    if input.is_floating_point():
        raise RuntimeError("Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; but got a floating point tensor instead")
    if padding_idx is not None:
        if padding_idx > 0:
            assert padding_idx < weight.size(0), "Padding_idx must be within num_embeddings"
        elif padding_idx < 0:
            assert padding_idx >= -weight.size(0), "Padding_idx must be within num_embeddings"
    if max_norm is not None:
        _embedding_renorm_(weight, input, max_norm, norm_type)
    flat = input.reshape(-1)
    return weight.index_select(0, flat).reshape(*input.shape, weight.shape[-1])


def _embedding_renorm_(weight, input, max_norm, norm_type):
    rows = _C.unique(input.reshape(-1))
    sel = weight.index_select(0, rows)
    norms = sel.norm(p=norm_type, dim=1, keepdim=True)
    scale = _C.where(norms > max_norm, max_norm / (norms + 1e-7), _C.ones_like(norms))
    weight.index_copy_(0, rows, sel * scale)


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False, mode="mean",
                  sparse=False, per_sample_weights=None, include_last_offset=False, padding_idx=None):
    if mode not in ("sum", "mean", "max"):
        raise ValueError(f"mode has to be one of sum, mean or max, got {mode}")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. per_sample_weights is only supported for mode='sum' (got mode='{mode}').")
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None")
        if input.shape[1] == 0:
            raise RuntimeError("step must be nonzero")
        bags = [input[i] for i in range(input.shape[0])]
        psw = [per_sample_weights[i] for i in range(input.shape[0])] if per_sample_weights is not None else None
    elif input.dim() == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        starts = offsets.tolist()
        ends = starts[1:] + ([] if include_last_offset else [input.shape[0]])
        if include_last_offset:
            starts = starts[:-1]
        bags = [input[s:e] for s, e in zip(starts, ends)]
        psw = [per_sample_weights[s:e] for s, e in zip(starts, ends)] if per_sample_weights is not None else None
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.dim()}")
    if max_norm is not None:
        _embedding_renorm_(weight, input, max_norm, norm_type)
    outs = []
    for i, bag in enumerate(bags):
        if padding_idx is not None:
            keep = bag != padding_idx
            if psw is not None:
                psw[i] = psw[i][keep]
            bag = bag[keep]
        if bag.numel() == 0:
            outs.append(_C.zeros(weight.shape[1], dtype=weight.dtype))
            continue
        rows = weight.index_select(0, bag)
        if psw is not None:
            rows = rows * psw[i].unsqueeze(1)
        outs.append(rows.sum(0) if mode == "sum" else rows.mean(0) if mode == "mean" else rows.amax(0))
    return _C.stack(outs, 0) if outs else _C.zeros(0, weight.shape[1], dtype=weight.dtype)


def one_hot(tensor, num_classes=-1):
    if tensor.is_floating_point():
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if num_classes == -1:
        num_classes = int(tensor.max().item()) + 1 if tensor.numel() else 0
    if tensor.numel() and (int(tensor.min().item()) < 0 or int(tensor.max().item()) >= num_classes):
        raise RuntimeError("Class values must be smaller than num_classes." if tensor.numel() else "Class values must be non-negative.")
    return (tensor.long().unsqueeze(-1) == _C.arange(num_classes)).long()


# ---------------------------------------------------------------------------------------- shuffles, fold
def pixel_shuffle(input, upscale_factor):
    r = int(upscale_factor)
    *lead, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of upscale_factor, but input.size(-3)={c} is not divisible by {r * r}")
    n = len(lead)
    x = input.reshape(*lead, c // (r * r), r, r, h, w)
    x = x.permute(*range(n), n, n + 3, n + 1, n + 4, n + 2)
    return x.reshape(*lead, c // (r * r), h * r, w * r)


def pixel_unshuffle(input, downscale_factor):
    r = int(downscale_factor)
    *lead, c, h, w = input.shape
    if h % r or w % r:
        raise RuntimeError(f"pixel_unshuffle expects height and width to be divisible by downscale_factor, but got {h}x{w} and {r}")
    n = len(lead)
    x = input.reshape(*lead, c, h // r, r, w // r, r)
    x = x.permute(*range(n), n, n + 2, n + 4, n + 1, n + 3)
    return x.reshape(*lead, c * r * r, h // r, w // r)


def channel_shuffle(input, groups):
    n, c = input.shape[0], input.shape[1]
    if c % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels and {groups} groups.")
    rest = input.shape[2:]
    return input.reshape(n, groups, c // groups, *rest).transpose(1, 2).reshape(n, c, *rest)


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """im2col: (N, C, H, W) → (N, C·kh·kw, L)."""
    if not input.is_floating_point() and input.dtype != _C.bool:
        raise not_implemented("im2col_out_cpu", input.dtype)
    if input.dim() not in (3, 4):
        raise RuntimeError(f"Input Error: Only 3D or 4D input Tensors are supported (got {input.dim()}D)")
    batched = input.dim() == 4
    x = input if batched else input.unsqueeze(0)
    (kh, kw), (dh, dw) = _ntuple(kernel_size, 2), _ntuple(dilation, 2)
    (ph, pw), (sh, sw) = _ntuple(padding, 2), _ntuple(stride, 2)
    x = pad(x, [pw, pw, ph, ph])
    n, c, h, w = x.shape
    oh, ow = (h - dh * (kh - 1) - 1) // sh + 1, (w - dw * (kw - 1) - 1) // sw + 1
    if oh <= 0 or ow <= 0:
        raise RuntimeError("Given input with spatial size too small for kernel_size, dilation, padding and stride")
    patches = [x[:, :, i * dh: i * dh + sh * (oh - 1) + 1: sh, j * dw: j * dw + sw * (ow - 1) + 1: sw]
               for i in range(kh) for j in range(kw)]
    out = _C.stack(patches, 2).reshape(n, c * kh * kw, oh * ow)
    return out if batched else out.squeeze(0)


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """col2im: (N, C·kh·kw, L) → (N, C, H, W), overlapping patches summed."""
    if not input.is_floating_point() and input.dtype != _C.bool:
        raise not_implemented("col2im_out_cpu", input.dtype)
    if input.dim() not in (2, 3):
        raise RuntimeError(f"Input Error: Only unbatched (2D) or batched (3D) input Tensors are supported (got {input.dim()}D)")
    batched = input.dim() == 3
    x = input if batched else input.unsqueeze(0)
    (H, W), (kh, kw) = _ntuple(output_size, 2), _ntuple(kernel_size, 2)
    (dh, dw), (ph, pw), (sh, sw) = _ntuple(dilation, 2), _ntuple(padding, 2), _ntuple(stride, 2)
    n, ckk, L = x.shape
    if ckk % (kh * kw):
        raise RuntimeError(f"Expected size of input's dimension 1 to be divisible by the product of kernel_size, but got input.size(1)={ckk} and kernel_size={(kh, kw)}")
    c = ckk // (kh * kw)
    hp, wp = H + 2 * ph, W + 2 * pw
    oh, ow = (hp - dh * (kh - 1) - 1) // sh + 1, (wp - dw * (kw - 1) - 1) // sw + 1
    if oh * ow != L:
        raise RuntimeError(f"Given output_size={(H, W)}, kernel_size={(kh, kw)}, dilation={(dh, dw)}, padding={(ph, pw)}, stride={(sh, sw)}, expected size of input's dimension 2 to match the calculated number of sliding blocks {oh} * {ow} = {oh * ow}, but got input.size(2)={L}.")
    cols = x.reshape(n, c, kh * kw, oh, ow)
    out = _C.zeros(n, c, hp, wp, dtype=x.dtype)
    for i in range(kh):
        for j in range(kw):
            key = (builtins.slice(None), builtins.slice(None),
                   builtins.slice(i * dh, i * dh + sh * (oh - 1) + 1, sh), builtins.slice(j * dw, j * dw + sw * (ow - 1) + 1, sw))
            out[key] = out[key] + cols[:, :, i * kw + j]
    out = out[:, :, ph: ph + H, pw: pw + W]
    return out if batched else out.squeeze(0)


# ---------------------------------------------------------------------------------------- distances
def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    denom = input.norm(p=p, dim=dim, keepdim=True).clamp_min(eps)
    return input / denom


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    from .. import promote_types

    common = promote_types(x1.dtype, x2.dtype)
    if not common.is_floating_point:
        raise RuntimeError(f"expected common dtype to be floating point, yet common dtype is {dtype_title(common)}")
    if tuple(x1.shape) != tuple(x2.shape):
        from .._ops import broadcast_tensors

        x1, x2 = broadcast_tensors(x1, x2)
    x1, x2 = x1.to(common), x2.to(common)
    n1 = x1.norm(dim=dim).clamp_min(eps)
    n2 = x2.norm(dim=dim).clamp_min(eps)
    return (x1 * x2).sum(dim) / (n1 * n2)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    return (x1 - x2 + eps).norm(p=p, dim=-1, keepdim=keepdim)


# ---------------------------------------------------------------------------------------- losses
def _reduce(loss, reduction: str):
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ValueError(f"{reduction} is not a valid value for reduction")


def _legacy_reduction(size_average, reduce, reduction):
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    return ("mean" if size_average else "sum") if reduce else "none"


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    """Negative log-likelihood over class dim 1 (or 0 for an unbatched input), torch's weighting."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if input.dim() < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {input.dim()})")
    if target.dtype not in (_C.int64, _C.uint8):
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got {dtype_title(target.dtype)}")
    cdim = 0 if input.dim() == 1 else 1
    if input.dim() > 1 and input.shape[0] != target.shape[0]:
        raise ValueError(f"Expected input batch_size ({input.shape[0]}) to match target batch_size ({target.shape[0]}).")
    valid = target != ignore_index
    safe_t = _C.where(valid, target, _C.zeros_like(target)).long()
    picked = -input.gather(cdim, safe_t.unsqueeze(cdim)).squeeze(cdim)
    w = weight.index_select(0, safe_t.reshape(-1)).reshape(safe_t.shape) if weight is not None else _C.ones_like(picked)
    w = w * valid.to(w.dtype)
    loss = picked * w
    if reduction == "mean":
        return loss.sum() / w.sum()
    return _reduce(loss, reduction)


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean",
                  label_smoothing=0.0):
    """log_softmax + nll_loss; class-index or class-probability targets; label smoothing as torch."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    cdim = 0 if input.dim() == 1 else 1
    logp = input.log_softmax(cdim)
    n_classes = input.shape[cdim]
    if target.is_floating_point():  # probabilities
        if label_smoothing > 0:
            target = target * (1 - label_smoothing) + label_smoothing / n_classes
        wshape = [1] * input.dim()
        wshape[cdim] = n_classes
        terms = logp * target if weight is None else logp * target * weight.reshape(*wshape)
        loss = -terms.sum(cdim)
        return loss.sum() / (input.numel() // n_classes) if reduction == "mean" else _reduce(loss, reduction)
    nll = nll_loss(logp, target, weight, ignore_index=ignore_index, reduction=reduction)
    if label_smoothing <= 0:
        return nll
    valid = (target != ignore_index)
    wshape = [1] * input.dim()
    wshape[cdim] = n_classes
    smooth = -(logp * weight.reshape(*wshape)).sum(cdim) if weight is not None else -logp.sum(cdim)
    smooth = smooth * valid.to(smooth.dtype)
    if reduction == "mean":
        if weight is not None:
            safe_t = _C.where(valid, target, _C.zeros_like(target)).long()
            denom = (weight.index_select(0, safe_t.reshape(-1)).reshape(safe_t.shape) * valid.to(weight.dtype)).sum()
        else:
            denom = valid.sum().to(smooth.dtype)
        smooth = smooth.sum() / denom
    else:
        smooth = _reduce(smooth, reduction)
    return nll * (1 - label_smoothing) + smooth * (label_smoothing / n_classes)


def _check_same_size(input, target, name):
    if tuple(input.shape) != tuple(target.shape):
        import warnings

        warnings.warn(f"Using a target size ({target.shape}) that is different to the input size ({input.shape}). "
                      "This will likely lead to incorrect results due to broadcasting. Please ensure they have the same size.",
                      stacklevel=3)


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    _check_same_size(input, target, "mse_loss")
    return _reduce((input - target).square(), _legacy_reduction(size_average, reduce, reduction))


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    _check_same_size(input, target, "l1_loss")
    return _reduce((input - target).abs(), _legacy_reduction(size_average, reduce, reduction))


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    d = (input - target).abs()
    loss = d - 0.5 * beta if beta == 0 else _C.where(d < beta, 0.5 * d.square() / beta, d - 0.5 * beta)
    return _reduce(loss, _legacy_reduction(size_average, reduce, reduction))


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    if not delta > 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    d = (input - target).abs()
    return _reduce(_C.where(d < delta, 0.5 * d.square(), delta * (d - 0.5 * delta)), reduction)


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    if target.dtype != input.dtype:
        raise RuntimeError(f"Found dtype {dtype_title(target.dtype)} but expected {dtype_title(input.dtype)}")
    need_float(input, "binary_cross_entropy")
    if tuple(input.shape) != tuple(target.shape):
        raise ValueError(f"Using a target size ({target.shape}) that is different to the input size ({input.shape}) is deprecated. Please ensure they have the same size.")
    if (input < 0).any().item() or (input > 1).any().item():
        raise RuntimeError("all elements of input should be between 0 and 1")
    # torch clamps the logs at -100.
    loss = -(target * input.log().clamp_min(-100) + (1 - target) * (1 - input).log().clamp_min(-100))
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, _legacy_reduction(size_average, reduce, reduction))


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None, reduction="mean",
                                     pos_weight=None):
    if tuple(input.shape) != tuple(target.shape):
        raise ValueError(f"Target size ({target.shape}) must be the same as input size ({input.shape})")
    log_sig = logsigmoid(input)
    log_one_minus = logsigmoid(-input)
    if pos_weight is not None:
        loss = -(pos_weight * target * log_sig + (1 - target) * log_one_minus)
    else:
        loss = -(target * log_sig + (1 - target) * log_one_minus)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, _legacy_reduction(size_average, reduce, reduction))


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    if log_target:
        loss = target.exp() * (target - input)
    else:
        loss = _C.where(target > 0, target * (target.clamp_min(1e-45).log() - input), _C.zeros_like(target * input))
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if reduction == "batchmean":
        return loss.sum() / input.shape[0] if input.dim() else loss.sum()
    return _reduce(loss, reduction)


__all__ += ["binary_cross_entropy", "binary_cross_entropy_with_logits", "cross_entropy", "huber_loss", "kl_div",
            "l1_loss", "mse_loss", "nll_loss", "smooth_l1_loss"]


# ---------------------------------------------------------------------------------------- normalisation
def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Normalises over the trailing `normalized_shape` dims (one fused Rust pass per row)."""
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if tuple(input.shape[len(input.shape) - len(shape):]) != shape:
        raise RuntimeError(f"Given normalized_shape={list(shape)}, expected input with shape [*, {', '.join(map(str, shape))}], "
                           f"but got input of size{list(input.shape)}")
    n = math.prod(shape)
    if input.numel() == 0:
        return input.clone()
    return _norm_rows(input, n, weight, bias, eps, False)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """x / sqrt(mean(x²) + eps) · weight over the trailing dims; eps None means finfo(dtype).eps."""
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if tuple(input.shape[len(input.shape) - len(shape):]) != shape:
        raise RuntimeError(f"Given normalized_shape={list(shape)}, expected input with shape [*, {', '.join(map(str, shape))}], "
                           f"but got input of size{list(input.shape)}")
    if eps is None:
        eps = _C_finfo_eps(input.dtype)
    if input.numel() == 0:
        return input.clone()
    return _norm_rows(input, math.prod(shape), weight, None, eps, True)


def _norm_rows(input, n, weight, bias, eps, rms):
    """The fused f32 kernel; float64 keeps its precision through plain ops."""
    if input.dtype != _C.float64:
        return _C.norm_rows(input.contiguous(), n, weight, bias, eps, rms)
    x = input.reshape(-1, n)
    if rms:
        y = x * (x.square().mean(-1, keepdim=True) + eps).rsqrt()
    else:
        xc = x - x.mean(-1, keepdim=True)
        y = xc * (xc.square().mean(-1, keepdim=True) + eps).rsqrt()
    if weight is not None:
        y = y * weight.reshape(-1).to(y.dtype)
    if bias is not None:
        y = y + bias.reshape(-1).to(y.dtype)
    return y.reshape(input.shape)


def _C_finfo_eps(dtype):
    from .. import finfo

    return finfo(dtype).eps


def _channel_shape(input, t):
    return t.reshape(1, -1, *([1] * (input.dim() - 2))) if input.dim() >= 2 else t


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5):
    """Eval: running statistics. Train: batch statistics, running stats updated in place (momentum
    None = cumulative average, handled by the module)."""
    if input.dim() < 2:
        raise ValueError(f"expected 2D or more input (got {input.dim()}D input)")
    c = input.shape[1]
    if training:
        dims = [0] + list(range(2, input.dim()))
        count = input.shape[0] * math.prod(input.shape[2:])
        if count <= 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input size {list(input.shape)}")
    if training and eps <= 0.0:
        raise ValueError(f"batch_norm eps must be positive during training, but got {eps}")
    if eps < 0.0:
        raise ValueError(f"batch_norm eps must be non-negative, but got {eps}")
    if training:
        if (running_mean is None) != (running_var is None):
            raise ValueError("running_mean and running_var must either both be None or neither be None")
        mean = input.mean(dims)
        var = input.var(dims, unbiased=False)
        if running_mean is not None and running_var is not None:
            running_mean.mul_(1 - momentum).add_(mean.to(running_mean.dtype) * momentum)
            running_var.mul_(1 - momentum).add_(var.to(running_var.dtype) * (momentum * count / (count - 1)))
    else:
        if running_mean is None or running_var is None:
            raise RuntimeError(f"{'running_mean' if running_mean is None else 'running_var'} must be defined in evaluation mode")
        if running_mean.numel() != c:
            raise RuntimeError(f"running_mean should contain {c} elements not {running_mean.numel()}")
        mean, var = running_mean, running_var
    scale = (var + eps).rsqrt()
    if weight is not None:
        scale = scale * weight
    shift = -mean * scale
    if bias is not None:
        shift = shift + bias
    if input.dtype == _C.float32 and input.device.type == "cpu" and input.is_contiguous():
        return _C.channel_affine(input, scale, shift)  # one pass
    return input * _channel_shape(input, scale.to(input.dtype)) + _channel_shape(input, shift.to(input.dtype))


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    if input.dim() < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {input.dim()}")
    n, c = input.shape[0], input.shape[1]
    if c % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by num_groups, but got input of shape {list(input.shape)} and num_groups={num_groups}")
    x = _norm_rows(input, (c // num_groups) * (input.numel() // (n * c)), None, None, eps, False) if input.numel() else input.clone()
    if weight is not None:
        x = x * _channel_shape(input, weight)
    if bias is not None:
        x = x + _channel_shape(input, bias)
    return x


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True,
                  momentum=0.1, eps=1e-5):
    if use_input_stats and (running_mean is None) != (running_var is None):
        raise ValueError("running_mean and running_var must either both be None or neither be None")
    if not use_input_stats and (running_mean is None or running_var is None):
        raise RuntimeError("Expected running_mean and running_var to be defined when use_input_stats is false")
    if use_input_stats and input.dim() >= 2 and math.prod(input.shape[2:]) == 1:
        raise ValueError(f"Expected more than 1 spatial element when training, got input size {input.shape}")
    need_float(input, "batch_norm")
    if input.numel() == 0:
        return input.clone()
    n, c = input.shape[0], input.shape[1]
    spatial = input.numel() // (n * c)
    if use_input_stats:
        if running_mean is not None and running_var is not None:
            flat = input.reshape(n, c, spatial)
            mean = flat.mean((0, 2))
            var = flat.var(2, unbiased=True).mean(0) if spatial > 1 else flat.var(2, unbiased=False).mean(0)
            running_mean.mul_(1 - momentum).add_(mean * momentum)
            running_var.mul_(1 - momentum).add_(var * momentum)
        x = _norm_rows(input, spatial, None, None, eps, False)
    else:
        x = (input - _channel_shape(input, running_mean)) * _channel_shape(input, (running_var + eps).rsqrt())
    if weight is not None:
        x = x * _channel_shape(input, weight)
    if bias is not None:
        x = x + _channel_shape(input, bias)
    return x


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    dim = input.dim()
    if dim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {dim} dimensions)")
    div = (input * input).unsqueeze(1)
    if dim == 3:
        div = pad(div, (0, 0, size // 2, (size - 1) // 2))
        div = avg_pool2d(div, (size, 1), stride=1).squeeze(1)
    else:
        sizes = input.shape
        div = div.reshape(sizes[0], 1, sizes[1], sizes[2], -1)
        div = pad(div, (0, 0, 0, 0, size // 2, (size - 1) // 2))
        div = avg_pool3d(div, (size, 1, 1), stride=1).squeeze(1)
        div = div.reshape(*sizes)
    div = (div * alpha + k).pow(beta)
    return input / div


# ---------------------------------------------------------------------------------------- attention
def _sdpa_fused(query, key, value, attn_mask, is_causal, scale):
    """The Rust kernel on (B, L, D) views: batch dims broadcast and flattened, the mask given once
    when it is the same for every batch element."""
    lead = _broadcast_lead(query.shape[:-2], key.shape[:-2], value.shape[:-2])
    L, S, D, Dv = query.shape[-2], key.shape[-2], query.shape[-1], value.shape[-1]
    batch = math.prod(lead)  # not -1: empty tensors have no inferable dim
    flat = lambda t, n, d: t.expand(*lead, n, d).reshape(batch, n, d)  # noqa: E731
    q, k, v = flat(query, L, D), flat(key, S, D), flat(value, S, Dv)
    mask, group = None, 1
    if attn_mask is not None:
        m = attn_mask if attn_mask.dim() >= 2 else attn_mask.reshape(1, -1)
        mlead = (1,) * (len(lead) - (m.dim() - 2)) + tuple(m.shape[:-2])
        # Batch dims the mask has, then dims it broadcasts over (a (B, 1, L, S) mask for (B, H)
        # heads): the kernel reads mask row block bi // group instead of an expanded copy.
        j = len(lead)
        while j > 0 and mlead[j - 1] == 1:
            j -= 1
        if mlead[:j] == lead[:j]:
            group = math.prod(lead[j:])
            mask = m.reshape(*mlead, *m.shape[-2:]).expand(*lead[:j], *mlead[j:], L, S).reshape(math.prod(lead[:j]), L, S)
        else:
            mask = m.expand(*lead, L, S).reshape(batch, L, S)
        if not mask.is_floating_point() and mask.dtype != _C.bool:
            raise RuntimeError(f"Expected attn_mask dtype to be bool or float or to match query dtype, but got attn_mask.dtype: {mask.dtype}")
    out = _C.sdpa(q.contiguous(), k.contiguous(), v.contiguous(), mask.contiguous() if mask is not None else None,
                  bool(is_causal), float(scale), group)
    return out.reshape(*lead, L, Dv)


def _broadcast_lead(*shapes):
    from .. import broadcast_shapes

    return tuple(broadcast_shapes(*[tuple(s) for s in shapes]))


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    """softmax(q kᵀ · scale + mask) v with torch's masks: bool (True = attend) or additive float,
    broadcast over the batch/head dims; `is_causal` aligns the triangle to the top left as torch
    does when L ≠ S; rows with every position masked come out as zeros, as torch's safe softmax."""
    if is_causal and attn_mask is not None:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True")
    if not (query.dtype == key.dtype == value.dtype):
        raise RuntimeError(f"Expected query, key, and value to have the same dtype, but got query.dtype: "
                           f"{dtype_cpp(query.dtype)} key.dtype: {dtype_cpp(key.dtype)} and value.dtype: "
                           f"{dtype_cpp(value.dtype)} instead.")
    if attn_mask is not None and attn_mask.dtype != _C.bool and not attn_mask.is_floating_point():
        raise RuntimeError(f"Expected attn_mask dtype to be bool or float or to match query dtype, but got "
                           f"attn_mask.dtype: {dtype_cpp(attn_mask.dtype)} and  query.dtype: {dtype_cpp(query.dtype)} instead.")
    if query.dim() >= 2 and (math.prod(query.shape[:-1]) * value.shape[-1] == 0 or key.shape[-2] == 0):
        # An empty result or no keys: torch returns zeros before looking at the rest.
        return _C.zeros(*query.shape[:-1], value.shape[-1], dtype=query.dtype, device=query.device)
    if attn_mask is not None and attn_mask.dim() < 2:
        raise IndexError("Dimension specified as -2 but tensor has no dimensions" if attn_mask.dim() == 0 else
                         "Dimension out of range (expected to be in range of [-1, 0], but got -2)")
    L, S = query.shape[-2], key.shape[-2]
    scale_factor = (1 / math.sqrt(query.shape[-1]) if query.shape[-1] else 1.0) if scale is None else scale
    if enable_gqa and query.dim() >= 3 and key.shape[-3] != query.shape[-3]:
        rep = query.shape[-3] // key.shape[-3]
        key = key.repeat_interleave(rep, dim=-3)
        value = value.repeat_interleave(rep, dim=-3)
    if is_causal and attn_mask is not None:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True")
    if dropout_p == 0.0 and query.is_floating_point() and query.device.type == "cpu" and query.dim() >= 2:
        return _sdpa_fused(query, key, value, attn_mask, is_causal, scale_factor)
    scores = query.matmul(key.transpose(-2, -1))
    scores *= scale_factor
    if is_causal:
        if attn_mask is not None:
            raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True")
        causal = _C.ones(L, S, dtype=_C.bool).tril()
        scores = scores.masked_fill(~causal, float("-inf"))
    if attn_mask is not None:
        if attn_mask.dtype == _C.bool:
            scores = scores.masked_fill(~attn_mask, float("-inf"))
        else:
            scores = scores + attn_mask
    attn = scores.softmax(-1)
    if is_causal or attn_mask is not None:
        dead = (scores == float("-inf")).all(-1, keepdim=True)
        if dead.any().item():
            attn = attn.masked_fill(dead, 0.0)
    if dropout_p > 0.0:
        attn = dropout(attn, dropout_p, True)
    return attn.matmul(value)


__all__ += ["batch_norm", "group_norm", "instance_norm", "layer_norm", "local_response_norm", "rms_norm",
            "scaled_dot_product_attention"]


# ---------------------------------------------------------------------------------------- resampling
def _source_index(out_size, in_size, scale, align_corners, cubic=False):
    """torch's area_pixel_compute_source_index for every output position."""
    idx = _C.arange(out_size, dtype=_C.float64)
    if align_corners:
        ratio = (in_size - 1) / (out_size - 1) if out_size > 1 else 0.0
        return idx * ratio
    src = (idx + 0.5) * scale - 0.5
    return src if cubic else src.clamp_min(0.0)


def _cubic_weights(t, A=-0.75):
    def near(x):  # |x| <= 1
        return ((A + 2) * x - (A + 3)) * x * x + 1

    def far(x):  # 1 < |x| < 2
        return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A

    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _along(x, d, idx):
    return x.index_select(d, idx.long())


def _weights_shape(w, x, d):
    shape = [1] * x.dim()
    shape[d] = w.shape[0]
    return w.reshape(*shape).to(x.dtype)


def _taps(mode, L, O, scale, ac):
    """(indices, weights) per output position along one axis, as torch's kernels compute them."""
    if mode in ("nearest", "nearest-exact"):
        off = 0.0 if mode == "nearest" else 0.5
        return [[min(int(math.floor((j + off) * scale)), L - 1)] for j in range(O)], [[1.0]] * O
    idx, wts = [], []
    for j in range(O):
        if ac:
            src = j * ((L - 1) / (O - 1)) if O > 1 else 0.0
        else:
            src = (j + 0.5) * scale - 0.5
            if mode != "bicubic":
                src = max(src, 0.0)
        i0 = math.floor(src)
        t = src - i0
        if mode == "bicubic":
            A = -0.75
            w = [((A * (t + 1) - 5 * A) * (t + 1) + 8 * A) * (t + 1) - 4 * A,
                 ((A + 2) * t - (A + 3)) * t * t + 1,
                 ((A + 2) * (1 - t) - (A + 3)) * (1 - t) * (1 - t) + 1,
                 ((A * (2 - t) - 5 * A) * (2 - t) + 8 * A) * (2 - t) - 4 * A]
            idx.append([min(max(i0 + k - 1, 0), L - 1) for k in range(4)])
            wts.append(w)
        else:
            i0 = min(i0, L - 1)
            idx.append([i0, min(i0 + 1, L - 1)])
            wts.append([1.0 - t, t])
    return idx, wts


_INTERPOLATE_MODES = ("nearest", "nearest-exact", "linear", "bilinear", "bicubic", "trilinear", "area")


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None, recompute_scale_factor=None,
                antialias=False):
    """torch's F.interpolate for nearest, nearest-exact, (bi/tri)linear, bicubic and area, with size
    or scale_factor, align_corners and recompute_scale_factor; separable, one spatial dim at a time."""
    n = input.dim() - 2
    if n < 1 or mode not in _INTERPOLATE_MODES:
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.dim()}D) for the modes: nearest | linear | bilinear | bicubic | trilinear | lanczos | area | nearest-exact (got {mode})")
    expected = {"linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3}
    if mode in expected and expected[mode] != n:
        raise NotImplementedError(f"Got {input.dim()}D input, but {mode} mode needs {expected[mode] + 2}D input")
    if mode in ("nearest", "area", "nearest-exact") and align_corners is not None:
        raise ValueError("align_corners option can only be set with the interpolating modes: linear | bilinear | bicubic | trilinear")
    if (size is None) == (scale_factor is None):
        raise ValueError("only one of size or scale_factor should be defined")
    if antialias and (mode not in ("bilinear", "bicubic") or input.dim() != 4):
        raise ValueError("Anti-alias option is restricted to bilinear, bicubic, and lanczos modes and requires a 4-D "
                         "tensor as input")
    if antialias and input.dtype in (_C.float16, _C.bfloat16):
        raise not_implemented("compute_index_ranges_weights", input.dtype)
    if not input.is_floating_point() and mode != "area" and (
            input.dtype != _C.uint8 or mode in ("linear", "trilinear")):
        kernel = {"nearest": "nearest", "nearest-exact": "nearest", "bicubic": "cubic"}.get(mode, "linear")
        raise not_implemented(f"compute_indices_weights_{kernel}", input.dtype)
    spatial = list(input.shape[2:])
    if size is not None:
        out = list(size) if isinstance(size, (list, tuple)) else [int(size)] * n
        if len(out) != n:
            raise ValueError(f"Input and output must have the same number of spatial dimensions, but got input with spatial dimensions of {spatial} and output size of {out}.")
        scales = [None] * n
    else:
        sf = list(scale_factor) if isinstance(scale_factor, (list, tuple)) else [float(scale_factor)] * n
        if len(sf) != n:
            raise ValueError(f"Input and scale_factor must have the same number of spatial dimensions, but got input with spatial dimensions of {spatial} and scale_factor of shape {sf}.")
        if not builtins.all(math.isfinite(f) for f in sf):
            raise RuntimeError("value cannot be converted to type int64_t without overflow")
        out = [int(math.floor(s * f)) for s, f in zip(spatial, sf)]
        scales = [None if recompute_scale_factor else f for f in sf]
    out = [int(o) for o in out]
    if mode == "area":  # adaptive pooling (its checks; empty outputs allowed)
        if builtins.all(o >= 0 for o in out):
            _C.reserve(list(input.shape[:2]) + out, input.dtype)
        return (adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d)[n - 1](input, out)
    if builtins.any(o <= 0 for o in out) or builtins.any(s <= 0 for s in spatial):
        names = "DHW"[3 - n:]
        show = lambda v: ", ".join(f"{c}: {x}" for c, x in zip(names, v))  # noqa: E731
        raise RuntimeError(f"Input and output sizes should be greater than 0, but got input ({show(spatial)}) and output ({show(out)})")
    _C.reserve(list(input.shape[:2]) + out, input.dtype)
    if input.numel() == 0:  # nothing to resample: no taps to build for the (possibly huge) sizes
        return _C.empty(*input.shape[:2], *out, dtype=input.dtype, device=input.device)
    if mode == "area":
        return (adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d)[n - 1](input, out)
    ac = bool(align_corners)
    x = input
    for i in reversed(range(n)):  # the last dim first: its gather pass then runs on the smaller tensor
        d = 2 + i
        L, O = spatial[i], out[i]
        if O == L and scales[i] in (None, 1.0) and mode != "bicubic":
            continue
        scale = (L / O) if scales[i] is None else 1.0 / scales[i]
        if x.dtype != _C.float64 and x.device.type == "cpu":
            # Taps and weights per output position, applied along the dim by one Rust pass.
            idx, wts = _taps(mode, L, O, scale, ac)
            x = _C.resample_axis(x.contiguous(), d, idx, wts)
            continue
        if mode in ("nearest", "nearest-exact"):
            pos = _C.arange(O, dtype=_C.float64)
            src = (pos * scale) if mode == "nearest" else ((pos + 0.5) * scale)
            x = _along(x, d, src.floor().clamp(0, L - 1))
        elif mode in ("linear", "bilinear", "trilinear"):
            src = _source_index(O, L, scale, ac)
            i0 = src.floor().clamp(0, L - 1)
            i1 = (i0 + 1).clamp(max=L - 1)
            w = src - i0
            x = _along(x, d, i0) * _weights_shape(1 - w, x, d) + _along(x, d, i1) * _weights_shape(w, x, d)
        elif mode == "bicubic":
            src = _source_index(O, L, scale, ac, cubic=True)
            i0 = src.floor()
            t = src - i0
            ws = _cubic_weights(t)
            acc = None
            for k in range(4):
                idx = (i0 + (k - 1)).clamp(0, L - 1)
                term = _along(x, d, idx) * _weights_shape(ws[k], x, d)
                acc = term if acc is None else acc + term
            x = acc
        else:
            raise NotImplementedError(f"Input Error: unsupported interpolation mode {mode!r}")
    return x if x is not input else input.clone()


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    return interpolate(input, size, scale_factor, mode, align_corners)


__all__ += ["interpolate", "upsample"]


def affine_grid(theta, size, align_corners=False):
    """Sampling grid (N, H, W, 2) — or (N, D, H, W, 3) — for the affine maps in `theta`."""
    size = list(size)
    spatial = size[2:]
    if len(spatial) not in (2, 3) or tuple(theta.shape[1:]) != (len(spatial), len(spatial) + 1):
        raise ValueError(f"Expected a batch of {len(spatial)}D affine matrices of shape Nx{len(spatial)}x{len(spatial) + 1} for size {size}. Got {list(theta.shape)}.")
    if not (align_corners and min(spatial) == 1) and min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")

    def coords(n):
        if n <= 1:
            return _C.zeros(max(n, 1), dtype=theta.dtype)
        if align_corners:
            return _C.arange(n, dtype=theta.dtype) * (2.0 / (n - 1)) - 1
        return (_C.arange(n, dtype=theta.dtype) * 2 + 1) / n - 1

    axes = [coords(n) for n in reversed(spatial)]  # x, y(, z): innermost first
    grids = []
    mesh_shape = list(spatial)
    for i, a in enumerate(axes):
        shape = [1] * len(spatial)
        shape[len(spatial) - 1 - i] = a.shape[0]
        grids.append(a.reshape(*shape).expand(*mesh_shape))
    grids.append(_C.ones(*mesh_shape, dtype=theta.dtype))
    base = _C.stack(grids, -1).reshape(1, -1, len(spatial) + 1)
    out = base.matmul(theta.transpose(1, 2))
    return out.reshape(size[0], *spatial, len(spatial))


def _grid_coord(g, n, align_corners, padding_mode):
    x = (g + 1) / 2 * (n - 1) if align_corners else ((g + 1) * n - 1) / 2
    return _pad_coord(x, n, align_corners, padding_mode)


def _pad_coord(x, n, align_corners, padding_mode):
    """torch's compute_coordinates: a pixel coordinate clipped (border) or reflected (reflection)."""
    if padding_mode == "border":
        x = x.clamp(0, n - 1)
    elif padding_mode == "reflection":
        lo, hi = (0.0, n - 1.0) if align_corners else (-0.5, n - 0.5)
        span = hi - lo
        if span <= 0:
            x = x * 0
        else:
            t = (x - lo).abs()
            flips = (t / span).floor()
            extra = t - flips * span
            x = _C.where(flips % 2 == 0, extra + lo, span - extra + lo)
            x = x.clamp(0, n - 1)
    return x


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """2-D grid sampling (bilinear, nearest or bicubic; zeros, border or reflection padding) as torch's."""
    if input.dim() != 4:
        raise NotImplementedError("grid_sample: only 4-D inputs (N, C, H, W) are supported by candle_bind so far")
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', but got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or 'reflection', but got: '{padding_mode}'")
    ac = bool(align_corners)
    N, C, H, W = input.shape
    Ho, Wo = grid.shape[1], grid.shape[2]
    flat = input.reshape(N, C, H * W)
    if mode == "bicubic":
        # torch's bicubic: 4x4 taps around the unnormalised point, each tap's coordinate padded.
        gx, gy = grid[..., 0].to(input.dtype), grid[..., 1].to(input.dtype)
        x = (gx + 1) / 2 * (W - 1) if ac else ((gx + 1) * W - 1) / 2
        y = (gy + 1) / 2 * (H - 1) if ac else ((gy + 1) * H - 1) / 2
        x0, y0 = x.floor(), y.floor()
        wxs = [w.unsqueeze(1) for w in _cubic_weights(x - x0)]
        wys = [w.unsqueeze(1) for w in _cubic_weights(y - y0)]

        def tap_padded(xi, yi):
            xi, yi = _pad_coord(xi, W, ac, padding_mode), _pad_coord(yi, H, ac, padding_mode)
            inside = (xi >= 0) & (xi <= W - 1) & (yi >= 0) & (yi <= H - 1)
            idx = (yi.clamp(0, H - 1).floor() * W + xi.clamp(0, W - 1).floor()).long()
            vals = flat.gather(2, idx.reshape(N, 1, Ho * Wo).expand(N, C, Ho * Wo)).reshape(N, C, Ho, Wo)
            return vals * inside.unsqueeze(1).to(input.dtype)

        out = None
        for i in range(4):
            row = None
            for j in range(4):
                term = tap_padded(x0 + (j - 1), y0 + (i - 1)) * wxs[j]
                row = term if row is None else row + term
            row = row * wys[i]
            out = row if out is None else out + row
        return out
    x = _grid_coord(grid[..., 0].to(input.dtype), W, ac, padding_mode)
    y = _grid_coord(grid[..., 1].to(input.dtype), H, ac, padding_mode)

    def tap(xi, yi):
        inside = (xi >= 0) & (xi <= W - 1) & (yi >= 0) & (yi <= H - 1)
        idx = (yi.clamp(0, H - 1) * W + xi.clamp(0, W - 1)).long().reshape(N, 1, Ho * Wo).expand(N, C, Ho * Wo)
        vals = flat.gather(2, idx).reshape(N, C, Ho, Wo)
        return vals * inside.unsqueeze(1).to(input.dtype)

    if mode == "nearest":
        return tap(x.round(), y.round())
    x0, y0 = x.floor(), y.floor()
    wx, wy = (x - x0).unsqueeze(1), (y - y0).unsqueeze(1)
    return (tap(x0, y0) * (1 - wx) * (1 - wy) + tap(x0 + 1, y0) * wx * (1 - wy)
            + tap(x0, y0 + 1) * (1 - wx) * wy + tap(x0 + 1, y0 + 1) * wx * wy)


__all__ += ["affine_grid", "grid_sample"]
from .._ops import grouped_mm  # noqa: E402,F401 - torch.nn.functional.grouped_mm (mixture-of-experts layers)
