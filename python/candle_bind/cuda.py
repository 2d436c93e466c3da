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


def _index(device) -> int:
    """A device argument (None, an int, a name, a device) as a CUDA ordinal."""
    if device is None:
        return 0
    if isinstance(device, int):
        return device
    d = device if isinstance(device, _C.device) else _C.device(device)
    return d.index or 0


def synchronize(device=None) -> None:
    """Waits for the work queued on the device (ops on CUDA tensors run asynchronously)."""
    _C.cuda_synchronize(_index(device) if is_available() else None)


def empty_cache() -> None:
    """Freed device memory goes back to CUDA's stream-ordered pool at once; nothing is cached here."""
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


def _info(device, what: str) -> dict:
    if not is_available():
        _no_device(what)
    return _C.cuda_device_info(_index(device))


class _CudaDeviceProperties:
    """torch.cuda.get_device_properties(d): name, major/minor, total_memory, multi_processor_count."""

    def __init__(self, info: dict):
        self.name, self.major, self.minor = info["name"], info["major"], info["minor"]
        self.total_memory, self.multi_processor_count = info["total_memory"], info["multi_processor_count"]
        self.is_integrated, self.is_multi_gpu_board = False, False

    def __repr__(self):
        return (f"_CudaDeviceProperties(name='{self.name}', major={self.major}, minor={self.minor}, "
                f"total_memory={self.total_memory // (1 << 20)}MB, multi_processor_count={self.multi_processor_count})")


def get_device_name(device=None) -> str:
    return _info(device, "get_device_name")["name"]


def get_device_capability(device=None):
    info = _info(device, "get_device_capability")
    return info["major"], info["minor"]


def get_device_properties(device=None):
    return _CudaDeviceProperties(_info(device, "get_device_properties"))


def mem_get_info(device=None):
    """(free, total) bytes of the device's memory, as the driver reports them."""
    info = _info(device, "mem_get_info")
    return info["free_memory"], info["total_memory"]


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
    """Marks a point in the device's work; with enable_timing, `elapsed_time` measures between two
    (the device is synchronized at `record`, so the times include the queued work)."""

    def __init__(self, enable_timing=False, blocking=False, interprocess=False):
        self._time = None

    def record(self, stream=None) -> None:
        import time

        synchronize()
        self._time = time.perf_counter()

    def elapsed_time(self, end_event) -> float:
        if self._time is None or end_event._time is None:
            raise RuntimeError("Both events must be recorded before calculating elapsed time.")
        return (end_event._time - self._time) * 1000.0

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
