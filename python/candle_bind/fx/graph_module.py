"""torch.fx.graph_module: `GraphModule` (built only from a traced graph, so constructing one raises) and
the helpers torchvision's feature extraction imports from here."""

from __future__ import annotations

from ..nn import Module
from ._symbolic_trace import not_supported

__all__ = ["GraphModule"]

_USER_PRESERVED_ATTRIBUTES_KEY = "_user_preserved_attributes"


class GraphModule(Module):
    def __init__(self, root, graph, class_name: str = "GraphModule"):
        raise not_supported("torch.fx.GraphModule")


class _CodeOnlyModule(Module):
    def __init__(self, body):
        super().__init__()
        self.__dict__ = body


def _copy_attr(from_module, to_module, target: str):
    """Copies the attribute at dotted path `target` of `from_module` onto `to_module`, making the
    submodules on the way (torch's helper)."""
    *prefix, field = target.split(".")
    for item in prefix:
        f = getattr(from_module, item)
        t = getattr(to_module, item, None)
        if f is t:
            return
        if t is None:
            t = Module()
            setattr(to_module, item, t)
        from_module, to_module = f, t
    orig = getattr(from_module, field)
    from ..nn import Parameter
    from .._C import Tensor

    if isinstance(orig, Tensor) and not isinstance(orig, Parameter):
        to_module.register_buffer(field, orig)
    else:
        setattr(to_module, field, orig)
