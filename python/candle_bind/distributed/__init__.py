"""torch.distributed: candle_bind runs in one process, so the package reports itself unavailable
(`is_available()` is False) and libraries take their single-process paths."""

from __future__ import annotations

__all__ = ["is_available", "is_initialized", "get_rank", "get_world_size", "init_process_group", "barrier"]


def is_available() -> bool:
    return False


def is_initialized() -> bool:
    return False


def is_torchelastic_launched() -> bool:
    return False


def _not_initialized(*args, **kwargs):
    raise RuntimeError("Default process group has not been initialized: candle_bind runs in one process "
                       "(torch.distributed is not available)")


get_rank = get_world_size = barrier = all_reduce = all_gather = broadcast = _not_initialized


class ProcessGroup:
    """Never instantiated (libraries annotate with `dist.ProcessGroup`): there is no process group."""

    def __init__(self, *args, **kwargs):
        _not_initialized()


def init_process_group(*args, **kwargs):
    raise RuntimeError("torch.distributed is not supported by candle_bind: it runs in one process")


# Attribute access without an import, as torch gives it (diffusers' dataclasses annotate with
# `torch.distributed.device_mesh.DeviceMesh`).
from . import device_mesh  # noqa: E402
