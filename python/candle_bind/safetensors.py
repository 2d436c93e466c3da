"""candle_bind.safetensors: the API of `safetensors.torch`, on candle_bind tensors.

Files are memory-mapped and validated before anything is read (header size, offsets, byte
lengths); a tensor is then mapped in place, copy-on-write (no copy, no read up front, as
safetensors' own torch tensors), or, when small or misaligned, copied straight into its own buffer;
optionally to a target dtype/device (a copy only then).
"""

from __future__ import annotations

import os
from typing import Any, Dict, Optional

from . import _C
from ._C import Tensor

__all__ = ["load", "load_file", "load_model", "safe_open", "save", "save_file", "save_model", "storage_ptr",
           "storage_size"]


def storage_ptr(tensor: Tensor) -> int:
    """The address of the storage buffer behind `tensor` (shared by tensors that share memory)."""
    return tensor._storage_ptr()


def storage_size(tensor: Tensor) -> int:
    """The byte size of the storage buffer behind `tensor`."""
    return tensor._storage_nbytes()


def _path(filename) -> str:
    return os.fspath(filename)


class _Slice:
    """What `safe_open(...).get_slice(name)` returns: shape and dtype without reading, then `[...]`."""

    def __init__(self, handle, name: str):
        self._handle, self._name = handle, name

    def get_shape(self):
        return self._handle.info_of(self._name)[1]

    def get_dtype(self) -> str:
        return self._handle.info_of(self._name)[0]

    def __getitem__(self, key):
        return self._handle.get_tensor(self._name)[key]


class safe_open:  # noqa: N801 - the name safetensors uses
    """`with safe_open(path, framework="pt", device="cpu") as f: f.get_tensor(name)`."""

    def __init__(self, filename, framework: str = "pt", device="cpu"):
        if framework not in ("pt", "torch", "candle_bind", "np", "numpy"):
            raise ValueError(f"framework {framework!r} is not supported; use 'pt'")
        self._handle = _C.safe_open_file(_path(filename))
        self._device = device

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def keys(self):
        return self._handle.keys()

    def offset_keys(self):
        return self._handle.keys()

    def metadata(self) -> Optional[Dict[str, str]]:
        return self._handle.metadata()

    def get_tensor(self, name: str) -> Tensor:
        return self._handle.get_tensor(name, device=self._device)

    def get_slice(self, name: str) -> _Slice:
        return _Slice(self._handle, name)


def load_file(filename, device="cpu") -> Dict[str, Tensor]:
    """All tensors of a safetensors file (FileNotFoundError if it is missing)."""
    h = _C.safe_open_file(_path(filename))
    return h.tensors(device=device)


def load(data: bytes) -> Dict[str, Tensor]:
    """All tensors of safetensors bytes."""
    return _C.safe_open_bytes(bytes(data)).tensors()


def _check(tensors: Dict[str, Any]) -> list:
    if not isinstance(tensors, dict):
        raise ValueError(f"Expected a dict of [str, Tensor] but received {type(tensors)}")
    items = []
    for k, v in tensors.items():
        if not isinstance(k, str):
            raise ValueError(f"Key `{k}` is invalid, expected str but received {type(k)}")
        if not isinstance(v, Tensor):
            raise ValueError(f"Key `{k}` is invalid, expected Tensor but received {type(v)}")
        items.append((k, v))
    return items


def save(tensors: Dict[str, Tensor], metadata: Optional[Dict[str, str]] = None) -> bytes:
    return _C.safetensors_serialize(_check(tensors), metadata)


def save_file(tensors: Dict[str, Tensor], filename, metadata: Optional[Dict[str, str]] = None) -> None:
    from .serialization import write_file

    write_file(_path(filename), _C.safetensors_serialize(_check(tensors), metadata))


def _storage_key(t: Tensor):
    """Tensors sharing memory (tied weights) get the same key."""
    if t.numel() == 0:
        return None
    return (t.data_ptr(), tuple(t.shape), tuple(t.stride()))


def save_model(model, filename, metadata: Optional[Dict[str, str]] = None, force_contiguous: bool = False) -> None:
    """Saves a module's state_dict, writing tensors shared under several names once (as safetensors)."""
    sd = model.state_dict()
    seen: Dict[Any, str] = {}
    kept = {}
    for name, t in sd.items():
        key = _storage_key(t)
        if key is not None and key in seen:
            continue
        if key is not None:
            seen[key] = name
        kept[name] = t
    save_file(kept, filename, metadata)


def load_model(model, filename, strict: bool = True, device="cpu"):
    """Loads a file written by `save_model` (or safetensors.torch's) into a module; names dropped
    as duplicates of a shared tensor are not reported missing. Returns (missing, unexpected)."""
    state = load_file(filename, device=device)
    own = model.state_dict()
    groups: Dict[Any, list] = {}
    for name, t in own.items():
        groups.setdefault(_storage_key(t), []).append(name)
    shared_ok = set()
    for names in groups.values():
        if len(names) > 1 and any(n in state for n in names):
            shared_ok.update(n for n in names if n not in state)
    # Checked before anything is written, so a failed load leaves the model as it was.
    missing = [k for k in own if k not in state and k not in shared_ok]
    unexpected_keys = [k for k in state if k not in own]
    if strict and (missing or unexpected_keys):
        msgs = []
        if unexpected_keys:
            msgs.append("Unexpected key(s) in state_dict: {}. ".format(", ".join(f'"{k}"' for k in unexpected_keys)))
        if missing:
            msgs.append("Missing key(s) in state_dict: {}. ".format(", ".join(f'"{k}"' for k in missing)))
        raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(model.__class__.__name__, "\n\t".join(msgs)))
    model.load_state_dict(state, strict=False)
    return missing, unexpected_keys
