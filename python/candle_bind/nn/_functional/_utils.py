"""Argument helpers the family modules share (torch's int-tuple checks, the inplace copy-back)."""

from __future__ import annotations

from ..._C import Tensor


def _int(v, name: str, fn: str) -> int:
    if isinstance(v, float) or not hasattr(v, "__index__"):
        raise TypeError(f"{fn + '(): ' if fn else ''}argument '{name}' must be tuple of ints, not {type(v).__name__}")
    return v.__index__()


def _ntuple(x, n: int, name: str = "argument", fn: str = "") -> tuple:
    if isinstance(x, (list, tuple)):
        if len(x) == 1:
            return (_int(x[0], name, fn),) * n
        if len(x) != n:
            raise ValueError(f"{name} must be an int or a tuple of {n} ints, got {x}")
        return tuple(_int(v, name, fn) for v in x)
    return (_int(x, name, fn),) * n


def _maybe_inplace(input: Tensor, out: Tensor, inplace: bool) -> Tensor:
    if inplace:
        input.copy_(out)
        return input
    return out
