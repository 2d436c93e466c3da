"""torch.fx.proxy: `Proxy` exists for annotations and isinstance checks (no tracer makes one here)."""

from __future__ import annotations

__all__ = ["Proxy"]


class Proxy:
    def __init__(self, node, tracer=None):
        self.node, self.tracer = node, tracer
