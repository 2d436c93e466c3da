"""torch.autograd.graph: the activation-saving hooks (no graph is recorded here, so they do nothing)."""

from __future__ import annotations

import contextlib

__all__ = ["save_on_cpu", "saved_tensors_hooks", "disable_saved_tensors_hooks"]


class saved_tensors_hooks(contextlib.nullcontext):
    def __init__(self, pack_hook=None, unpack_hook=None):
        super().__init__()


class save_on_cpu(saved_tensors_hooks):
    def __init__(self, pin_memory: bool = False, device_type: str = "cuda"):
        super().__init__()


class disable_saved_tensors_hooks(contextlib.nullcontext):
    def __init__(self, error_message: str = ""):
        super().__init__()
