"""torch._prims_common: the helpers libraries call from their own kernels (torchvision's backward
registrations call `alert_not_deterministic`)."""

from __future__ import annotations

__all__ = ["alert_not_deterministic"]


def alert_not_deterministic(caller: str) -> None:
    """Raises where `torch.use_deterministic_algorithms(True)` asked for determinism, as torch's."""
    from ._runtime import are_deterministic_algorithms_enabled

    if are_deterministic_algorithms_enabled():
        raise RuntimeError(f"{caller} does not have a deterministic implementation, but you set "
                           "'torch.use_deterministic_algorithms(True)'.")
