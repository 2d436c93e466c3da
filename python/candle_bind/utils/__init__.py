"""torch.utils: the parts inference scripts touch (`data`, `checkpoint`)."""

from . import checkpoint, data

__all__ = ["checkpoint", "data"]
