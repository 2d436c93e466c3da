"""Elementwise math torch has as kernels, written here from its definition over existing tensor ops
(atan2, hypot, logaddexp, inverse hyperbolics, float_power, fmax/fmin, logcumsumexp). A family module.
"""

from __future__ import annotations

import math

from . import _C
from ._C import Tensor
from ._ops import _need_tensor, broadcast_tensors
from ._opmath import opmath
from ._tensor import not_implemented


def _float(x):
    return x if x.is_floating_point() else x.float()


@opmath
def atan2(input, other):
    _need_tensor("atan2", "input", 1, input)
    _need_tensor("atan2", "other", 2, other)
    y, x = broadcast_tensors(_float(input), _float(other) if isinstance(other, Tensor) else input.new_tensor(other))
    r = (y / x).atan()
    pi = math.pi
    r = _C.where(x < 0, _C.where(y >= 0, r + pi, r - pi), r)
    return _C.where((x == 0) & (y == 0), y * 0, r)  # signed zeros are not told apart


def arctan2(input, other):
    _need_tensor("arctan2", "input", 1, input)
    _need_tensor("arctan2", "other", 2, other)
    return atan2(input, other)


@opmath
def hypot(input, other):
    _need_tensor("hypot", "other", 2, other)
    a, b = broadcast_tensors(input.abs(), other.abs())
    hi, lo = a.maximum(b), a.minimum(b)
    ratio = lo / _C.where(hi == 0, _C.ones_like(hi), hi)
    out = hi * (ratio * ratio + 1).sqrt()  # scaled by the larger side: no overflow in the squares
    return _C.where(a.isinf() | b.isinf(), _C.full_like(out, math.inf), out)  # hypot(inf, nan) is inf


@opmath
def logaddexp(input, other):
    _need_tensor("logaddexp", "other", 2, other)
    m = input.maximum(other)
    out = m + (-(input - other).abs()).exp().log1p()
    return _C.where(m.isinf() & (input == other), input, out)  # inf - inf would be NaN


@opmath
def logaddexp2(input, other):
    _need_tensor("logaddexp2", "other", 2, other)
    return logaddexp(input * math.log(2.0), other * math.log(2.0)) / math.log(2.0)


@opmath
def exp2(input):
    return (_float(input) * math.log(2.0)).exp()


def frac(input):
    return input - input.trunc()


def sgn(input):
    return input.sign()


@opmath
def asinh(input):
    x = _float(input)
    a = x.abs()
    return x.sign() * (a + (a * a + 1).sqrt()).log()


@opmath
def acosh(input):
    x = _float(input)
    return (x + (x * x - 1).sqrt()).log()


@opmath
def atanh(input):
    x = _float(input)
    return 0.5 * (x.log1p() - (-x).log1p())


arcsinh, arccosh, arctanh = asinh, acosh, atanh


def float_power(input, exponent):
    if not isinstance(input, Tensor) and not isinstance(exponent, Tensor):
        raise TypeError("float_power() received an invalid combination of arguments - got "
                        f"({type(input).__name__}, {type(exponent).__name__})")
    base = input.double() if isinstance(input, Tensor) else _C.tensor(input, dtype=_C.float64)
    return base.pow(exponent.double() if isinstance(exponent, Tensor) else exponent)


def float_power_(self, exponent):
    # The result is float64, which only a float64 tensor can hold in place.
    if self.dtype != _C.float64:
        from ._tensor import dtype_title

        raise RuntimeError(f"the base given to float_power_ has dtype {dtype_title(self.dtype)} but the operation's "
                           "result requires dtype Double")
    self._assign_result(float_power(self, exponent), "float_power_")
    return self


def fmax(input, other):
    _need_tensor("fmax", "other", 2, other)
    return _C.where(input.isnan(), other, _C.where(other.isnan(), input, input.maximum(other)))


def fmin(input, other):
    _need_tensor("fmin", "other", 2, other)
    return _C.where(input.isnan(), other, _C.where(other.isnan(), input, input.minimum(other)))


def bitwise_not(input):
    return ~input


@opmath
def logcumsumexp(input, dim):
    if not input.is_floating_point():
        raise not_implemented("logcumsumexp_out_cpu", input.dtype)
    m = input.amax(dim, keepdim=True)
    m = _C.where(m.isinf(), m * 0, m)
    return (input - m).exp().cumsum(dim).log() + m


# Tensor methods torch has under the same names (set where the Rust Tensor has none).
METHODS = (
    "atan2", "arctan2", "hypot", "logaddexp", "logaddexp2", "exp2", "frac", "sgn", "asinh", "acosh", "atanh",
    "arcsinh", "arccosh", "arctanh", "float_power", "fmax", "fmin", "bitwise_not", "logcumsumexp",
    "float_power_",
)
FUNCTIONS = (
    "atan2", "arctan2", "hypot", "logaddexp", "logaddexp2", "exp2", "frac", "sgn", "asinh", "acosh", "atanh",
    "arcsinh", "arccosh", "arctanh", "float_power", "fmax", "fmin", "bitwise_not", "logcumsumexp",
)
INPLACE = (
    "atan2", "hypot", "frac", "exp2", "asinh", "acosh", "atanh", "logcumsumexp", "bitwise_not", "sgn",
)
