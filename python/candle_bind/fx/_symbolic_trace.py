"""torch.fx._symbolic_trace: `wrap` (a no-op here), `Tracer` and `symbolic_trace` (which raise)."""

from __future__ import annotations

import math

__all__ = ["Tracer", "symbolic_trace", "wrap"]


def not_supported(what: str) -> NotImplementedError:
    return NotImplementedError(
        f"{what}: candle_bind has no torch.fx symbolic tracer (it runs models eagerly). Use the model as it is, "
        "or take intermediate outputs with forward hooks (timm: features_only=True; torchvision: "
        "torchvision.models._utils.IntermediateLayerGetter)")


def wrap(fn_or_name):
    """Marks a function as a leaf for tracing; nothing traces here, so it is handed back."""
    return fn_or_name


class Tracer:
    """Subclassable as torch's; `trace` raises (see the module doc)."""

    def __init__(self, autowrap_modules=(math,), autowrap_functions=(), param_shapes_constant=False):
        self.autowrap_modules, self.autowrap_functions = tuple(autowrap_modules), tuple(autowrap_functions)
        self.param_shapes_constant = param_shapes_constant
        self.root = None

    def is_leaf_module(self, m, module_qualified_name: str) -> bool:
        from ..nn import Module, Sequential

        return (m.__module__.startswith("torch.nn") or m.__module__.startswith("candle_bind.nn")) \
            and not isinstance(m, Sequential) and isinstance(m, Module)

    def path_of_module(self, mod) -> str:
        for name, m in (self.root.named_modules() if self.root is not None else ()):
            if m is mod:
                return name
        raise NameError("module is not installed as a submodule")

    def call_module(self, m, forward, args, kwargs):
        return forward(*args, **kwargs)

    def create_proxy(self, kind, target, args, kwargs, name=None, type_expr=None, proxy_factory_fn=None):
        raise not_supported("torch.fx.Tracer.create_proxy")

    def trace(self, root, concrete_args=None):
        raise not_supported(f"torch.fx.Tracer.trace({type(root).__name__})")


def symbolic_trace(root, concrete_args=None):
    raise not_supported(f"torch.fx.symbolic_trace({type(root).__name__})")
