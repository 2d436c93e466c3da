"""torch.jit: scripting and tracing hand their argument back (candle_bind runs the Python code as
it is); the probes model code calls on every forward answer "not scripting, not tracing"."""

from __future__ import annotations

from typing import Final  # noqa: F401  - torch.jit.Final

__all__ = ["script", "trace", "trace_module", "ignore", "unused", "export", "is_scripting", "is_tracing",
           "ScriptModule", "ScriptFunction", "Final", "annotate", "interface", "fork", "wait"]


def script(obj=None, *args, **kwargs):
    """Returns `obj` unchanged (also as `@torch.jit.script` with or without arguments)."""
    if obj is None:
        return lambda f: f
    return obj


def trace(func, *args, **kwargs):
    return func


def trace_module(mod, *args, **kwargs):
    return mod


def ignore(fn=None, *args, **kwargs):
    if fn is None or isinstance(fn, bool):
        return lambda f: f
    return fn


unused = export = ignore


def is_scripting() -> bool:
    return False


def is_tracing() -> bool:
    return False


def annotate(the_type, the_value):
    return the_value


def interface(obj):
    return obj


class _Future:
    def __init__(self, value):
        self._value = value

    def wait(self):
        return self._value


def fork(func, *args, **kwargs):
    """Runs `func` now; `wait` returns its result."""
    return _Future(func(*args, **kwargs))


def wait(future):
    return future.wait()


class ScriptModule:
    """Never produced by candle_bind (scripting is a no-op); exists for isinstance checks."""


class ScriptFunction:
    """Never produced by candle_bind; exists for isinstance checks."""
