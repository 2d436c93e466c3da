"""torch.distributed.device_mesh: the mesh type libraries name in annotations and `isinstance` checks
(diffusers' parallel configs). One process here, so no mesh is ever built."""

from __future__ import annotations

__all__ = ["DeviceMesh", "init_device_mesh"]


class DeviceMesh:
    """Never instantiated: candle_bind runs in one process."""

    def __init__(self, *args, **kwargs):
        raise RuntimeError("torch.distributed.device_mesh.DeviceMesh is not supported by candle_bind: it runs in "
                           "one process")


def init_device_mesh(*args, **kwargs):
    raise RuntimeError("torch.distributed.device_mesh.init_device_mesh is not supported by candle_bind: it runs "
                       "in one process")
