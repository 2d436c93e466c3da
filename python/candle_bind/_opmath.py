"""torch's "opmath" for half precision: float16/bfloat16 inputs are computed in float32 and the result is
rounded once, at the end (as torch's CPU kernels do). A composite written over tensor ops would otherwise
round after every step and drift past torch's half tolerance.

`opmath(fn)` wraps such a composite; float32/float64/int inputs take the unwrapped path (one dtype check).
Not for functions that write into a half argument (running stats, max_norm renorm): they would write the copy.
This module also puts native methods that round per step (lerp, log_softmax) behind the same rule.
"""

from __future__ import annotations

import contextvars
import functools

from . import _C
from ._C import Tensor

_HALF = (_C.float16, _C.bfloat16)
_F32 = _C.float32
# The half dtype an opmath call is computing for: kernels that keep some operands (interpolation weights)
# in the input's dtype round those to it.
_ACTIVE = contextvars.ContextVar("candle_bind_opmath_half", default=None)


def rounding_dtype():
    """The half dtype of the opmath call under way (None outside one)."""
    return _ACTIVE.get()


def round_to(rows, dtype):
    """Lists of Python floats rounded to `dtype` (float16/bfloat16) and back, as a kernel storing them does."""
    flat = [v for r in rows for v in r]
    vals = iter(_C.tensor(flat, dtype=_F32).to(dtype).float().tolist()) if flat else iter(())
    return [[next(vals) for _ in r] for r in rows]


def _half_dtype(args, kwargs):
    """The half dtype the call computes in (its result dtype), or None where it is not a half call: no half
    tensor, two different half dtypes, or a wider float tensor that sets the result dtype."""
    for a in args:  # the common case first: no half tensor at all
        if isinstance(a, Tensor) and a.dtype in _HALF:
            break
    else:
        if not any(isinstance(a, Tensor) and a.dtype in _HALF for a in kwargs.values()):
            return None
    half = None
    half_dims = False  # a half tensor with dims: 0-dim wider floats do not promote it (torch's rule)
    wider_dims = wider_scalar = False
    for a in (*args, *kwargs.values()):
        if not isinstance(a, Tensor):
            continue
        dt = a.dtype
        if dt in _HALF:
            if half is not None and dt != half:
                return None
            half = dt
            half_dims = half_dims or a.dim() > 0
        elif a.is_floating_point() or a.is_complex():
            if a.dim() > 0:
                wider_dims = True
            else:
                wider_scalar = True
    if half is None or wider_dims or (wider_scalar and not half_dims):
        return None
    return half


def _up(a, half):
    return a.float() if isinstance(a, Tensor) and a.dtype == half else a


def _down(r, half):
    if isinstance(r, Tensor):
        return r.to(half) if r.dtype == _F32 else r
    if isinstance(r, tuple):
        items = [_down(x, half) for x in r]
        return type(r)(*items) if hasattr(r, "_fields") else type(r)(items)
    if isinstance(r, list):
        return [_down(x, half) for x in r]
    return r


def call(fn, args, kwargs):
    """fn(*args, **kwargs), in float32 where the call is a half one."""
    half = _half_dtype(args, kwargs)
    if half is None or kwargs.get("dtype") is not None:  # an explicit result dtype: the function's own rule
        return fn(*args, **kwargs)
    out = kwargs.pop("out", None)
    token = _ACTIVE.set(half)
    try:
        r = _down(fn(*[_up(a, half) for a in args], **{k: _up(v, half) for k, v in kwargs.items()}), half)
    finally:
        _ACTIVE.reset(token)
    if out is not None:
        from ._ops import _write_out

        return _write_out(r, out)
    return r


def opmath(fn):
    """Decorator: half inputs computed in float32, the result rounded back once."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return call(fn, args, kwargs)

    return wrapper


def _log_softmax(native):
    """torch's half log_softmax: float32 throughout, except that over the last dim its kernel keeps the sum
    of exponentials and its log in a half buffer (so exp-sums near 1 round to it, as in torch)."""

    def log_softmax(self, dim=None, *args, **kwargs):
        half = self.dtype
        if half not in _HALF or kwargs.get("dtype") is not None or args or dim is None or self.numel() == 0:
            return native(self, dim, *args, **kwargs)
        x = self.float()
        if dim not in (-1, self.dim() - 1):
            return native(x, dim, **kwargs).to(half)
        m = x.amax(-1, keepdim=True)  # an infinite max makes the row NaN, as torch's
        lse = (x - m).exp().sum(-1, keepdim=True).to(half).float().log().to(half).float()
        return (x - m - lse).to(half)

    return log_softmax


def _self_opmath(native):
    """opmath for a native method whose tensors share self's dtype (torch checks it): self's dtype decides."""
    fn = opmath(native)

    def method(self, *args, **kwargs):
        return fn(self, *args, **kwargs) if self.dtype in _HALF else native(self, *args, **kwargs)

    return method


# Native methods whose half kernels round per step; torch computes them in float32.
# TODO(rust): compute these in f32 for f16/bf16 inside the kernels, then drop the wrappers.
_NATIVE = ("lerp", "log_softmax")
_CUSTOM = {"log_softmax": _log_softmax}


def _install_native() -> None:
    from ._tensor import _Checked, _make_inplace

    g = globals()
    for name in _NATIVE:
        current = getattr(Tensor, name)  # a Python check around the native method stays in front
        native = Tensor.__dict__[name]
        native = getattr(native, "__wrapped__", native)
        fn = _CUSTOM[name](current) if name in _CUSTOM else _self_opmath(current)
        fn.__name__ = fn.__qualname__ = name
        setattr(Tensor, name, _Checked(fn, native))
        g[name] = fn
        if hasattr(Tensor, name + "_"):
            setattr(Tensor, name + "_", _make_inplace(name))


_install_native()

# A family module (see _OP_FAMILIES): torch.<name> for the wrapped natives.
FUNCTIONS = _NATIVE
