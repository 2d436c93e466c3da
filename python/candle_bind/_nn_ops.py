"""torch.* names of nn.functional ops (torch.conv2d, torch.layer_norm, ...), aten's grid_sampler_2d/3d with
integer modes, the `native_*_norm` ops that also return their statistics, and aten._safe_softmax.
A family module (see _OP_FAMILIES); nn.functional loads on first call (it is lazy at `import candle_bind`).
"""

from __future__ import annotations

import math

from . import _C


def _functional(name: str):
    def forward(*args, **kwargs):
        from .nn import functional

        return getattr(functional, name)(*args, **kwargs)

    forward.__name__ = forward.__qualname__ = name
    return forward


conv1d, conv2d, conv3d = _functional("conv1d"), _functional("conv2d"), _functional("conv3d")
conv_transpose1d, conv_transpose2d, conv_transpose3d = (
    _functional("conv_transpose1d"), _functional("conv_transpose2d"), _functional("conv_transpose3d"))


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5, cudnn_enable=True):
    from .nn.functional import layer_norm as f

    return f(input, normalized_shape, weight, bias, eps)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5, cudnn_enabled=True):
    from .nn.functional import group_norm as f

    if input.dim() < 2:  # aten reads input.size(1) first
        raise IndexError(f"Dimension out of range (expected to be in range of [{-max(input.dim(), 1)}, "
                         f"{max(input.dim(), 1) - 1}], but got 1)")
    return f(input, num_groups, weight, bias, eps)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    from .nn.functional import rms_norm as f

    return f(input, normalized_shape, weight, eps)


_INTERPOLATION = ("bilinear", "nearest", "bicubic")
_PADDING = ("zeros", "border", "reflection")


def _grid_sampler(name: str, rank: int):
    def sampler(input, grid, interpolation_mode, padding_mode, align_corners):
        from .nn.functional import grid_sample

        if input.dim() != rank:
            raise RuntimeError(f"{name}(): expected {rank}D input and grid with same number of dimensions, but got "
                               f"input with sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
        modes = _INTERPOLATION[:2] if rank == 5 else _INTERPOLATION
        if not 0 <= interpolation_mode < len(modes) or not 0 <= padding_mode < len(_PADDING):
            raise RuntimeError(f"{name}(): unknown interpolation_mode {interpolation_mode} or padding_mode "
                               f"{padding_mode}")
        return grid_sample(input, grid, mode=modes[interpolation_mode], padding_mode=_PADDING[padding_mode],
                           align_corners=align_corners)

    sampler.__name__ = sampler.__qualname__ = name
    return sampler


grid_sampler_2d = _grid_sampler("grid_sampler_2d", 4)
grid_sampler_3d = _grid_sampler("grid_sampler_3d", 5)


_HALF = (_C.float16, _C.bfloat16)


def _f32(t):
    return None if t is None else t.float()


def _rounded(outs, dtype):
    return tuple(t.to(dtype) for t in outs)


def _stats(rows, eps):
    """Per-row mean and 1/sqrt(biased var + eps) of a [R, n] tensor, accumulated in float32 (float64 kept)."""
    x = rows if rows.dtype == _C.float64 else rows.float()
    mean = x.mean(-1)
    var = (x - mean.unsqueeze(-1)).square().mean(-1)
    return mean, (var + eps).rsqrt()


def native_layer_norm(input, normalized_shape, weight, bias, eps):
    from .nn.functional import layer_norm as f

    if input.dtype in _HALF:  # torch normalises in float32 and rounds once
        return _rounded(native_layer_norm(input.float(), normalized_shape, _f32(weight), _f32(bias), eps), input.dtype)
    out = f(input, normalized_shape, weight, bias, eps)
    k = len(normalized_shape)
    lead = tuple(input.shape[:input.dim() - k])
    stat_shape = lead + (1,) * k
    n = math.prod(normalized_shape)
    if input.numel() == 0:
        empty = _C.zeros(*stat_shape, dtype=input.dtype) if stat_shape else _C.zeros((), dtype=input.dtype)
        return out, empty, empty.clone()
    mean, rstd = _stats(input.reshape(-1, n), eps)
    return out, mean.reshape(*stat_shape).to(input.dtype), rstd.reshape(*stat_shape).to(input.dtype)


def native_group_norm(input, weight, bias, N, C, HxW, group, eps):
    from .nn.functional import group_norm as f

    out = f(input, group, weight, bias, eps)
    if input.numel() == 0:
        return out, _C.zeros(N, group, dtype=input.dtype), _C.zeros(N, group, dtype=input.dtype)
    mean, rstd = _stats(input.reshape(N * group, -1), eps)
    return out, mean.reshape(N, group).to(input.dtype), rstd.reshape(N, group).to(input.dtype)


def native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps):
    from .nn.functional import batch_norm as f

    if not training and (running_mean is None or running_var is None):
        raise ValueError(f"{'running_mean' if running_mean is None else 'running_var'} must be defined in "
                         "evaluation mode")
    stat_dtype = running_mean.dtype if running_mean is not None else input.dtype
    if training and input.dtype in _HALF:
        return _half_batch_norm_train(input, weight, bias, running_mean, running_var, momentum, eps, stat_dtype)
    if training:
        c = input.shape[1] if input.dim() > 1 else input.shape[0]
        moved = input.transpose(0, 1) if input.dim() > 1 else input.unsqueeze(0)
        mean, invstd = _stats(moved.reshape(c, -1), eps)
    out = f(input, running_mean, running_var, weight, bias, training, momentum, eps)
    if not training:
        return out, _C.zeros(0, dtype=stat_dtype), _C.zeros(0, dtype=stat_dtype)
    return out, mean.to(stat_dtype), invstd.to(stat_dtype)


