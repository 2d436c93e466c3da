"""nn.utils.weight_norm: weight = g · v / ‖v‖ with `weight_g`/`weight_v` parameters (torch's keys),
recomputed before every forward; `remove_weight_norm` folds it back into one `weight`."""

from __future__ import annotations

from ..parameter import Parameter


def _norm_except_dim(v, dim):
    if v.is_meta:  # from_pretrained builds on the meta device: the shape is all there is
        from ... import empty

        shape = () if dim is None or dim == -1 else [n if d == dim % v.dim() else 1 for d, n in enumerate(v.shape)]
        return empty(shape, dtype=v.dtype, device="meta")
    if dim is None or dim == -1:  # torch's convention: the norm over the whole tensor
        return v.norm()
    dim = dim % v.dim()
    dims = [d for d in range(v.dim()) if d != dim]
    return v.square().sum(dims, keepdim=True).sqrt() if dims else v.abs()


def _weight_norm(v, g, dim):
    return v * (g / _norm_except_dim(v, dim))


class WeightNorm:
    def __init__(self, name: str, dim):
        self.name = name
        self.dim = dim

    def compute_weight(self, module):
        return _weight_norm(getattr(module, self.name + "_v"), getattr(module, self.name + "_g"), self.dim)

    @staticmethod
    def apply(module, name, dim):
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, WeightNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two weight_norm hooks on the same parameter {name}")
        if dim is None:
            dim = -1
        fn = WeightNorm(name, dim)
        weight = getattr(module, name)
        del module._parameters[name]
        module.register_parameter(name + "_g", Parameter(_norm_except_dim(weight, dim).clone()))
        module.register_parameter(name + "_v", Parameter(weight.clone()))
        object.__setattr__(module, name, fn.compute_weight(module))
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module):
        weight = self.compute_weight(module)
        object.__delattr__(module, self.name) if self.name in module.__dict__ else None
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        module.register_parameter(self.name, Parameter(weight))

    def __call__(self, module, inputs):
        object.__setattr__(module, self.name, self.compute_weight(module))


def weight_norm(module, name: str = "weight", dim: int = 0):
    """Deprecated-in-torch but ubiquitous in audio checkpoints: keys `<name>_g`, `<name>_v`."""
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module, name: str = "weight"):
    for k, hook in list(module._forward_pre_hooks.items()):
        if isinstance(hook, WeightNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"weight_norm of '{name}' not found in {module}")
