"""Integer and floating-point representation ops: gcd/lcm, bitwise shifts (and the << >> operators), frexp,
ldexp, nextafter, hash_tensor. Shifts and gcd are exact integer arithmetic over tensor ops; frexp and
nextafter read the float bits, which need numpy on the whole buffer (Tensor.view(dtype) is not there yet).
A family module.
"""

from __future__ import annotations

import builtins
import math
import numbers

from . import _C
from . import return_types
from ._C import Tensor
from ._ops import _need_tensor, broadcast_tensors

_INTS = {_C.uint8: 8, _C.int8: 8, _C.int16: 16, _C.int32: 32, _C.int64: 64}


def _dtype_name(dtype) -> str:
    return str(dtype).split(".")[-1].capitalize()


def _tensors(name: str, input, other) -> None:
    _need_tensor(name, "input", 1, input)
    _need_tensor(name, "other", 2, other)


def _empty(a, b, dtype):
    """The broadcast result of an elementwise op with no elements (integer floor division rejects those)."""
    shape = broadcast_tensors(a, b)[0].shape
    return _C.zeros(tuple(shape), dtype=dtype) if math.prod(shape) == 0 else None


def _int_pair(input, other, name: str):
    """Both operands as tensors of their promoted integer dtype (a Python int takes the tensor's)."""
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        raise TypeError(f"{name}() received an invalid combination of arguments - got ({type(input).__name__}, "
                        f"{type(other).__name__}), but expected (Tensor input, Tensor other)")
    if not isinstance(input, Tensor):
        input = _C.tensor(input, dtype=other.dtype if isinstance(other, Tensor) else _C.int64)
    if not isinstance(other, Tensor):
        if isinstance(other, builtins.bool) or not isinstance(other, numbers.Integral):
            dtype = _C.result_type(input, other)
        else:
            dtype = input.dtype
        other = _C.tensor(other, dtype=dtype)
    dtype = _C.promote_types(input.dtype, other.dtype)
    if dtype not in _INTS:
        raise NotImplementedError(f"\"{name}_cpu\" not implemented for '{_dtype_name(dtype)}'")
    return input.to(dtype), other.to(dtype), dtype


# ----------------------------------------------------------------------------------------------- gcd


def gcd(input, other):
    """Euclid's algorithm over whole tensors: |a|, |b| until every remainder is 0 (gcd(0, 0) = 0)."""
    _tensors("gcd", input, other)
    a, b, dtype = _int_pair(input, other, "gcd")
    a, b = broadcast_tensors(a.long().abs(), b.long().abs())
    zero = _C.zeros_like(a)
    while a.numel() and builtins.bool((a != 0).any()):
        nz = a != 0
        a, b = _C.where(nz, b % _C.where(nz, a, _C.ones_like(a)), zero), _C.where(nz, a, b)
    return b.to(dtype)