def _half_batch_norm_train(input, weight, bias, running_mean, running_var, momentum, eps, stat_dtype):
    """torch's CPU kernel for float16/bfloat16: float32 math, the batch mean and invstd rounded to the input
    dtype before they are applied (exact against torch for float16)."""
    c = input.shape[1] if input.dim() > 1 else input.shape[0]
    moved = input.transpose(0, 1) if input.dim() > 1 else input.unsqueeze(0)
    rows = moved.reshape(c, -1).float()
    mean = rows.mean(-1)
    var = (rows - mean.unsqueeze(-1)).square().mean(-1)
    invstd = (var + eps).rsqrt()
    if running_mean is not None and running_var is not None:
        count = rows.shape[1]
        var = var * (count / max(count - 1, 1))
        running_mean.copy_((running_mean.float() * (1 - momentum) + mean * momentum).to(running_mean.dtype))
        running_var.copy_((running_var.float() * (1 - momentum) + var * momentum).to(running_var.dtype))
    mean, invstd = mean.to(input.dtype), invstd.to(input.dtype)
    shape = [1, -1] + [1] * (input.dim() - 2) if input.dim() > 1 else [-1]
    scale = invstd.float() * (1.0 if weight is None else weight.float())
    shift = (0.0 if bias is None else bias.float()) - mean.float() * scale
    out = (input.float() * scale.reshape(*shape) + shift.reshape(*shape)).to(input.dtype)
    return out, mean.to(stat_dtype), invstd.to(stat_dtype)


def _safe_softmax(input, dim, dtype=None):
    """softmax, with 0 (not NaN) along rows that are all -inf (fully masked attention rows)."""
    out = input.softmax(dim, dtype=dtype)
    if input.is_floating_point():
        out = out.masked_fill((input == float("-inf")).all(dim, keepdim=True), 0.0)
    return out


# torch.<op> for nn.functional ops whose positional arguments torch's own form shares.
(celu, selu, threshold, prelu, hardshrink, pixel_shuffle, pixel_unshuffle, channel_shuffle, cosine_similarity,
 pairwise_distance, pdist, bilinear, adaptive_avg_pool1d, max_pool1d, max_pool2d, max_pool3d, avg_pool1d,
 max_pool1d_with_indices) = (_functional(n) for n in (
    "celu", "selu", "threshold", "prelu", "hardshrink", "pixel_shuffle", "pixel_unshuffle", "channel_shuffle",
    "cosine_similarity", "pairwise_distance", "pdist", "bilinear", "adaptive_avg_pool1d", "max_pool1d",
    "max_pool2d", "max_pool3d", "avg_pool1d", "max_pool1d_with_indices"))
