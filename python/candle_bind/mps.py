"""torch.mps: Apple GPUs are not a candle_bind device; the probes libraries run say so."""

__all__ = ["is_available", "device_count", "empty_cache", "synchronize", "manual_seed"]


def is_available() -> bool:
    return False


def device_count() -> int:
    return 0


def empty_cache() -> None:
    return None


def synchronize() -> None:
    return None


def manual_seed(seed: int) -> None:
    return None
