"""torch._dynamo: what libraries import from it around compilation (nothing compiles here)."""

from __future__ import annotations

import types

from ..compiler import allow_in_graph, assume_constant_result, disable, is_compiling, reset  # noqa: F401
from . import eval_frame  # noqa: F401  (torch._dynamo.eval_frame.OptimizedModule, read as an attribute)

__all__ = ["allow_in_graph", "assume_constant_result", "disable", "is_compiling", "reset", "mark_static_address",
           "mark_dynamic", "mark_static", "maybe_mark_dynamic", "graph_break", "config", "exc", "optimize"]


def mark_static_address(t, guard=True) -> None:
    return None


def mark_dynamic(t, index, **kwargs) -> None:
    return None


mark_static = maybe_mark_dynamic = mark_dynamic


def graph_break(msg: str = "") -> None:
    return None


def optimize(*args, **kwargs):
    return lambda f: f


config = types.SimpleNamespace(cache_size_limit=8, accumulated_cache_size_limit=256, suppress_errors=False,
                               capture_scalar_outputs=False, capture_dynamic_output_shape_ops=False)


class _Exc(types.ModuleType):
    class Unsupported(Exception):
        pass

    class TorchRuntimeError(RuntimeError):
        pass


exc = _Exc("torch._dynamo.exc")