native_channel_shuffle = channel_shuffle


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    from .nn.functional import rrelu as f

    return f(input, lower, upper, training)


def adaptive_max_pool1d(input, output_size):
    from .nn.functional import adaptive_max_pool1d as f

    return f(input, output_size, return_indices=True)  # aten's form returns (values, indices)


def embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    from .nn.functional import embedding as f

    return f(indices, weight)  # aten's order: the table first; padding_idx only steers gradients


def batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled=True):
    from .nn.functional import batch_norm as f

    return f(input, running_mean, running_var, weight, bias, training, momentum, eps)


def instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps,
                  cudnn_enabled=True):
    from .nn.functional import instance_norm as f

    return f(input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps)


def _dropout(name: str):
    def forward(input, p, train):
        from .nn import functional

        if not 0 <= p <= 1:
            raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {p}")
        if not train or p == 0:
            return input  # aten hands back the input itself
        if name == "feature_dropout":
            if input.dim() < 2:
                raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
            keep = functional.dropout(input.new_ones(input.shape[:2] + (1,) * (input.dim() - 2)), p, True)
            return input * keep
        return getattr(functional, name)(input, p, True)

    forward.__name__ = forward.__qualname__ = name
    return forward


dropout, alpha_dropout, feature_dropout, feature_alpha_dropout = (
    _dropout(n) for n in ("dropout", "alpha_dropout", "feature_dropout", "feature_alpha_dropout"))


def _inplace(name: str, op):
    """torch.<name>_ (and F.<name>_): the out-of-place op's result written into the input."""
    def forward(input, *args, **kwargs):
        out = op(input, *args, **kwargs)
        if out is not input:
            input.copy_(out)
        return input

    forward.__name__ = forward.__qualname__ = name + "_"
    return forward


def _f_inplace(name: str):
    return _inplace(name, _functional(name))


def relu_(input):
    return input.relu_()


(celu_, selu_, threshold_, elu_, leaky_relu_, hardtanh_) = (
    _f_inplace(n) for n in ("celu", "selu", "threshold", "elu", "leaky_relu", "hardtanh"))
rrelu_ = _inplace("rrelu", rrelu)
dropout_, alpha_dropout_, feature_dropout_, feature_alpha_dropout_ = (
    _inplace(f.__name__, f) for f in (dropout, alpha_dropout, feature_dropout, feature_alpha_dropout))


def _register_aten() -> None:
    # torch.ops.aten.<name>.default for the aten ops torch code calls directly
    from .library import _OPS, CustomOpDef

    _OPS.setdefault("aten::_safe_softmax", CustomOpDef("aten::_safe_softmax", _safe_softmax))


_register_aten()

FUNCTIONS = (
    "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "layer_norm",
    "group_norm", "rms_norm", "grid_sampler_2d", "grid_sampler_3d", "native_layer_norm", "native_group_norm",
    "native_batch_norm", "celu", "selu", "threshold", "prelu", "hardshrink", "pixel_shuffle", "pixel_unshuffle",
    "channel_shuffle", "native_channel_shuffle", "cosine_similarity", "pairwise_distance", "pdist", "bilinear",
    "adaptive_avg_pool1d", "adaptive_max_pool1d", "max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d",
    "max_pool1d_with_indices", "rrelu", "embedding", "batch_norm", "instance_norm", "dropout", "alpha_dropout",
    "feature_dropout", "feature_alpha_dropout", "relu_", "celu_", "selu_", "threshold_", "rrelu_", "dropout_",
    "alpha_dropout_", "feature_dropout_", "feature_alpha_dropout_",
)
# F.<name>_ that torch.nn.functional also has
F_INPLACE = ("relu_", "celu_", "selu_", "threshold_", "rrelu_", "elu_", "leaky_relu_", "hardtanh_")
