"""torch.types: the type aliases libraries annotate with."""

from __future__ import annotations

from typing import Sequence, Union

from ._C import Tensor, device as _device_cls, dtype as _dtype_cls
from ._size import Size

__all__ = ["Device", "Number", "Storage", "_TensorOrTensors", "_bool", "_complex", "_device", "_dtype", "_float",
           "_int", "_layout", "_qscheme", "_size", "_dispatchkey"]

_bool, _int, _float, _complex = bool, int, float, complex
_device, _dtype = _device_cls, _dtype_cls
_size = Union[Size, list[int], tuple[int, ...]]
_layout = _qscheme = _dispatchkey = object
Number = Union[int, float, bool]
Device = Union[_device_cls, str, int, None]
Storage = object
_TensorOrTensors = Union[Tensor, Sequence[Tensor]]
