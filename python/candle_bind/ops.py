"""torch.ops: operators by namespace. `torch.ops.<ns>.<name>` are the ones `torch.library`
registered; torch's own (`aten`, ...) are not available and say so."""

from __future__ import annotations

import types

__all__ = ["load_library"]


class _OpNamespace(types.ModuleType):
    def __init__(self, name: str):
        super().__init__(f"torch.ops.{name}")
        self._ns = name

    def __getattr__(self, op):
        from .library import _OPS

        found = _OPS.get(f"{self._ns}::{op}")
        if found is None or op.startswith("__"):
            raise AttributeError(f"torch.ops.{self._ns}.{op} is not supported by candle_bind yet")
        return found


_namespaces: dict = {}


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    return _namespaces.setdefault(name, _OpNamespace(name))


def load_library(path) -> None:
    # torchvision's operators are ours (Rust kernels, `_vision_ops`): its extension "loads".
    from . import _vision_ops

    if _vision_ops.is_torchvision_extension(path):
        _vision_ops.register()
        return
    # torchvision's image codecs: Pillow stands in for them (`_vision_image`).
    from . import _vision_image

    if _vision_image.is_image_extension(path):
        _vision_image.register()
        return
    # Any other: an OSError, as torch's own when the library will not load: packages with optional
    # C++ ops catch it and go on without them.
    raise OSError(f"torch.ops.load_library({path!r}): candle_bind cannot load torch C++ extensions")
