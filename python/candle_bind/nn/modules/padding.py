"""ZeroPad, ConstantPad, ReflectionPad, ReplicationPad, CircularPad in 1d/2d/3d."""

from __future__ import annotations

from .. import functional as F
from .module import Module

__all__ = [f"{kind}Pad{n}d" for kind in ("Zero", "Constant", "Reflection", "Replication", "Circular") for n in (1, 2, 3)]


class _PadNd(Module):
    _n = 1
    _mode = "constant"

    def __init__(self, padding, value: float = 0.0):
        super().__init__()
        self.padding = F._ntuple(padding, 2 * self._n, "padding")
        self.value = value

    def forward(self, input):
        if self._mode == "constant":
            return F.pad(input, self.padding, "constant", self.value)
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self) -> str:
        return f"{self.padding}, value={self.value}" if self._mode == "constant" else f"{self.padding}"


def _make(kind: str, mode: str, n: int):
    if kind == "Constant":
        def __init__(self, padding, value):
            _PadNd.__init__(self, padding, value)
    else:
        def __init__(self, padding):
            _PadNd.__init__(self, padding, 0.0)
    return type(f"{kind}Pad{n}d", (_PadNd,), {"_n": n, "_mode": mode, "__init__": __init__, "__module__": __name__})


for _kind, _mode in (("Zero", "constant"), ("Constant", "constant"), ("Reflection", "reflect"), ("Replication", "replicate"), ("Circular", "circular")):
    for _n in (1, 2, 3):
        globals()[f"{_kind}Pad{_n}d"] = _make(_kind, _mode, _n)
