"""torch._dynamo.utils: the probes libraries call to choose a compiled path."""

from __future__ import annotations


def is_compile_supported(device_type) -> bool:
    """torch answers True for the devices torch.compile supports; `torch.compile` hands the function back here,
    so the compiled path is the plain Python one (torchvision's roi_align falls back to it without its C++ ops)."""
    return str(device_type).split(":")[0] in ("cpu", "cuda")
