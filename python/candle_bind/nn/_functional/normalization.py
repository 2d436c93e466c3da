"""Normalization functionals: batch/layer/group/instance/rms/local-response norm, normalize."""

from __future__ import annotations

import math

from ... import _C
from ..._tensor import need_float
# Functionals call each other as F.x, looked up at call time as the one-file module's globals were:
# a monkeypatched nn.functional.x reaches these callers too.
from .. import functional as F
from ..._opmath import opmath


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    denom = input.norm(p=p, dim=dim, keepdim=True).clamp_min(eps)
    return input / denom


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Normalises over the trailing `normalized_shape` dims (one fused Rust pass per row)."""
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    _check_normalized(input, shape, weight, bias)
    n = math.prod(shape)
    if input.numel() == 0:
        return input.clone()
    return _norm_rows(input, n, weight, bias, eps, False)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """x / sqrt(mean(x²) + eps) · weight over the trailing dims; eps None means finfo(dtype).eps."""
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if input.is_complex():
        raise NotImplementedError("rms_norm is not supported for complex tensors by candle_bind yet")
    _check_normalized(input, shape, weight)
    if eps is None:
        eps = _C_finfo_eps(input.dtype)
    if input.numel() == 0:
        return input.clone()
    return _norm_rows(input, math.prod(shape), weight, None, eps, True)


def _check_normalized(input, shape, weight, bias=None):
    """layer_norm's / rms_norm's argument checks, torch's messages."""
    if not shape:
        raise RuntimeError("Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one "
                           "element, but got normalized_shape = []")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and tuple(t.shape) != shape:
            raise RuntimeError(f"Expected {name} to be of same shape as normalized_shape, but got {name} of shape "
                               f"{list(t.shape)} and normalized_shape = {list(shape)}")
    if tuple(input.shape[len(input.shape) - len(shape):]) != shape:
        raise RuntimeError(f"Given normalized_shape={list(shape)}, expected input with shape [*, {', '.join(map(str, shape))}], "
                           f"but got input of size{list(input.shape)}")


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
    from ... import finfo

    return finfo(dtype).eps


def _channel_shape(input, t):
    return t.reshape(1, -1, *([1] * (input.dim() - 2))) if input.dim() >= 2 else t


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5):
    """Eval: running statistics. Train: batch statistics, running stats updated in place (momentum
    None = cumulative average, handled by the module)."""
    if input.dim() < 2:
        if input.numel() == 0:  # torch's kernel returns an empty input as is
            return input.clone()
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
        if input.device.type not in ("cpu", "meta") and input.is_floating_point() and input.numel():
            return _C.batch_norm_eval(input, mean, var, weight, bias, eps)  # one kernel
    scale = (var + eps).rsqrt()
    if weight is not None:
        scale = scale * weight
    shift = -mean * scale
    if bias is not None:
        shift = shift + bias
    if input.dtype == _C.float32 and input.device.type == "cpu" and input.is_contiguous():
        return _C.channel_affine(input, scale, shift)  # one pass
    return input * _channel_shape(input, scale.to(input.dtype)) + _channel_shape(input, shift.to(input.dtype))


@opmath
def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    if input.dim() < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {input.dim()}")
    n, c = input.shape[0], input.shape[1]
    if c % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by num_groups, but got input of shape {list(input.shape)} and num_groups={num_groups}")
    if c == 0 or input.dim() > 2 and input.numel() == 0 and math.prod(input.shape[2:]) == 0:
        raise RuntimeError(f"Expected {'number of channels' if c == 0 else 'HxW'} to be greater than 0, got 0")
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
    if input.numel() == 0:  # torch returns the input itself (its dtype kept)
        return input
    div = (input * input).unsqueeze(1)
    if dim == 3:
        div = F.pad(div, (0, 0, size // 2, (size - 1) // 2))
        div = F.avg_pool2d(div, (size, 1), stride=1).squeeze(1)
    else:
        sizes = input.shape
        div = div.reshape(sizes[0], 1, sizes[1], sizes[2], -1)
        div = F.pad(div, (0, 0, 0, 0, size // 2, (size - 1) // 2))
        div = F.avg_pool3d(div, (size, 1, 1), stride=1).squeeze(1)
        div = div.reshape(*sizes)
    div = (div * alpha + k).pow(beta)
    return input / div
