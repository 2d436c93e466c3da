"""torch.cpu: torch.cuda's device-agnostic surface for the CPU (diffusers reaches it through
`torch.get_device_module("cpu")` to clear caches and seed). Work on the CPU is synchronous."""

from __future__ import annotations

from .cuda import Event, Stream, StreamContext

__all__ = ["is_available", "is_initialized", "synchronize", "current_device", "current_stream", "stream",
           "set_device", "device_count", "Stream", "StreamContext", "Event"]


def is_available() -> bool:
    return True


def is_initialized() -> bool:
    return True


def synchronize(device=None) -> None:
    return None


def current_device() -> str:
    return "cpu"


def set_device(device) -> None:
    return None


def device_count() -> int:
    return 1


def current_stream(device=None) -> Stream:
    return Stream(device)


def stream(stream) -> StreamContext:
    return StreamContext(stream)
