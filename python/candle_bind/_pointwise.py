"""Elementwise torch functions that are other ops under torch's alternative names (`greater`,
`absolute`, `arccos`, ...) or short compositions (`fmod`, `xlogy`, `logit`, `copysign`, ...).
Exported as `candle_bind.<name>`;
those torch also has as methods become Tensor methods (with their in-place `_` forms).
"""

from __future__ import annotations

import math

from . import _C
from ._C import Tensor
from ._ops import _write_out
from ._opmath import opmath

# torch's alternative names: alias -> the method it names.
ALIASES = {
    "greater": "gt", "greater_equal": "ge", "less": "lt", "less_equal": "le", "not_equal": "ne",
    "absolute": "abs", "arccos": "acos", "arcsin": "asin", "arctan": "atan",
}


def _tensor_like(x, like: Tensor):
    return x if isinstance(x, Tensor) else _C.tensor(x, dtype=like.dtype if not isinstance(x, float)
                                                     or like.is_floating_point() else _C.float32)


@opmath
def fmod(input, other):
    """C's fmod: the remainder of truncated division, with the sign of `input`."""
    return input - input.div(other, rounding_mode="trunc") * other


def xlogy(input, other):
    """input * log(other), 0 where input is 0 (unless other is NaN)."""
    if not isinstance(input, Tensor):
        input = _tensor_like(input, other)
    other = other if isinstance(other, Tensor) else input.new_tensor(float(other))
    out = input * other.log()
    return out.masked_fill((input == 0) & ~other.isnan(), 0.0)


def logit(input, eps=None):
    if eps is not None and not isinstance(eps, (int, float)):
        raise TypeError(f"logit(): argument 'eps' (position 2) must be float, not {type(eps).__name__}")
    x = input if input.is_floating_point() else input.float()
    if eps is not None:  # torch's kernel: x < eps -> eps, else x > 1 - eps -> 1 - eps (also where eps > 0.5)
        lo, hi = x.new_tensor(float(eps)), x.new_tensor(1.0 - eps)
        x = _C.where(x < lo, lo, _C.where(x > hi, hi, x))
    return (x / (1 - x)).log()


def rsub(input, other, *, alpha=1):
    """other - alpha * input."""
    if not isinstance(input, Tensor):  # torch has no Scalar `input` overload (torch.rsub(2, t))
        raise TypeError(f"rsub(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    return other - (input * alpha if alpha != 1 else input)


def deg2rad(input):
    return (input if input.is_floating_point() else input.float()) * (math.pi / 180.0)


def rad2deg(input):
    return (input if input.is_floating_point() else input.float()) * (180.0 / math.pi)


def signbit(input):
    """True where the sign bit is set (negative numbers and -0.0)."""
    if not input.is_floating_point():
        return input < 0
    return (input < 0) | ((input == 0) & ((1.0 / input) < 0))


def copysign(input, other):
    """|input| with the sign of `other` (-0.0 counts as negative)."""
    x = input if input.is_floating_point() else input.float()
    sign = signbit(other if isinstance(other, Tensor) else x.new_tensor(float(other)))
    mag = x.abs()
    return _C.where(sign, -mag, mag)


def heaviside(input, values):
    if not isinstance(input, Tensor):
        raise TypeError(f"heaviside(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    if not isinstance(values, Tensor):
        raise TypeError(f"heaviside(): argument 'values' (position 2) must be Tensor, not {type(values).__name__}")
    if input.dtype != values.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes.")
    return _C.where(input == 0, values, (input > 0).to(input.dtype))


def addr(input, vec1, vec2, *, beta=1, alpha=1, out=None):
    """beta·input + alpha·outer(vec1, vec2)."""
    if not (input.is_floating_point() or vec1.is_floating_point() or vec2.is_floating_point()):
        for name, v in (("beta", beta), ("alpha", alpha)):
            if isinstance(v, float):
                raise RuntimeError(f"For integral input tensors, argument {name} must not be a floating point number.")
    prod = vec1.outer(vec2)
    if prod.dtype == _C.bool:  # torch's bool addr: (beta and input) or (alpha and vec1 ⊗ vec2)
        prod = prod if alpha else prod & False
        return _write_out(prod | input if beta else prod.expand(*(input + prod).shape), out)
    prod = prod * alpha if alpha != 1 else prod
    return _write_out(prod if beta == 0 else prod + (input if beta == 1 else input * beta), out)


def i0(input, *, out=None):
    """The modified Bessel function of the first kind, order 0: numpy's Cephes Chebyshev series (torch's
    own algorithm) in float64, rounded to the input's floating dtype (integers give the default dtype)."""
    import numpy as np

    dtype = input.dtype if input.is_floating_point() else _C.get_default_dtype()
    values = np.asarray(np.i0(input.detach().cpu().double().numpy()), dtype=np.float64)
    return _write_out(_C.from_numpy(values).to(device=input.device, dtype=dtype), out)


_ERFINV_CENTRAL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503,
                   -0.00417768164, 0.246640727, 1.50140941)
_ERFINV_TAIL = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613,
                0.00943887047, 1.00167406, 2.83297682)


def erfinv(input, *, out=None):
    """The inverse error function: Giles' polynomial start refined by two Newton steps on erf, in float64
    (timm's trunc_normal_ calls it); ±1 give ±inf, outside [-1, 1] NaN, as torch."""
    dtype = input.dtype if input.is_floating_point() else _C.get_default_dtype()
    x = input.double()
    w = -((1.0 - x) * (1.0 + x)).log()
    central, tail = w - 2.5, w.clamp_min(0.0).sqrt() - 3.0
    p, q = central * 0.0 + _ERFINV_CENTRAL[0], tail * 0.0 + _ERFINV_TAIL[0]
    for a, b in zip(_ERFINV_CENTRAL[1:], _ERFINV_TAIL[1:]):
        p, q = a + p * central, b + q * tail
    y = _C.where(w < 5.0, p, q) * x
    finite = x.abs() < 1.0
    for _ in range(2):
        step = (y.erf() - x) / ((2.0 / math.sqrt(math.pi)) * (-(y * y)).exp())
        y = _C.where(finite, y - step, y)
    y = _C.where(x.abs() == 1.0, x * math.inf, y)
    return _write_out(_C.where(x.abs() > 1.0, x * math.nan, y).to(dtype), out)


METHODS = ("fmod", "xlogy", "logit", "deg2rad", "rad2deg", "signbit", "copysign", "heaviside", "addr", "i0", "erfinv")
FUNCTIONS = METHODS + ("rsub",)


def _install() -> None:
    from ._tensor import _make_inplace

    for alias, name in ALIASES.items():
        setattr(Tensor, alias, getattr(Tensor, name))
        if hasattr(Tensor, name + "_"):
            setattr(Tensor, alias + "_", getattr(Tensor, name + "_"))
    for name in METHODS:
        if not hasattr(Tensor, name):
            setattr(Tensor, name, globals()[name])
    for name in ("fmod", "xlogy", "logit", "deg2rad", "rad2deg", "copysign", "i0", "erfinv", "addr"):
        if not hasattr(Tensor, name + "_"):
            setattr(Tensor, name + "_", _make_inplace(name))


_install()
