"""Convolution functionals: conv1d-3d, conv_transpose1d-3d, unfold (im2col) and fold (col2im)."""

from __future__ import annotations

import builtins

from ... import _C
from ..._tensor import not_implemented
# Functionals call each other as F.x, looked up at call time as the one-file module's globals were:
# a monkeypatched nn.functional.x reaches these callers too.
from .. import functional as F
from ._utils import _ntuple


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
                x = F.pad(x, pads)
                padding = (0,) * n
            else:
                padding = tuple(lo)
        else:
            raise ValueError(f"Invalid padding string {padding!r}, should be one of ['valid', 'same']")
    padding = _ntuple(padding, n, "padding")
    weight, bias = _empty_input_params(x, weight, bias)
    out = _exact_int64(_C.conv, x, weight, bias, list(stride), list(padding), list(dilation), int(groups))
    return out if batched else out.squeeze(0)


def _exact_int64(conv, x, weight, bias, *args):
    """torch convolves int64 tensors exactly: computed in float64 (exact while the sums stay below 2**53)."""
    if x.dtype == _C.int64 and weight.dtype == _C.int64 and (bias is None or bias.dtype == _C.int64):
        return conv(x.double(), weight.double(), None if bias is None else bias.double(), *args).long()
    return conv(x, weight, bias, *args)


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
    out = _exact_int64(_C.conv_transpose, x, weight, bias, list(stride), list(padding), list(output_padding),
                       list(dilation), int(groups))
    return out if batched else out.squeeze(0)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return _conv_t(input, weight, bias, stride, padding, output_padding, groups, dilation, 1, "conv_transpose1d")


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return _conv_t(input, weight, bias, stride, padding, output_padding, groups, dilation, 2, "conv_transpose2d")


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return _conv_t(input, weight, bias, stride, padding, output_padding, groups, dilation, 3, "conv_transpose3d")


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
    x = F.pad(x, [pw, pw, ph, ph])
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
    out = _C.zeros(n, c, hp, wp, dtype=x.dtype, device=x.device)
    for i in range(kh):
        for j in range(kw):
            key = (builtins.slice(None), builtins.slice(None),
                   builtins.slice(i * dh, i * dh + sh * (oh - 1) + 1, sh), builtins.slice(j * dw, j * dw + sw * (ow - 1) + 1, sw))
            out[key] = out[key] + cols[:, :, i * kw + j]
    out = out[:, :, ph: ph + H, pw: pw + W]
    return out if batched else out.squeeze(0)
