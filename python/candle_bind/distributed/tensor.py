"""torch.distributed.tensor: the DTensor types libraries test parameters against (accelerate's
`model_has_dtensor` in `Accelerator.prepare`, transformers' Trainer). One process here, so no
tensor is ever a DTensor and the placements are never built."""

from __future__ import annotations

__all__ = ["DTensor", "Placement", "Replicate", "Shard", "Partial"]


class DTensor:
    """Never instantiated: `isinstance(p, DTensor)` is False for every candle_bind tensor."""

    def __init__(self, *args, **kwargs):
        raise RuntimeError("torch.distributed.tensor.DTensor is not supported by candle_bind: it runs in one process")


class Placement:
    pass


class Replicate(Placement):
    pass


class Shard(Placement):
    def __init__(self, dim: int = 0):
        self.dim = dim


class Partial(Placement):
    def __init__(self, reduce_op: str = "sum"):
        self.reduce_op = reduce_op
