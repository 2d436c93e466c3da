"""Tensor subclasses the torch way: `as_subclass`, `Tensor._make_subclass` and the `__torch_function__`
protocol for methods (torchvision's tv_tensors.Image, BoundingBoxes, Mask, ... rely on them).

Tensor is a Rust class; its methods return plain Tensors. A subclass that defines `__torch_function__`
gets every Tensor method (and the operators) routed through it, as torch does, so it decides what comes
back (torchvision's keeps `clone`/`to`/`detach` as its own type and unwraps the rest). Functions
(`torch.cat`, `F.interpolate`) are not routed: they return plain Tensors, which is what subclasses that
do not ask for their own type get from torch too.
"""

from __future__ import annotations

import threading

from ._C import Tensor

_state = threading.local()


def _disabled() -> bool:
    return getattr(_state, "depth", 0) > 0


class DisableTorchFunctionSubclass:
    """torch._C.DisableTorchFunctionSubclass: inside it, methods of subclasses run Tensor's own."""

    def __enter__(self):
        _state.depth = getattr(_state, "depth", 0) + 1
        return self

    def __exit__(self, *exc):
        _state.depth -= 1
        return False


DisableTorchFunction = DisableTorchFunctionSubclass


def _disabled_torch_function_impl(func, types, args=(), kwargs=None):
    """torch._C._disabled_torch_function_impl: a subclass that sets it opts out of the protocol."""
    with DisableTorchFunctionSubclass():
        return func(*args, **(kwargs or {}))


def _convert(ret, cls):
    """torch._tensor._convert: tensors in `ret` (also inside tuples and lists) become `cls`."""
    if cls is Tensor:
        return ret
    if isinstance(ret, Tensor) and not isinstance(ret, cls):
        ret = ret.as_subclass(cls)
    if isinstance(ret, (tuple, list)):
        ret = type(ret)(_convert(r, cls) for r in ret)
    return ret


def _torch_function(cls, func, types, args=(), kwargs=None):
    """Tensor.__torch_function__: runs `func`, results as the subclass (torch's default)."""
    if not all(issubclass(cls, t) for t in types):
        return NotImplemented
    with DisableTorchFunctionSubclass():
        return _convert(func(*args, **(kwargs or {})), cls)


def as_subclass(self, cls):
    """A `cls` view of this tensor's memory (neither `cls.__new__` nor `__init__` runs, as in torch)."""
    if not (isinstance(cls, type) and issubclass(cls, Tensor)):
        raise TypeError(f"as_subclass(): argument 'cls' must be a subclass of torch.Tensor, not {cls!r}")
    return Tensor.__new__(cls, self)


def _make_subclass(cls, data, require_grad=False, *args, **kwargs):
    t = Tensor.__new__(cls, data)
    if require_grad:
        t.requires_grad = True
    return t


def pin_memory(self, device=None):
    """A copy (candle_bind has no page-locked memory; CPU memory serves)."""
    return self.clone()


# Operators routed like the methods (torch routes them too); other dunders (repr, pickling) are not.
_OPERATORS = (
    "__getitem__", "__setitem__", "__add__", "__radd__", "__iadd__", "__sub__", "__rsub__", "__isub__", "__mul__",
    "__rmul__", "__imul__", "__truediv__", "__rtruediv__", "__itruediv__", "__floordiv__", "__rfloordiv__",
    "__mod__", "__rmod__", "__pow__", "__rpow__", "__matmul__", "__rmatmul__", "__neg__", "__pos__", "__abs__",
    "__invert__", "__and__", "__rand__", "__or__", "__ror__", "__xor__", "__rxor__", "__lshift__", "__rshift__",
    "__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__",
)
_NOT_ROUTED = {"as_subclass", "_make_subclass"}


def _overloaded_types(args, kwargs):
    found = []
    for a in (*args, *kwargs.values()):
        for x in (a if isinstance(a, (list, tuple)) else (a,)):
            t = type(x)
            if isinstance(x, Tensor) and t is not Tensor and t not in found:
                found.append(t)
    return tuple(found)


def _routed(func):
    def method(self, *args, **kwargs):
        if _disabled():
            return func(self, *args, **kwargs)
        return type(self).__torch_function__(func, _overloaded_types((self, *args), kwargs), (self, *args), kwargs)

    method.__name__ = getattr(func, "__name__", "method")
    method.__doc__ = getattr(func, "__doc__", None)
    return method


def _init_subclass(cls, **kwargs):
    """Routes Tensor's methods through the `__torch_function__` a subclass defines (not through one it
    turned off with `_disabled_torch_function_impl`)."""
    super(Tensor, cls).__init_subclass__(**kwargs)
    own = cls.__dict__.get("__torch_function__")
    if own is None or getattr(own, "__func__", own) is _disabled_torch_function_impl:
        return
    overridden = {name for klass in cls.__mro__[:cls.__mro__.index(Tensor)] for name in vars(klass)}
    for name, value in list(vars(Tensor).items()):
        if name in overridden or name in _NOT_ROUTED or not callable(value):
            continue
        if isinstance(value, (type, staticmethod, classmethod)):
            continue
        if name.startswith("_") and name not in _OPERATORS:
            continue
        setattr(cls, name, _routed(getattr(Tensor, name)))


def install() -> None:
    Tensor.as_subclass = as_subclass
    Tensor._make_subclass = staticmethod(_make_subclass)
    Tensor.__torch_function__ = classmethod(_torch_function)
    Tensor.__init_subclass__ = classmethod(_init_subclass)
    if not hasattr(Tensor, "pin_memory"):
        Tensor.pin_memory = pin_memory
    if not hasattr(Tensor, "is_pinned"):
        Tensor.is_pinned = lambda self, device=None: False
