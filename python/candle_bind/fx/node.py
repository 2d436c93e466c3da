"""torch.fx.node: `Node` and the `Target`/`Argument` aliases libraries annotate with."""

from __future__ import annotations

from typing import Any, Callable, Union

__all__ = ["Argument", "Node", "Target", "map_arg"]

Target = Union[Callable[..., Any], str]
Argument = Any


class Node:
    """A graph node; only a tracer makes them, and candle_bind has none."""

    def __init__(self, graph, name: str, op: str, target, args, kwargs, return_type=None):
        self.graph, self.name, self.op, self.target = graph, name, op, target
        self.args, self.kwargs, self.type = tuple(args), dict(kwargs), return_type
        self.meta: dict = {}


def map_arg(a, fn):
    if isinstance(a, (tuple, list)):
        return type(a)(map_arg(x, fn) for x in a)
    if isinstance(a, dict):
        return {k: map_arg(v, fn) for k, v in a.items()}
    return fn(a) if isinstance(a, Node) else a
