"""torch.utils: the parts inference scripts touch (`data`, `checkpoint`, `dlpack`)."""

from . import checkpoint, data, dlpack

__all__ = ["checkpoint", "data", "dlpack"]
