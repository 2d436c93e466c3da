"""torch._custom_ops: the older custom-op API (torchvision imports it for `get_ctx` in its fake kernels,
which only run when tracing; nothing traces here)."""

from __future__ import annotations

from .library import custom_op, impl  # noqa: F401

__all__ = ["custom_op", "impl", "get_ctx"]


def get_ctx():
    raise NotImplementedError("torch._custom_ops.get_ctx() is only available while tracing a fake kernel; "
                              "candle_bind does not trace (it runs the op itself)")
