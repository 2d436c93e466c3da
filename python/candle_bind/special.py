"""torch.special: the special functions (Rust kernels ported from torch's Math.h, through the helpers
of `_special_ops`) and torch's aliases of top-level ops under their scipy names."""

from __future__ import annotations

import candle_bind as _cb

from . import _C
from ._C import Tensor
from ._ops import _write_out
from ._special_ops import (  # noqa: F401 - torch.special's names
    binary as _binary,
    digamma,
    erfc,
    igamma as gammainc,
    igammac as gammaincc,
    lgamma as gammaln,
    mvlgamma as multigammaln,
    polygamma,
    sinc,
    unary as _unary,
)

psi = digamma


def _unary_op(name: str, half: bool = True):
    def f(input, *, out=None):
        return _unary(name, input, out=out, half=half)

    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"torch.special.{name}."
    return f


def _poly(name: str):
    def f(input, n, *, out=None):
        return _binary(name, input, n, out=out, half=False)

    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"torch.special.{name}(input, n): the degree-n polynomial at input (torch's recurrences)."
    return f


entr = _unary_op("entr")
erfcx = _unary_op("erfcx", half=False)


def ndtr(input, *, out=None):
    """The standard normal CDF, (1 + erf(x/sqrt 2))/2. Half types round after each step, as torch's
    half kernel does (its arithmetic is in the half type)."""
    if isinstance(input, Tensor) and input.dtype in (_C.float16, _C.bfloat16):
        t = (input.float() * 0.7071067811865476).to(input.dtype)
        return _write_out((t.erf() + 1) * 0.5, out)
    return _unary("ndtr", input, out=out)


log_ndtr = _unary_op("log_ndtr", half=False)
ndtri = _unary_op("ndtri", half=False)
i0 = _unary_op("i0")
i0e = _unary_op("i0e")
i1 = _unary_op("i1")
i1e = _unary_op("i1e")
bessel_j0 = _unary_op("bessel_j0", half=False)
bessel_j1 = _unary_op("bessel_j1", half=False)
bessel_y0 = _unary_op("bessel_y0", half=False)
bessel_y1 = _unary_op("bessel_y1", half=False)
modified_bessel_i0 = _unary_op("modified_bessel_i0", half=False)
modified_bessel_i1 = _unary_op("modified_bessel_i1", half=False)
modified_bessel_k0 = _unary_op("modified_bessel_k0", half=False)
modified_bessel_k1 = _unary_op("modified_bessel_k1", half=False)
scaled_modified_bessel_k0 = _unary_op("scaled_modified_bessel_k0", half=False)
scaled_modified_bessel_k1 = _unary_op("scaled_modified_bessel_k1", half=False)
spherical_bessel_j0 = _unary_op("spherical_bessel_j0", half=False)
airy_ai = _unary_op("airy_ai", half=False)

chebyshev_polynomial_t = _poly("chebyshev_polynomial_t")
chebyshev_polynomial_u = _poly("chebyshev_polynomial_u")
chebyshev_polynomial_v = _poly("chebyshev_polynomial_v")
chebyshev_polynomial_w = _poly("chebyshev_polynomial_w")
shifted_chebyshev_polynomial_t = _poly("shifted_chebyshev_polynomial_t")
shifted_chebyshev_polynomial_u = _poly("shifted_chebyshev_polynomial_u")
shifted_chebyshev_polynomial_v = _poly("shifted_chebyshev_polynomial_v")
shifted_chebyshev_polynomial_w = _poly("shifted_chebyshev_polynomial_w")
hermite_polynomial_h = _poly("hermite_polynomial_h")
hermite_polynomial_he = _poly("hermite_polynomial_he")
laguerre_polynomial_l = _poly("laguerre_polynomial_l")
legendre_polynomial_p = _poly("legendre_polynomial_p")


def zeta(input, other, *, out=None):
    """The Hurwitz zeta function zeta(x, q)."""
    return _binary("zeta", input, other, out=out, half=False)


def xlog1py(input, other, *, out=None):
    """input * log1p(other): 0 where input is 0, NaN where other is NaN (torch's order)."""
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        raise TypeError("special_xlog1py() received an invalid combination of arguments - got "
                        f"({type(input).__name__}, {type(other).__name__})")
    dtype = _C.result_type(input, other)
    if not dtype.is_floating_point:
        dtype = _C.get_default_dtype()
    like = input if isinstance(input, Tensor) else other
    x, y = (v.to(dtype) if isinstance(v, Tensor) else _C.tensor(v, dtype=dtype, device=like.device)
            for v in (input, other))
    r = _C.where(x == 0, x * 0, x * y.log1p())
    return _write_out(_C.where(y.isnan(), y + x * 0, r), out)


def erf(input, *, out=None):
    return _write_out(_cb.erf(input), out)


def erfinv(input, *, out=None):
    return _cb.erfinv(input, out=out)


def expit(input, *, out=None):
    return _write_out(_cb.sigmoid(input), out)


def exp2(input, *, out=None):
    return _write_out(_cb.exp2(input), out)


def expm1(input, *, out=None):
    return _write_out(_cb.expm1(input), out)


def log1p(input, *, out=None):
    return _write_out(_cb.log1p(input), out)


def logit(input, eps=None, *, out=None):
    return _write_out(_cb.logit(input, eps), out)


def round(input, *, decimals=0, out=None):  # noqa: A001
    return _write_out(_cb.round(input, decimals=decimals) if decimals else _cb.round(input), out)


def xlogy(input, other, *, out=None):
    return _write_out(_cb.xlogy(input, other), out)


def logsumexp(input, dim, keepdim=False, *, out=None):
    return _write_out(_cb.logsumexp(input, dim, keepdim=keepdim), out)


def softmax(input, dim, *, dtype=None):
    return _cb.softmax(input, dim, dtype=dtype)


def log_softmax(input, dim, *, dtype=None):
    return _cb.log_softmax(input, dim, dtype=dtype)


__all__ = [
    "airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "chebyshev_polynomial_t",
    "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w", "digamma", "entr", "erf",
    "erfc", "erfcx", "erfinv", "exp2", "expit", "expm1", "gammainc", "gammaincc", "gammaln",
    "hermite_polynomial_h", "hermite_polynomial_he", "i0", "i0e", "i1", "i1e", "laguerre_polynomial_l",
    "legendre_polynomial_p", "log1p", "log_ndtr", "log_softmax", "logit", "logsumexp", "modified_bessel_i0",
    "modified_bessel_i1", "modified_bessel_k0", "modified_bessel_k1", "multigammaln", "ndtr", "ndtri",
    "polygamma", "psi", "round", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
    "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
    "shifted_chebyshev_polynomial_w", "sinc", "softmax", "spherical_bessel_j0", "xlog1py", "xlogy", "zeta",
]
