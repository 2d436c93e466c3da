"""torch.signal: the window functions of torch.signal.windows."""

from . import windows

__all__ = ["windows"]
