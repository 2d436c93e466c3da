"""torch.compiler: nothing is ever compiled here, so the probes model code runs on every forward
(`is_compiling`, `is_exporting`) are constant False and the decorators return their argument."""

from __future__ import annotations

__all__ = ["is_compiling", "is_dynamo_compiling", "is_exporting", "disable", "allow_in_graph",
           "assume_constant_result", "reset", "cudagraph_mark_step_begin"]


def is_compiling() -> bool:
    return False


is_dynamo_compiling = is_exporting = is_compiling


def disable(fn=None, recursive=True, *, reason=None):
    if fn is None:
        return lambda f: f
    return fn


def allow_in_graph(fn):
    return fn


assume_constant_result = allow_in_graph


def reset() -> None:
    return None


def cudagraph_mark_step_begin() -> None:
    return None
