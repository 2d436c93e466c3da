"""torch.fx.graph: `Graph` exists for annotations and isinstance checks; only a tracer builds one."""

from __future__ import annotations

__all__ = ["Graph"]


class Graph:
    def __init__(self, owning_module=None, tracer_cls=None, tracer_extras=None):
        self.owning_module = owning_module
        self.nodes: list = []

    def __iter__(self):
        return iter(self.nodes)
