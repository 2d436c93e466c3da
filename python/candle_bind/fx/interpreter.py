"""torch.fx.interpreter: `Interpreter` runs a GraphModule node by node; no GraphModule can be built here."""

from __future__ import annotations

from ._symbolic_trace import not_supported

__all__ = ["Interpreter"]


class Interpreter:
    def __init__(self, module, garbage_collect_values=True, graph=None):
        raise not_supported("torch.fx.Interpreter")
