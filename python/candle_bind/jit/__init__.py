"""torch.jit: scripting and tracing hand their argument back (candle_bind runs the Python code as
it is); the probes model code calls on every forward answer "not scripting, not tracing"."""

from __future__ import annotations

from typing import Final  # noqa: F401  - torch.jit.Final

__all__ = ["script", "trace", "trace_module", "ignore", "unused", "export", "is_scripting", "is_tracing",
           "ScriptModule", "ScriptFunction", "Final", "annotate", "interface", "fork", "wait",
           "_script_if_tracing", "script_if_tracing", "_overload", "_overload_method", "isinstance"]


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


def _script_if_tracing(fn):
    return fn


script_if_tracing = _script_if_tracing  # vitdet decorates with the public name


def _overload(fn):
    return fn


_overload_method = _overload


def is_scripting() -> bool:
    return False


def is_tracing() -> bool:
    return False


def isinstance(obj, target_type) -> bool:  # noqa: A001 - torch.jit's name
    """`isinstance` that also checks typing containers element by element (List[str], Dict[str, Tensor],
    Tuple[int, ...], Optional[X], Union[...]), as torch.jit.isinstance does in eager mode."""
    import builtins
    import typing

    origin, args = typing.get_origin(target_type), typing.get_args(target_type)
    if target_type is typing.Any:
        return True
    if origin is None:
        return builtins.isinstance(obj, target_type)
    if origin is typing.Union or str(origin) == "<class 'types.UnionType'>":
        return any(isinstance(obj, a) for a in args)
    if not builtins.isinstance(obj, origin):
        return False
    if origin in (list, set, frozenset) and args:
        return all(isinstance(x, args[0]) for x in obj)
    if origin is dict and args:
        return all(isinstance(k, args[0]) and isinstance(v, args[1]) for k, v in obj.items())
    if origin is tuple and args:
        if len(args) == 2 and args[1] is Ellipsis:
            return all(isinstance(x, args[0]) for x in obj)
        return len(obj) == len(args) and all(isinstance(x, a) for x, a in zip(obj, args))
    return True


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
