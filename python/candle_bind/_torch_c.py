"""torch._C's Python-facing names that libraries touch at import or around their ops (torchvision, timm):
set on the native `_C` module, so `torch._C.X` and `from torch._C import X` find them. candle_bind has no
dispatcher, JIT or tracer: the keys are plain values, the guards do nothing, the probes answer "off"."""

from __future__ import annotations

import enum

from . import _C
from ._subclass import DisableTorchFunction, DisableTorchFunctionSubclass, _disabled_torch_function_impl


class DispatchKey(enum.Enum):
    """torch._C.DispatchKey: the names torch code passes around (there is no dispatcher to key)."""

    Undefined = 0
    CPU = 1
    CUDA = 2
    XPU = 3
    MPS = 4
    Meta = 5
    PrivateUse1 = 6
    CompositeImplicitAutograd = 7
    CompositeExplicitAutograd = 8
    Autograd = 9
    AutogradCPU = 10
    AutogradCUDA = 11
    AutocastCPU = 12
    AutocastCUDA = 13
    AutocastXPU = 14
    AutocastMPS = 15
    Python = 16
    Functionalize = 17


class DispatchKeySet:
    """torch._C.DispatchKeySet: a set of DispatchKeys (union, intersection, membership)."""

    def __init__(self, *keys):
        self._keys = frozenset(k for key in keys for k in (key._keys if isinstance(key, DispatchKeySet) else (key,)))

    def __or__(self, other):
        return DispatchKeySet(self, other)

    def __and__(self, other):
        return DispatchKeySet(*(self._keys & DispatchKeySet(other)._keys))

    def __sub__(self, other):
        return DispatchKeySet(*(self._keys - DispatchKeySet(other)._keys))

    def has(self, key) -> bool:
        return key in self._keys

    def __eq__(self, other):
        return isinstance(other, DispatchKeySet) and self._keys == other._keys

    def __hash__(self):
        return hash(self._keys)

    def __repr__(self):
        return f"DispatchKeySet({', '.join(sorted(k.name for k in self._keys))})"


class _NoOpGuard:
    """A dispatcher guard (`_ExcludeDispatchKeyGuard(keys)`, `_AutoDispatchBelowAutograd()`): nothing to do."""

    def __init__(self, *args, **kwargs):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _log_api_usage_once(event: str) -> None:
    """torch logs API use for its telemetry; candle_bind has none."""


def _get_tracing_state():
    return None  # never tracing (torch.jit.trace hands the function back)


def _get_privateuse1_backend_name() -> str:
    return "privateuseone"


def _jit_off(*args, **kwargs) -> bool:
    """The JIT fuser switches (`_jit_set_profiling_mode`, `_jit_can_fuse_on_cpu`, ...): no JIT, always off."""
    return False


class TensorType:
    """torch._C.TensorType (also torch.TensorType): the JIT's type of a tensor; libraries annotate with
    it (open_clip's hf_model) and there is no JIT to ask it anything."""

    @classmethod
    def get(cls):
        return cls()


class Graph:
    """torch._C.Graph / Value: the JIT's ONNX graph types, named in annotations of `symbolic` methods
    (sew-d's XDropout); nothing here builds a graph."""


class Value:
    pass


NAMES = {
    "TensorType": TensorType, "Graph": Graph, "Value": Value,
    "DispatchKey": DispatchKey, "DispatchKeySet": DispatchKeySet, "_ExcludeDispatchKeyGuard": _NoOpGuard,
    "_IncludeDispatchKeyGuard": _NoOpGuard, "_AutoDispatchBelowAutograd": _NoOpGuard,
    "DisableTorchFunctionSubclass": DisableTorchFunctionSubclass, "DisableTorchFunction": DisableTorchFunction,
    "_disabled_torch_function_impl": _disabled_torch_function_impl, "_log_api_usage_once": _log_api_usage_once,
    "_get_tracing_state": _get_tracing_state, "_get_privateuse1_backend_name": _get_privateuse1_backend_name,
    **{name: _jit_off for name in (
        "_jit_set_profiling_executor", "_jit_set_profiling_mode", "_jit_override_can_fuse_on_cpu",
        "_jit_override_can_fuse_on_gpu", "_jit_can_fuse_on_cpu", "_jit_can_fuse_on_gpu", "_jit_set_texpr_fuser_enabled",
        "_jit_set_nvfuser_enabled", "_jit_set_nvfuser_guard_mode")},
}


def install() -> None:
    for name, value in NAMES.items():
        if not hasattr(_C, name):
            setattr(_C, name, value)
