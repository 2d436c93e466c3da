"""torch.jit.annotations: the TorchScript type aliases libraries annotate with (plain typing here)."""

from __future__ import annotations

from typing import List, Tuple  # noqa: F401

BroadcastingList1 = BroadcastingList2 = BroadcastingList3 = List  # torch's: a scalar or a list of that length
__all__ = ["BroadcastingList1", "BroadcastingList2", "BroadcastingList3"]
