"""torch.cuda: device availability from the native build (CUDA only with the cargo feature `cuda`),
seeding, and the stream/graph/memory APIs scripts call around a model (no-ops on the CPU build)."""

from __future__ import annotations

import contextlib

from . import _C
from ._C import OutOfMemoryError  # torch.cuda.OutOfMemoryError is torch.OutOfMemoryError

__all__ = ["OutOfMemoryError", "is_available", "device_count", "current_device", "set_device", "synchronize", "empty_cache",
           "manual_seed", "manual_seed_all", "seed", "seed_all", "is_bf16_supported", "get_device_name",
           "get_device_capability", "get_device_properties", "memory_allocated", "max_memory_allocated",
           "memory_reserved", "max_memory_reserved", "reset_peak_memory_stats", "reset_max_memory_allocated",
           "mem_get_info", "Stream", "Event", "CUDAGraph", "graph", "stream", "current_stream", "default_stream",
           "StreamContext", "device", "is_current_stream_capturing", "amp", "is_initialized", "init"]


def is_available() -> bool:
    return _C.cuda_is_available()


def device_count() -> int:
    return _C.cuda_device_count()


def is_initialized() -> bool:
    return is_available()


def init() -> None:
    return None


def current_device() -> int:
    return 0


def set_device(device) -> None:
    return None


def synchronize(device=None) -> None:
    return None


def empty_cache() -> None:
    return None


def manual_seed(seed: int) -> None:
    from . import manual_seed as seed_all_streams

    seed_all_streams(seed)


manual_seed_all = manual_seed


def seed() -> None:
    return None


seed_all = seed


def is_bf16_supported(including_emulation: bool = True) -> bool:
    return is_available()


def _no_device(what: str):
    raise RuntimeError(f"torch.cuda.{what}: no CUDA device is available to candle_bind")


def get_device_name(device=None) -> str:
    return _no_device("get_device_name")


def get_device_capability(device=None):
    return _no_device("get_device_capability")


def get_device_properties(device=None):
    return _no_device("get_device_properties")


def mem_get_info(device=None):
    return _no_device("mem_get_info")


def memory_allocated(device=None) -> int:
    return 0


max_memory_allocated = memory_reserved = max_memory_reserved = memory_allocated


def reset_peak_memory_stats(device=None) -> None:
    return None


reset_max_memory_allocated = reset_peak_memory_stats


def is_current_stream_capturing() -> bool:
    return False


class Stream:
    """Work runs in order on one queue here; streams exist so scripts that create them run."""

    def __init__(self, device=None, priority=0, **kwargs):
        self.device = device

    def synchronize(self) -> None:
        return None

    def wait_stream(self, stream) -> None:
        return None

    def wait_event(self, event) -> None:
        return None

    def record_event(self, event=None):
        return event or Event()

    def query(self) -> bool:
        return True


class Event:
    def __init__(self, enable_timing=False, blocking=False, interprocess=False):
        pass

    def record(self, stream=None) -> None:
        return None

    def synchronize(self) -> None:
        return None

    def wait(self, stream=None) -> None:
        return None

    def query(self) -> bool:
        return True


class CUDAGraph:
    def __init__(self, *args, **kwargs):
        _no_device("CUDAGraph")


@contextlib.contextmanager
def graph(cuda_graph, pool=None, stream=None, **kwargs):
    _no_device("graph")
    yield


class StreamContext(contextlib.nullcontext):
    def __init__(self, stream):
        super().__init__(stream)


def stream(stream):
    return StreamContext(stream)


def current_stream(device=None) -> Stream:
    return Stream(device)


default_stream = current_stream


class device(contextlib.nullcontext):
    """torch.cuda.device(idx): selects a GPU; one device here."""

    def __init__(self, device):
        super().__init__(device)
        self.idx = device


class _Amp:
    """torch.cuda.amp: the deprecated spelling of torch.amp."""

    def __getattr__(self, name):
        from . import amp

        return getattr(amp, name)


amp = _Amp()
