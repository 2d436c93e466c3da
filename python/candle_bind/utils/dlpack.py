"""torch.utils.dlpack: capsules in and out (`candle_bind.from_dlpack`, `Tensor.__dlpack__`)."""

from candle_bind import from_dlpack


def to_dlpack(tensor):
    """A DLPack capsule viewing `tensor` (CPU; no copy)."""
    return tensor.__dlpack__()


__all__ = ["from_dlpack", "to_dlpack"]
