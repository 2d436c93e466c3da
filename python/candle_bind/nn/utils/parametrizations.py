"""nn.utils.parametrizations.weight_norm: the newer API, keys `parametrizations.weight.original0`
(g) and `original1` (v), the weight recomputed on access."""

from __future__ import annotations

from ..modules.container import ModuleDict, ModuleList
from ..modules.module import Module
from ..parameter import Parameter
from .weight_norm import _norm_except_dim, _weight_norm


class _WeightNorm(Module):
    def __init__(self, dim=0):
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g, weight_v):
        return _weight_norm(weight_v, weight_g, self.dim)

    def right_inverse(self, weight):
        return _norm_except_dim(weight, self.dim).clone(), weight.clone()


class ParametrizationList(ModuleList):
    """Holds `original0`, `original1` like torch's, and computes the parametrized tensor."""

    def __init__(self, modules, originals):
        super().__init__(modules)
        for i, t in enumerate(originals):
            self.register_parameter(f"original{i}", Parameter(t))

    def forward(self):
        return self[0](*[getattr(self, f"original{i}") for i in range(len(self._parameters))])


def _install_property(module, name):
    cls = module.__class__
    if not getattr(cls, "_is_parametrized", False):
        new_cls = type(f"Parametrized{cls.__name__}", (cls,), {"_is_parametrized": True})
        module.__class__ = new_cls
        cls = new_cls

    def getter(self, _name=name):
        return self.parametrizations[_name]()

    setattr(cls, name, property(getter))


def weight_norm(module, name: str = "weight", dim: int = 0):
    weight = getattr(module, name)
    wn = _WeightNorm(dim)
    g, v = wn.right_inverse(weight)
    if "parametrizations" not in module._modules:
        module.parametrizations = ModuleDict()
    del module._parameters[name]
    module.parametrizations[name] = ParametrizationList([wn], [g, v])
    _install_property(module, name)
    return module


def remove_parametrizations(module, tensor_name: str, leave_parametrized: bool = True):
    weight = getattr(module, tensor_name)
    del module.parametrizations[tensor_name]
    cls = module.__class__
    if getattr(cls, "_is_parametrized", False):
        module.__class__ = cls.__bases__[0]
    if len(module.parametrizations) == 0:
        del module.parametrizations
    module.register_parameter(tensor_name, Parameter(weight))
    return module
