"""torch's legacy (pre-1.6, non-zip) checkpoint format, read for candle_bind.load.

torch.save(..., _use_new_zipfile_serialization=False) writes five pickles back to back (magic
number, protocol version, sys_info, the object, the list of storage keys) and then, per key, an
int64 element count and the raw little-endian elements. The object's pickle names its storages
before their bytes appear, so it is read twice: once to learn each storage's type (no tensor
built), then, with the bytes sliced out of the file, by the zip path's allow-list unpickler, so
both formats give the same objects and run no code from the file.
"""

from __future__ import annotations

import io
import struct

import numpy as np

from .serialization import (_STORAGES, UnpicklingError, _checked_pickle, _rebuild_parameter,
                            _rebuild_parameter_with_state, _rebuild_tensor, _rebuild_tensor_v2, _rebuild_tensor_v3,
                            _Storage, _storage_kind, _Unpickler)

__all__ = ["load_legacy"]

_LEGACY_MAGIC = 0x1950A86A20F9469CFC6C
_LEGACY_PROTOCOL = 1001


class _Pending:
    """Stands for a tensor in the first pass; accepts whatever a tensor accepts from the pickle."""

    def __setstate__(self, state):
        pass


_PENDING = _Pending()
_REBUILDS = {_rebuild_tensor_v2, _rebuild_tensor, _rebuild_tensor_v3, _rebuild_parameter,
             _rebuild_parameter_with_state}


class _HeaderUnpickler(_Unpickler):
    def __init__(self, file):
        super().__init__(file, {}, "")

    def persistent_load(self, pid):
        raise UnpicklingError(f"unexpected persistent id {pid!r} in a legacy checkpoint header")


class _LegacyScan(_Unpickler):
    """First pass: records each storage key's type; builds no tensor."""

    def __init__(self, file):
        super().__init__(file, {}, "")
        self.kinds: dict[str, str] = {}

    def find_class(self, module, name):
        found = super().find_class(module, name)
        return (lambda *args, **kwargs: _PENDING) if found in _REBUILDS else found

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and len(pid) in (5, 6)):
            raise UnpicklingError(f"unsupported persistent id {pid!r}")
        key, kind = str(pid[2]), _storage_kind(pid)
        if self.kinds.setdefault(key, kind) != kind:
            raise UnpicklingError(f"storage {key} is read both as {self.kinds[key]} and as {kind}; "
                                  "candle_bind does not reinterpret storages")
        return _PENDING


class _LegacyUnpickler(_Unpickler):
    """Second pass: the zip path's unpickler, plus the (view key, offset, size) storage views of
    pre-0.4 torch (view_metadata, the sixth persistent id field)."""

    def __init__(self, file, records):
        super().__init__(file, records, "")
        self._views: dict[str, _Storage] = {}

    def persistent_load(self, pid):
        root = super().persistent_load(pid)
        view = pid[5] if len(pid) > 5 else None
        if view is None:
            return root
        if not (isinstance(view, tuple) and len(view) == 3 and all(type(v) is int for v in view[1:])):
            raise UnpicklingError(f"invalid storage view {view!r}")
        view_key, offset, size = str(view[0]), view[1], view[2]
        if offset < 0 or size < 0 or offset + size > root.array.shape[0]:
            raise UnpicklingError(f"storage view {view_key} ({size} elements at {offset}) lies outside "
                                  f"storage {root.key} of {root.array.shape[0]} elements")
        if view_key not in self._views:
            self._views[view_key] = _Storage(root.array[offset:offset + size], root.kind, f"{root.key}/{view_key}")
        return self._views[view_key]


class _DictRecords(dict):
    read = dict.__getitem__


def _load_header(f, what: str):
    _checked_pickle(f, what)
    return _HeaderUnpickler(f).load()


def load_legacy(data: bytes):
    f = io.BytesIO(data)
    try:
        magic = _load_header(f, "magic number")
    except Exception:  # noqa: BLE001 - whatever this is, it is not a torch checkpoint
        magic = None
    if type(magic) is not int or magic != _LEGACY_MAGIC:
        raise UnpicklingError("not a torch checkpoint: neither a zip archive nor torch's legacy format "
                              "(Invalid magic number; corrupt file?)")
    version = _load_header(f, "protocol version")
    if type(version) is not int or version != _LEGACY_PROTOCOL:
        raise UnpicklingError(f"Invalid protocol version: {version!r}")
    sys_info = _load_header(f, "sys_info")
    if isinstance(sys_info, dict) and sys_info.get("little_endian") is False:
        raise UnpicklingError("this legacy checkpoint was written on a big-endian machine; candle_bind reads "
                              "little-endian storages only")
    start = _checked_pickle(f, "main")
    scan = _LegacyScan(f)
    scan.load()
    keys = _load_header(f, "storage keys")
    if not isinstance(keys, list):
        raise UnpicklingError(f"corrupt legacy checkpoint: the storage key list is a {type(keys).__name__}")
    records = _legacy_storages(data, f.tell(), [str(k) for k in keys], scan.kinds)
    f.seek(start)
    return _LegacyUnpickler(f, records).load()


def _legacy_storages(data: bytes, pos: int, keys: list, kinds: dict) -> _DictRecords:
    """Slices each storage's bytes out of `data` (no copy), every count checked against what remains."""
    if len(set(keys)) != len(keys):
        raise UnpicklingError("corrupt legacy checkpoint: a storage key is listed twice")
    missing = set(kinds) - set(keys)
    if missing:
        raise UnpicklingError(f"corrupt legacy checkpoint: storage {sorted(missing)[0]} is used but its data "
                              "is missing")
    view, records = memoryview(data), _DictRecords()
    for key in keys:
        if key not in kinds:
            raise UnpicklingError(f"storage key {key!r} not found in deserialized_objects")
        itemsize = np.dtype(_STORAGES[kinds[key]][0]).itemsize
        if len(data) - pos < 8:
            raise UnpicklingError(f"truncated legacy checkpoint: the size of storage {key} is missing")
        (count,) = struct.unpack_from("<q", data, pos)
        pos += 8
        if count < 0 or count * itemsize > len(data) - pos:
            raise UnpicklingError(f"truncated or corrupt legacy checkpoint: storage {key} claims {count} elements "
                                  f"({count * itemsize} bytes) but {len(data) - pos} bytes remain")
        records[f"data/{key}"] = view[pos:pos + count * itemsize]
        pos += count * itemsize
    return records