def lcm(input, other):
    """|a / gcd(a, b) * b|, 0 where the gcd is 0 (torch's formula, wrapping as its integers do)."""
    _tensors("lcm", input, other)
    a, b, dtype = _int_pair(input, other, "lcm")
    if (e := _empty(a, b, dtype)) is not None:
        return e
    g = gcd(a, b).long()
    a, b = a.long(), b.long()
    out = (a // _C.where(g == 0, _C.ones_like(g), g) * b).abs()
    return _C.where(g == 0, _C.zeros_like(out), out).to(dtype)


# -------------------------------------------------------------------------------------------- shifts


def _pow2(s):
    """2**s for int64 s in [0, 62], exactly."""
    return _C.full((), 2.0, dtype=_C.float64).pow(s.double()).long()


def bitwise_left_shift(input, other):
    """a << b in the operands' integer dtype; 0 where b is negative or not below the bit width."""
    a, b, dtype = _int_pair(input, other, "lshift")
    bits = _INTS[dtype]
    a64, b64 = a.long(), b.long()
    out_of_range = (b64 < 0) | (b64 >= bits)
    s = _C.where(out_of_range, _C.zeros_like(b64), b64)
    # two steps so a shift by 63 stays in int64 (multiplication wraps as the shift does)
    low = s.clamp(max=62)
    r = a64 * _pow2(low) * _pow2(s - low)
    return _C.where(out_of_range, _C.zeros_like(r), r).to(dtype)


def bitwise_right_shift(input, other):
    """Arithmetic a >> b; a negative or too-large b shifts by the width (sign fill; 0 for uint8)."""
    a, b, dtype = _int_pair(input, other, "rshift")
    if (e := _empty(a, b, dtype)) is not None:
        return e
    top = 8 if dtype == _C.uint8 else _INTS[dtype] - 1
    a64, b64 = a.long(), b.long()
    s = _C.where((b64 < 0) | (b64 >= top), _C.full_like(b64, top), b64)
    low = s.clamp(max=62)
    r = a64.floor_divide(_pow2(low))
    r = _C.where(s > 62, _C.where(a64 < 0, _C.full_like(r, -1), _C.zeros_like(r)), r)
    return r.to(dtype)


def _lshift(self, other):
    if not isinstance(other, (Tensor, numbers.Integral)):
        return NotImplemented
    _no_float(self, other, "lshift")
    return bitwise_left_shift(self, other)


def _rshift(self, other):
    if not isinstance(other, (Tensor, numbers.Integral)):
        return NotImplemented
    _no_float(self, other, "rshift")
    return bitwise_right_shift(self, other)


def _no_float(self, other, name):
    for t in (self, other):
        if isinstance(t, Tensor) and not t.dtype in _INTS and t.dtype != _C.bool:
            raise NotImplementedError(f"\"{name}_cpu\" not implemented for '{_dtype_name(t.dtype)}'")


def _rlshift(self, other):
    return bitwise_left_shift(_C.tensor(other, dtype=self.dtype), self)


def _rrshift(self, other):
    return bitwise_right_shift(_C.tensor(other, dtype=self.dtype), self)


def _ilshift(self, other):
    self._assign_result(_lshift(self, other), "__ilshift__")
    return self


def _irshift(self, other):
    self._assign_result(_rshift(self, other), "__irshift__")
    return self


# ------------------------------------------------------------------------------------- float bits


def _need_float(input, name: str):
    if not input.is_floating_point():
        raise RuntimeError(f"torch.{name}() only supports floating-point dtypes")


def _np(t):
    """The values as a numpy array of the same float type (bfloat16 as float32, exact)."""
    return (t.float() if t.dtype == _C.bfloat16 else t).contiguous().numpy()


def frexp(input):
    """(mantissa in [0.5, 1), exponent as int32) with input = mantissa * 2**exponent."""
    _need_float(input, "frexp")
    import numpy as np

    m, e = np.frexp(_np(input))
    shape = tuple(input.shape)
    return return_types.frexp(_C.from_numpy(np.ascontiguousarray(m)).reshape(shape).to(input.dtype),
                              _C.from_numpy(np.ascontiguousarray(e, dtype=np.int32)).reshape(shape))


def ldexp(input, other):
    """input * 2**other (torch's definition: its dtype rules too)."""
    _tensors("ldexp", input, other)
    dtype = _C.result_type(input, other)
    if not dtype.is_floating_point:  # integers and bools give the default float dtype
        from . import get_default_dtype

        dtype = get_default_dtype()
    return input.to(dtype) * _C.full((), 2.0, dtype=dtype).pow(other.to(dtype))


def nextafter(input, other):
    """The next representable value after input towards other, in the promoted float dtype."""
    _tensors("nextafter", input, other)
    dtype = _C.promote_types(input.dtype, other.dtype)
    if dtype not in (_C.float16, _C.bfloat16, _C.float32, _C.float64):
        raise NotImplementedError(f"\"nextafter_cpu\" not implemented for '{_dtype_name(dtype)}'")
    import numpy as np

    a, b = np.broadcast_arrays(_np(input.to(dtype)), _np(other.to(dtype)))
    shape = a.shape
    if dtype != _C.bfloat16:
        return _C.from_numpy(np.ascontiguousarray(np.nextafter(a, b))).reshape(shape).to(dtype)
    # bfloat16 is float32's top 16 bits: step those as an integer (sign-magnitude)
    bits = (np.ascontiguousarray(a, dtype=np.float32).view(np.uint32) >> 16).astype(np.int32)
    up = (a < b) == (a > 0)
    step = np.where(a == 0, (np.signbit(b).astype(np.int32) << 15) | 1, np.where(up, bits + 1, bits - 1))
    bits = np.where((a == b) | np.isnan(a) | np.isnan(b), 0, step)
    out = (bits.astype(np.uint32) << 16).view(np.float32)
    out = np.where(a == b, b, np.where(np.isnan(a) | np.isnan(b), np.float32("nan"), out))
    return _C.from_numpy(np.ascontiguousarray(out, dtype=np.float32)).reshape(shape).to(_C.bfloat16)


# ------------------------------------------------------------------------------------------- arange


def arange(start=None, *args, **kwargs):
    """torch.arange; into an integer dtype with fractional bounds, as torch: the length from the float
    bounds, the values from the bounds truncated to integers (arange(0, 4, 0.5, dtype=int64) is 8 zeros)."""
    from ._ops import arange as native

    dtype = kwargs.get("dtype")
    bounds = ((start,) if start is not None else ()) + args
    if "end" in kwargs:
        bounds = bounds + (kwargs["end"],) if bounds else (0, kwargs["end"])
    if "step" in kwargs:
        bounds = bounds + (kwargs["step"],)
    if (dtype not in _INTS or not 1 <= len(bounds) <= 3
            or not builtins.any(isinstance(v, float) for v in bounds)):
        return native(start, *args, **kwargs)
    lo, hi, step = (0, bounds[0], 1) if len(bounds) == 1 else (bounds[0], bounds[1], bounds[2] if len(bounds) > 2 else 1)
    lo, hi, step = float(lo), float(hi), float(step)
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (step > 0 and hi < lo) or (step < 0 and hi > lo):
        raise RuntimeError("upper bound and larger bound inconsistent with step sign")
    import math

    n = math.ceil((hi - lo) / step)
    rest = {k: v for k, v in kwargs.items() if k not in ("end", "step", "dtype")}
    out = native(n, dtype=_C.int64, **rest) * int(step) + int(lo)
    return out.to(dtype)


def hash_tensor(input, dim=(), *, keepdim=False, mode=0, out=None):
    # torch's result is a uint64 tensor, a dtype candle_bind cannot hold yet
    raise NotImplementedError("torch.hash_tensor is not supported by candle_bind yet (its result is a uint64 tensor)")


FUNCTIONS = ("arange", "gcd", "lcm", "bitwise_left_shift", "bitwise_right_shift", "frexp", "ldexp", "nextafter", "hash_tensor")
METHODS = ("gcd", "lcm", "bitwise_left_shift", "bitwise_right_shift", "frexp", "ldexp", "nextafter", "hash_tensor")
INPLACE = ("gcd", "lcm", "bitwise_left_shift", "bitwise_right_shift", "ldexp", "nextafter", "heaviside", "addr")


def _install_operators() -> None:
    for name, fn in (("__lshift__", _lshift), ("__rshift__", _rshift), ("__rlshift__", _rlshift),
                     ("__rrshift__", _rrshift), ("__ilshift__", _ilshift), ("__irshift__", _irshift)):
        if not hasattr(Tensor, name):
            setattr(Tensor, name, fn)


_install_operators()
