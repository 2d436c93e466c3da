"""torch.amp: `autocast` is accepted and computes in the tensors' own dtypes (cast the model with
`.to(dtype)` for reduced precision); the decorators pass functions through."""

from __future__ import annotations

import functools

__all__ = ["autocast", "custom_fwd", "custom_bwd", "is_autocast_available", "GradScaler", "is_autocast_enabled",
           "get_autocast_dtype", "get_autocast_gpu_dtype", "get_autocast_cpu_dtype"]


class autocast:
    """torch.autocast / torch.amp.autocast: a context manager and decorator that changes nothing."""

    def __init__(self, device_type="cpu", dtype=None, enabled=True, cache_enabled=None):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        self.device = device_type
        self.fast_dtype, self._enabled = dtype, enabled

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def __call__(self, func):
        @functools.wraps(func)
        def wrapped(*args, **kwargs):
            with self:
                return func(*args, **kwargs)

        return wrapped


def is_autocast_available(device_type: str) -> bool:
    return device_type in ("cpu", "cuda")


def is_autocast_enabled(device_type=None) -> bool:
    """torch.is_autocast_enabled: always False here (autocast never lowers precision; see README)."""
    return False


def get_autocast_dtype(device_type="cuda"):
    from . import bfloat16, float16

    return bfloat16 if device_type == "cpu" else float16


def get_autocast_gpu_dtype():
    return get_autocast_dtype("cuda")


def get_autocast_cpu_dtype():
    return get_autocast_dtype("cpu")


def custom_fwd(fwd=None, *, device_type="cuda", cast_inputs=None):
    if fwd is None:
        return lambda f: f
    return fwd


def custom_bwd(bwd=None, *, device_type="cuda"):
    if bwd is None:
        return lambda f: f
    return bwd


class GradScaler:
    """Training only; exists so scripts that build one for inference still import."""

    def __init__(self, *args, enabled=True, **kwargs):
        self._enabled = enabled

    def is_enabled(self) -> bool:
        return False
