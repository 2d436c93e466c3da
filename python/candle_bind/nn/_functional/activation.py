"""Non-linear activation functionals: relu family, gelu/silu/mish, shrinks, softmax family, snake."""

from __future__ import annotations

from ... import _C
from ..._tensor import dtype_title, need_float, not_implemented
# Functionals call each other as F.x, looked up at call time as the one-file module's globals were:
# a monkeypatched nn.functional.x reaches these callers too.
from .. import functional as F
from ._utils import _maybe_inplace


def relu(input, inplace=False):
    if input.dtype == _C.bool:
        raise NotImplementedError("Boolean inputs not supported for relu")
    return input.relu_() if inplace else input.relu()


def relu6(input, inplace=False):
    return F.hardtanh(input, 0.0, 6.0, inplace)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    if input.dtype == _C.bool:
        raise NotImplementedError("Bool inputs not supported for hardtanh")
    if not input.is_floating_point():  # torch casts the bounds to the integer dtype (-1.5 -> -1)
        min_val, max_val = int(min_val), int(max_val)
    return input.clamp_(min_val, max_val) if inplace else input.clamp(min_val, max_val)


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
    if inplace and _C.activation_(input, "silu"):  # one pass over the input's memory
        return input
    return _maybe_inplace(input, _C.silu(input), inplace)


def mish(input, inplace=False):
    need_float(input, "mish_cpu")
    if inplace and _C.activation_(input, "mish"):
        return input
    return _maybe_inplace(input, _C.mish(input), inplace)


def sigmoid(input):
    return input.sigmoid()


def tanh(input):
    return input.tanh()


def hardsigmoid(input, inplace=False):
    need_float(input, "hardsigmoid_cpu")
    if inplace and _C.activation_(input, "hardsigmoid"):
        return input
    return _maybe_inplace(input, _C.hardsigmoid(input), inplace)


def hardswish(input, inplace=False):
    need_float(input, "hardswish_cpu")
    if inplace and _C.activation_(input, "hardswish"):
        return input
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
    if not input.is_floating_point() and input.dtype != _C.bool:  # the scalars in the integer dtype, as torch
        out = _C.where(input <= int(threshold), _C.full_like(input, int(value)), input)
        return _maybe_inplace(input, out, inplace)
    return _maybe_inplace(input, _C.threshold(input, threshold, value), inplace)


def prelu(input, weight):
    """max(0, x) + weight · min(0, x), weight broadcast over the channel dim (dim 1)."""
    if input.dtype != weight.dtype:
        raise RuntimeError(f"prelu: Type promoting not supported. Got {dtype_title(input.dtype)} and {dtype_title(weight.dtype)}")
    need_float(input, "prelu_cpu")
    if weight.numel() != 1 and (input.dim() < 1 or weight.numel() != (input.shape[1] if input.dim() >= 2 else input.shape[0])):
        raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found parameter numbers = {weight.numel()} and channel size = {input.shape[1] if input.dim() >= 2 else 1}.")
    w = weight.reshape(()) if weight.numel() == 1 else weight  # a 0-d input stays 0-d
    if weight.numel() != 1 and input.dim() >= 2:
        w = weight.reshape(-1, *([1] * (input.dim() - 2)))
    return _C.where(input > 0, input, input * w)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    if lower > upper:
        raise RuntimeError("Lower bound should be less than or equal to the upper bound")
    need_float(input, "rrelu_with_noise_out_cpu" if training else "leaky_relu_cpu")
    if training:
        a = _C.empty(*input.shape, dtype=input.dtype, device=input.device).uniform_(lower, upper)
        return _maybe_inplace(input, _C.where(input >= 0, input, input * a), inplace)
    return F.leaky_relu(input, (lower + upper) / 2, inplace)


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
