"""`candle_bind.Size`: what `Tensor.shape` returns, a tuple subclass like torch.Size."""

from __future__ import annotations


class Size(tuple):
    """A tensor's shape: a tuple of ints that slices to a Size and prints as torch does."""

    __slots__ = ()

    def numel(self) -> int:
        n = 1
        for d in self:
            n *= d
        return n

    def __getitem__(self, key):  # type: ignore[override]
        r = tuple.__getitem__(self, key)
        return Size(r) if isinstance(key, slice) else r

    def __add__(self, other):  # type: ignore[override]
        if not isinstance(other, tuple):
            return NotImplemented
        return Size(tuple.__add__(self, other))

    def __radd__(self, other):
        if not isinstance(other, tuple):
            return NotImplemented
        return Size(tuple.__add__(other, self))

    def __mul__(self, n):  # type: ignore[override]
        return Size(tuple.__mul__(self, n))

    __rmul__ = __mul__

    def __repr__(self) -> str:
        return f"torch.Size({list(self)!r})"

    def __reduce__(self):
        return (Size, (tuple(self),))
