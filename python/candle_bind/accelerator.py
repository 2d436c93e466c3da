"""torch.accelerator: the current accelerator as torch reports it (CUDA in a CUDA build with a GPU,
otherwise none: CPU code paths are taken)."""

from __future__ import annotations

__all__ = ["current_accelerator", "is_available", "device_count", "current_device_index", "set_device_index",
           "synchronize"]


def is_available() -> bool:
    from . import cuda

    return cuda.is_available()


def current_accelerator(check_available: bool = False):
    from . import device

    return device("cuda") if is_available() else None


def device_count() -> int:
    from . import cuda

    return cuda.device_count()


def current_device_index() -> int:
    return 0


def set_device_index(device) -> None:
    return None


set_device_idx = set_device_index
current_device_idx = current_device_index


def synchronize(device=None) -> None:
    return None
