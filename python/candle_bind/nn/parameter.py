"""nn.Parameter and nn.Buffer: tensors that a Module registers when assigned as attributes."""

from __future__ import annotations

from .._C import Tensor


class Parameter(Tensor):
    """A Tensor that is a module parameter (shares memory with the tensor it wraps, as torch's)."""

    def __new__(cls, data: Tensor | None = None, requires_grad: bool = True):
        if data is None:
            data = Tensor()
        t = Tensor.__new__(cls, data)
        if requires_grad and t.is_floating_point():
            t.requires_grad = True
        return t

    def __init__(self, data: Tensor | None = None, requires_grad: bool = True):
        pass

    def __repr__(self) -> str:
        return "Parameter containing:\n" + Tensor.__repr__(self)

    def __reduce_ex__(self, proto):
        return (Parameter, (Tensor(self), self.requires_grad), dict(self.__dict__) or None)

    def __deepcopy__(self, memo):
        if id(self) not in memo:
            from .._tensor import copy_attributes

            memo[id(self)] = Parameter(self.clone(), self.requires_grad)
            copy_attributes(self, memo[id(self)], memo)
        return memo[id(self)]


class Buffer(Tensor):
    """torch.nn.Buffer: marks a tensor to be registered as a buffer when assigned to a Module."""

    def __new__(cls, data: Tensor | None = None, *, persistent: bool = True):
        t = Tensor.__new__(cls, data if data is not None else Tensor())
        t.persistent = persistent
        return t

    def __init__(self, data: Tensor | None = None, *, persistent: bool = True):
        pass


class UninitializedParameter(Parameter):
    """A lazy module's parameter before its first forward (nn.modules.lazy): no shape yet, until
    `materialize(shape)` makes it a Parameter of that shape (uninitialized values, as torch.empty)."""

    cls_to_become = Parameter

    def __new__(cls, requires_grad: bool = True, device=None, dtype=None):
        t = Parameter.__new__(cls, None, requires_grad)
        t._lazy_factory = {"device": device, "dtype": dtype}
        return t

    def __init__(self, requires_grad: bool = True, device=None, dtype=None):
        pass

    def materialize(self, shape, device=None, dtype=None):
        from .. import empty

        factory = self.__dict__.pop("_lazy_factory", {})
        device = device if device is not None else factory.get("device")
        dtype = dtype if dtype is not None else factory.get("dtype")
        self.data = empty(tuple(shape), device=device, dtype=dtype)
        self.__class__ = self.cls_to_become

    def __repr__(self) -> str:
        return "<UninitializedParameter>"


class UninitializedBuffer(Tensor):
    """A lazy module's buffer before its first forward: see UninitializedParameter."""

    cls_to_become = Tensor

    def __new__(cls, requires_grad: bool = False, device=None, dtype=None, persistent: bool = True):
        t = Tensor.__new__(cls, Tensor())
        t._lazy_factory, t.persistent = {"device": device, "dtype": dtype}, persistent
        return t

    def __init__(self, requires_grad: bool = False, device=None, dtype=None, persistent: bool = True):
        pass

    materialize = UninitializedParameter.materialize

    def __repr__(self) -> str:
        return "<UninitializedBuffer>"
