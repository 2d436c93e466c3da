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
    """Placeholder for lazy modules (not supported: lazy modules need shape inference)."""
