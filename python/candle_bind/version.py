"""torch.version: the torch release candle_bind answers as (under the shim, `torch.__version__` and
torch's package metadata say the same) and the build facts scripts read."""

from __future__ import annotations

__all__ = ["__version__", "TorchVersion", "cuda", "hip", "git_version", "debug"]


class TorchVersion(str):
    """A version string that compares with strings and tuples by release numbers, as torch's does
    (`torch.__version__ >= "2.1"`, `torch.__version__ >= (2, 1)`)."""

    def _key(self, other=None):
        text = self if other is None else other
        if isinstance(text, tuple):
            return tuple(int(p) for p in text)
        parts = []
        for piece in str(text).split("+")[0].split("."):
            digits = "".join(c for c in piece if c.isdigit()) if piece[:1].isdigit() else ""
            if not digits:
                break
            parts.append(int(digits))
        return tuple(parts)

    def _cmp(self, other):
        a, b = self._key(), self._key(other)
        width = max(len(a), len(b))
        a, b = a + (0,) * (width - len(a)), b + (0,) * (width - len(b))
        return (a > b) - (a < b)

    def __lt__(self, other):
        return self._cmp(other) < 0

    def __le__(self, other):
        return self._cmp(other) <= 0

    def __gt__(self, other):
        return self._cmp(other) > 0

    def __ge__(self, other):
        return self._cmp(other) >= 0

    def __eq__(self, other):
        return str.__eq__(self, other) if isinstance(other, str) and not other[:1].isdigit() else self._cmp(other) == 0

    __hash__ = str.__hash__


__version__ = TorchVersion("2.8.0+candle_bind")
cuda = None
hip = None
xpu = None
git_version = "candle_bind"
debug = False
