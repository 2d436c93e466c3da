"""torch.mps: Apple GPUs are not a candle_bind device; the probes libraries run say so (as torch.xpu)."""

from .xpu import device_count, empty_cache, is_available, manual_seed, synchronize  # noqa: F401

__all__ = ["is_available", "device_count", "empty_cache", "synchronize", "manual_seed"]
