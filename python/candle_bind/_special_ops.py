"""torch's top-level special functions (digamma, lgamma, erfc, polygamma, mvlgamma, igamma, igammac,
sinc): Rust kernels ported from torch's Math.h (`_C.special_unary` / `_C.special_binary`) behind torch's
dtype rules. A family module; `candle_bind.special` (torch.special) builds on the helpers here.
"""

from __future__ import annotations

import math

from . import _C
from ._C import Tensor
from ._ops import _need_tensor, _write_out
from ._tensor import not_implemented

_HALF = (_C.float16, _C.bfloat16)


def _float_input(input, kernel: str, half: bool = True):
    """`input` in the dtype the kernel computes in: integers and bools go to the default float dtype; a
    half type raises torch's NotImplementedError where torch has no half kernel (`half=False`)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"{kernel}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    if input.is_complex():
        raise not_implemented(f"{kernel}_cpu", input.dtype)
    if not input.is_floating_point():
        return input.to(_C.get_default_dtype())
    if not half and input.dtype in _HALF:
        raise not_implemented(f"{kernel}_cpu", input.dtype)
    return input


def unary(kernel: str, input, *, out=None, half: bool = True, op: str | None = None):
    """The Rust kernel `op` (default: `kernel`) of one tensor, torch's dtype rules, `out=`."""
    x = _float_input(input, kernel, half)
    return _write_out(_C.special_unary(x, op or kernel), out)


def binary(kernel: str, a, b, *, out=None, half: bool = True, ints: bool = True, op: str | None = None):
    """The Rust kernel of two broadcast operands (tensors or numbers) in their promoted float dtype.
    `ints=False`: an integer result type raises NotImplementedError, as torch's igamma."""
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        raise TypeError(f"{kernel}(): expected at least one Tensor argument")
    like = a if isinstance(a, Tensor) else b
    dtype = _C.result_type(a, b)
    if dtype.is_complex:
        raise not_implemented(f"{kernel}_cpu", dtype)
    if not dtype.is_floating_point:
        if not ints:
            raise not_implemented(f"{kernel}_cpu", dtype)
        dtype = _C.get_default_dtype()
    if not half and dtype in _HALF:
        raise not_implemented(f"{kernel}_cpu", dtype)
    a, b = (x.to(dtype) if isinstance(x, Tensor) else _C.tensor(x, dtype=dtype, device=like.device) for x in (a, b))
    return _write_out(_C.special_binary(a, b, op or kernel), out)


def digamma(input, *, out=None):
    return unary("digamma", input, out=out)


def lgamma(input, *, out=None):
    return unary("lgamma", input, out=out)


def erfc(input, *, out=None):
    return unary("erfc", input, out=out)


def sinc(input, *, out=None):
    return unary("sinc", input, out=out)


def polygamma(n, input, *, out=None):
    if not isinstance(n, int) or isinstance(n, bool):
        raise TypeError(f"polygamma(): argument 'n' (position 1) must be int, not {type(n).__name__}")
    x = _float_input(input, "polygamma")
    return _write_out(_C.special_unary(x, "polygamma", n), out)


def _polygamma_method(self, n):
    return polygamma(n, self)


def mvlgamma(input, p, *, out=None):
    """The multivariate log-gamma: sum_j lgamma(x - j/2) + p(p-1)/4·log(pi), summed as torch sums it."""
    if not isinstance(p, int) or isinstance(p, bool):
        raise TypeError(f"mvlgamma(): argument 'p' (position 2) must be int, not {type(p).__name__}")
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    x = _float_input(input, "mvlgamma")
    args = _C.arange(-p * 0.5 + 0.5, 0.5, 0.5, dtype=x.dtype, device=x.device)
    terms = _C.special_unary(args + x.unsqueeze(-1), "lgamma")
    return _write_out(terms.sum(-1) + p * (p - 1) * math.log(math.pi) / 4, out)


def igamma(input, other, *, out=None):
    _need_tensor("igamma", "input", 1, input)  # torch has no Scalar overloads here
    _need_tensor("igamma", "other", 2, other)
    return binary("igamma", input, other, out=out, ints=False)


def igammac(input, other, *, out=None):
    _need_tensor("igammac", "input", 1, input)  # torch has no Scalar overloads here
    _need_tensor("igammac", "other", 2, other)
    return binary("igammac", input, other, out=out, ints=False)


FUNCTIONS = ("digamma", "lgamma", "erfc", "sinc", "polygamma", "mvlgamma", "igamma", "igammac")
METHODS = ("digamma", "lgamma", "erfc", "sinc", "mvlgamma", "igamma", "igammac")
INPLACE = METHODS + ("polygamma",)


def _install() -> None:
    if not hasattr(Tensor, "polygamma"):
        Tensor.polygamma = _polygamma_method


_install()
