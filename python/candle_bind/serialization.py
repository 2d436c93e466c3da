"""candle_bind.load / candle_bind.save: the zip + pickle format `torch.save` writes (.pt/.pth/.bin),
and, for loading only, torch's legacy pre-1.6 format (`_use_new_zipfile_serialization=False`).

Loading never runs code from the file: the unpickler resolves only an allow-list of globals (the
tensor/parameter rebuild functions, storage types, OrderedDict, ...) like torch's
`weights_only=True`, and names any other global in its error. Storages are read from the zip
records with numpy, bounds-checked, and turned into candle_bind tensors; views that share a
storage at the same place (tied weights) come back as the same tensor object. Both formats go
through the same unpickler; the legacy one differs only in where the storage bytes live.
"""

from __future__ import annotations

import io
import os
import pickle
import pickletools
import struct
import threading
import zipfile
from collections import OrderedDict
from functools import cache
from typing import Any

import numpy as np

from . import _C
from ._C import Tensor

__all__ = ["load", "save", "UnpicklingError"]

UnpicklingError = pickle.UnpicklingError

# storage type name → (numpy dtype read from the record, candle_bind dtype name)
_STORAGES = {
    "FloatStorage": ("<f4", "float32"), "DoubleStorage": ("<f8", "float64"), "HalfStorage": ("<f2", "float16"),
    "BFloat16Storage": ("<u2", "bfloat16"), "LongStorage": ("<i8", "int64"), "IntStorage": ("<i4", "int32"),
    "ShortStorage": ("<i2", "int16"), "CharStorage": ("i1", "int8"), "ByteStorage": ("u1", "uint8"),
    "BoolStorage": ("?", "bool"),
    # torch has no such class: float8 tensors are an UntypedStorage plus `torch.float8_e4m3fn`
    # (_rebuild_tensor_v3); the name is this module's handle for that pair.
    "Float8_e4m3fnStorage": ("u1", "float8_e4m3fn"),
    "ComplexFloatStorage": ("<c8", "complex64"), "ComplexDoubleStorage": ("<c16", "complex128"),
    # Quantized tensors' integer values (_rebuild_qtensor adds their scale and zero point).
    "QInt8Storage": ("i1", "int8"), "QUInt8Storage": ("u1", "uint8"), "QInt32Storage": ("<i4", "int32"),
    # Bytes with no dtype of their own; _rebuild_tensor_v3 says how to read them.
    "UntypedStorage": ("u1", None),
}
_DTYPE_STORAGE = {"float32": "FloatStorage", "float64": "DoubleStorage", "float16": "HalfStorage",
                  "bfloat16": "BFloat16Storage", "int64": "LongStorage", "int32": "IntStorage", "int16": "ShortStorage",
                  "int8": "CharStorage", "uint8": "ByteStorage", "bool": "BoolStorage",
                  "complex64": "ComplexFloatStorage", "complex128": "ComplexDoubleStorage"}
_TORCH_DTYPES = {"float32": "FloatStorage", "float": "FloatStorage", "float64": "DoubleStorage", "double": "DoubleStorage",
                 "float16": "HalfStorage", "half": "HalfStorage", "bfloat16": "BFloat16Storage", "int64": "LongStorage",
                 "long": "LongStorage", "int32": "IntStorage", "int": "IntStorage", "int16": "ShortStorage",
                 "short": "ShortStorage", "int8": "CharStorage", "uint8": "ByteStorage", "bool": "BoolStorage",
                 "float8_e4m3fn": "Float8_e4m3fnStorage", "complex64": "ComplexFloatStorage",
                 "cfloat": "ComplexFloatStorage", "complex128": "ComplexDoubleStorage", "cdouble": "ComplexDoubleStorage"}
# torch dtypes a checkpoint may name that candle_bind has no tensors of: named in a DTypeError.
_UNSUPPORTED_DTYPES = {"uint16", "uint32", "uint64", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz",
                       "float8_e8m0fnu", "complex32", "chalf"}
_UNSUPPORTED_STORAGES = {"QUInt4x2Storage": "quint4x2", "QUInt2x4Storage": "quint2x4"}
_QUANTIZED_STORAGES = {"QInt8Storage": "qint8", "QUInt8Storage": "quint8", "QInt32Storage": "qint32"}


class _StorageType:
    def __init__(self, name: str):
        self.name = name


class _UnsupportedDtype:
    def __init__(self, name: str):
        self.name = name


def _unsupported(dtype: _UnsupportedDtype) -> Exception:
    return _C.DTypeError(f"torch.{dtype.name} tensors are not supported by candle_bind yet")


def _storage_kind(pid) -> str:
    """The storage type name of a ('storage', type, key, location, numel, ...) persistent id."""
    if not (isinstance(pid, tuple) and len(pid) >= 5 and pid[0] == "storage"):
        raise UnpicklingError(f"unsupported persistent id {pid!r}")
    if isinstance(pid[1], _UnsupportedDtype):
        raise _unsupported(pid[1])
    if not isinstance(pid[1], _StorageType):
        raise UnpicklingError(f"unsupported storage type {pid[1]!r}")
    return pid[1].name


class _Storage:
    """One storage record: its elements as a 1-D numpy array, and the device it was saved from."""

    def __init__(self, array: np.ndarray, kind: str, key: str, location: str = "cpu"):
        self.array, self.kind, self.key, self.location = array, kind, key, location

    @property
    def numel(self) -> int:
        return self.array.shape[0]

    def view(self, offset: int, size: tuple, stride: tuple) -> Tensor:
        n, item = self.array.shape[0], self.array.itemsize
        view = np.lib.stride_tricks.as_strided(self.array[offset:] if n else self.array, shape=size,
                                               strides=tuple(s * item for s in stride), writeable=False)
        return _to_tensor(view, self.kind)


# Storage kinds a record of a checkpoint file is read as by Rust (mapped in place, or copied);
# complex storages go through numpy.
_NATIVE = {k: v[1] for k, v in _STORAGES.items() if v[1] is not None and not k.startswith("Complex")}


class _RecordStorage:
    """A storage record of a checkpoint file on disk (stored, not compressed): read as one 1-D tensor
    the first time a view needs it, mapped in place under mmap=True (views of it share its memory,
    as torch's), else copied once straight from the file."""

    def __init__(self, path: str, offset: int, nbytes: int, kind: str, key: str, location: str, mmap: bool):
        self.path, self.offset, self.nbytes, self.kind, self.key, self.location = path, offset, nbytes, kind, key, location
        self.mmap, self._tensor = mmap, None

    @property
    def numel(self) -> int:
        return self.nbytes // np.dtype(_STORAGES[self.kind][0]).itemsize

    def tensor(self) -> Tensor:
        if self._tensor is None:
            dtype = getattr(_C, _NATIVE.get(self.kind, "uint8"))  # an untyped record: its bytes
            self._tensor = _C.read_storage(self.path, self.offset, self.nbytes, dtype, self.mmap)
        return self._tensor

    def view(self, offset: int, size: tuple, stride: tuple) -> Tensor:
        flat = self.tensor()
        numel = int(np.prod(size, dtype=np.int64))
        expect, acc = [], 1
        for n in reversed(size):
            expect.append(acc)
            acc *= n
        if numel == 0 or all(n == 1 or st == e for n, st, e in zip(size, stride, reversed(expect))):
            if offset == 0 and numel == flat.numel():
                return flat.reshape(size)
            return flat[offset:offset + numel].reshape(size)
        from ._layout_ops import as_strided

        return as_strided(flat, size, stride, offset)


# The saved device of each tensor a load() in progress has built that was not on the CPU (by id):
# torch.load puts tensors back where they were saved unless map_location says otherwise.
_LOCATIONS = threading.local()


@cache
def _e4m3fn_values() -> np.ndarray:
    """float32 value of each float8_e4m3fn byte: 4 exponent bits (bias 7), 3 mantissa bits, no
    infinities, NaN at 0x7f/0xff. float32 holds every one exactly, so .to(float8) gives the bytes back."""
    b = np.arange(256, dtype=np.int64)
    exp, man = (b >> 3) & 0xF, (b & 7).astype(np.float64)
    mag = np.where(exp == 0, man / 8 * 2.0**-6, (1 + man / 8) * np.exp2(exp - 7))
    mag[(b & 0x7F) == 0x7F] = np.nan
    return np.where(b & 0x80, -mag, mag).astype(np.float32)


def _to_tensor(arr: np.ndarray, kind: str) -> Tensor:
    dtype = _STORAGES[kind][1]
    assert dtype is not None, "untyped storages are typed by _rebuild_tensor_v3 first"
    # (np.ascontiguousarray would turn 0-d arrays into 1-d ones; copies keep the shape.)
    if kind == "Float8_e4m3fnStorage":
        f32 = _e4m3fn_values()[arr.reshape(-1)].reshape(arr.shape)
        return _C.from_numpy(f32).to(_C.float8_e4m3fn)
    if kind == "BFloat16Storage":
        f32 = (arr.astype(np.uint32) << 16).view(np.float32)
        return _C.from_numpy(f32).to(_C.bfloat16)
    if kind in ("ComplexFloatStorage", "ComplexDoubleStorage"):
        from ._complex import from_numpy_complex

        return from_numpy_complex(arr.copy(order="C"))
    t = _C.from_numpy(arr.copy(order="C"))
    return t if repr(t.dtype).endswith(dtype) else t.to(getattr(_C, dtype))


def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad=False, backward_hooks=None, metadata=None):
    if not isinstance(storage, (_Storage, _RecordStorage)):
        raise UnpicklingError("tensor rebuilt from something that is not a storage record")
    if storage.kind == "UntypedStorage":
        raise UnpicklingError("tensor rebuilt from an untyped storage without a dtype")
    size, stride = tuple(int(s) for s in size), tuple(int(s) for s in stride)
    n = storage.numel
    if len(size) != len(stride) or storage_offset < 0 or any(s < 0 for s in size) or any(s < 0 for s in stride):
        raise UnpicklingError(f"invalid tensor view: size {size}, stride {stride}, offset {storage_offset}")
    if all(s > 0 for s in size):
        last = storage_offset + sum((s - 1) * st for s, st in zip(size, stride))
        if last >= n:
            raise UnpicklingError(f"tensor of size {size} with stride {stride} at offset {storage_offset} "
                                  f"reads past its storage of {n} elements")
    cache = storage.__dict__.setdefault("views", {})
    key = (storage_offset, size, stride)
    if key not in cache:
        cache[key] = storage.view(storage_offset, size, stride)
        if storage.location != "cpu" and getattr(_LOCATIONS, "seen", None) is not None:
            _LOCATIONS.seen[id(cache[key])] = storage.location
    return cache[key]


def _rebuild_tensor(storage, storage_offset, size, stride):
    return _rebuild_tensor_v2(storage, storage_offset, size, stride)


def _rebuild_tensor_v3(storage, storage_offset, size, stride, requires_grad=False, backward_hooks=None, dtype=None,
                       metadata=None):
    """What torch writes for dtypes without a legacy storage class (float8, uint16, ...)."""
    return _rebuild_tensor_v2(_typed(storage, dtype), storage_offset, size, stride)


def _typed(storage, dtype) -> _Storage:
    """An untyped (byte) storage read as `dtype`'s elements; one per dtype, so tied tensors stay one object."""
    if isinstance(dtype, _UnsupportedDtype):
        raise _unsupported(dtype)
    if not isinstance(storage, (_Storage, _RecordStorage)) or not isinstance(dtype, _StorageType) or _STORAGES[dtype.name][1] is None:
        raise UnpicklingError(f"_rebuild_tensor_v3 got storage {storage!r} with dtype {dtype!r}")
    if storage.kind == dtype.name:
        return storage
    if storage.kind != "UntypedStorage":
        raise UnpicklingError(f"a {storage.kind} read as {dtype.name}: candle_bind does not reinterpret typed storages")
    typed = storage.__dict__.setdefault("typed", {})
    if dtype.name not in typed:
        np_dtype = np.dtype(_STORAGES[dtype.name][0])
        nbytes = storage.nbytes if isinstance(storage, _RecordStorage) else storage.array.nbytes
        if nbytes % np_dtype.itemsize:
            raise UnpicklingError(f"storage {storage.key} has {nbytes} bytes, "
                                  f"not a whole number of {dtype.name} elements")
        if isinstance(storage, _RecordStorage) and dtype.name in _NATIVE:
            typed[dtype.name] = _RecordStorage(storage.path, storage.offset, nbytes, dtype.name, storage.key,
                                               storage.location, storage.mmap)
        else:
            array = storage.array if isinstance(storage, _Storage) else storage.tensor().numpy()
            typed[dtype.name] = _Storage(array.view(np_dtype), dtype.name, storage.key, storage.location)
    return typed[dtype.name]


def _rebuild_parameter(data, requires_grad, backward_hooks=None):
    from .nn.parameter import Parameter

    return Parameter(data, requires_grad)


def _rebuild_parameter_with_state(data, requires_grad, backward_hooks, state):
    return _rebuild_parameter(data, requires_grad, backward_hooks)


def _rebuild_qtensor(storage, storage_offset, size, stride, quantizer_params, requires_grad=False,
                     backward_hooks=None):
    """A quantized tensor (torch.save of a dynamic quantized Linear's weight): its integer values and
    (qscheme, scale, zero_point) or (qscheme, scales, zero_points, axis)."""
    from . import _qtensor

    if not isinstance(storage, (_Storage, _RecordStorage)) or storage.kind not in _QUANTIZED_STORAGES:
        raise UnpicklingError(f"_rebuild_qtensor got a {getattr(storage, 'kind', type(storage).__name__)}")
    values = _rebuild_tensor_v2(storage, storage_offset, size, stride)
    dtype = getattr(_C, _QUANTIZED_STORAGES[storage.kind])
    scheme = quantizer_params[0]
    if scheme is _qtensor.per_tensor_affine:
        _, scale, zero_point = quantizer_params
        return _qtensor.QuantizedTensor(values, dtype, scheme, [float(scale)], [int(zero_point)])
    if scheme in (_qtensor.per_channel_affine, _qtensor.per_channel_affine_float_qparams):
        _, scales, zero_points, axis = quantizer_params
        return _qtensor.QuantizedTensor(values, dtype, scheme, scales.tolist(), zero_points.tolist(), int(axis))
    raise UnpicklingError(f"unsupported quantization scheme {scheme!r} in the checkpoint")


def _rebuild_from_type_v2(func, new_type, args, state):
    return func(*args)


def _encode(s, encoding="latin1"):
    return s.encode(encoding)


_ALLOWED = {
    ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor_v2,
    ("torch._utils", "_rebuild_tensor"): _rebuild_tensor,
    ("torch._utils", "_rebuild_tensor_v3"): _rebuild_tensor_v3,
    ("torch._utils", "_rebuild_qtensor"): _rebuild_qtensor,
    ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
    ("torch._utils", "_rebuild_parameter_with_state"): _rebuild_parameter_with_state,
    ("torch._tensor", "_rebuild_from_type_v2"): _rebuild_from_type_v2,
    ("torch.nn.parameter", "Parameter"): _rebuild_parameter,
    ("collections", "OrderedDict"): OrderedDict,
    ("builtins", "set"): set,
    ("builtins", "frozenset"): frozenset,
    ("builtins", "slice"): slice,
    ("builtins", "complex"): complex,
    ("builtins", "bytearray"): bytearray,
    ("_codecs", "encode"): _encode,
    ("torch", "Size"): tuple,
    ("torch", "device"): str,
}


class _Unpickler(pickle.Unpickler):
    def __init__(self, file, records, prefix):
        super().__init__(file, encoding="utf-8")
        self._records, self._prefix, self._storages = records, prefix, {}

    def find_class(self, module, name):
        if (module, name) in _ALLOWED:
            return _ALLOWED[(module, name)]
        # (Legacy files from CUDA tensors may name torch.cuda.FloatStorage; the location is ignored anyway.)
        if module in ("torch", "torch.cuda", "torch.storage") and name in _STORAGES:
            return _StorageType(name)
        if module == "torch" and name in _TORCH_DTYPES:
            return _StorageType(_TORCH_DTYPES[name])
        if module == "torch" and name in _UNSUPPORTED_DTYPES:
            return _UnsupportedDtype(name)
        if module in ("torch", "torch.cuda") and name in _UNSUPPORTED_STORAGES:
            return _UnsupportedDtype(_UNSUPPORTED_STORAGES[name])
        if module == "torch" and name in ("qint8", "quint8", "qint32"):  # a quantized Linear's `dtype` entry
            return getattr(_C, name)
        if module == "torch" and name.startswith("per_"):
            from ._qtensor import QSCHEMES

            if name in QSCHEMES:
                return QSCHEMES[name]
        raise UnpicklingError(
            f"Weights only load failed: unsupported global {module}.{name} in the checkpoint. candle_bind never runs "
            "code from checkpoint files; only tensors, parameters, OrderedDict and plain Python values load.")

    def persistent_load(self, pid):
        kind = _storage_kind(pid)
        key, numel = str(pid[2]), pid[4]
        if key not in self._storages:
            self._storages[key] = self._storage(kind, key, str(pid[3]))
        st = self._storages[key]
        if st.numel < int(numel):
            raise UnpicklingError(f"storage record {key} holds {st.numel} elements, the pickle says {numel}")
        return st

    def _storage(self, kind: str, key: str, location: str):
        name = f"{self._prefix}data/{key}"
        if name not in self._records:
            raise UnpicklingError(f"storage record {name} is missing from the archive")
        itemsize = np.dtype(_STORAGES[kind][0]).itemsize
        locate = getattr(self._records, "locate", None)  # (the legacy format's records are bytes)
        located = locate(name) if locate is not None and (kind in _NATIVE or kind == "UntypedStorage") else None
        nbytes = located[2] if located is not None else None
        raw = self._records.read(name) if located is None else None
        if (nbytes if raw is None else len(raw)) % itemsize:
            raise UnpicklingError(f"storage record {name} has {nbytes if raw is None else len(raw)} bytes, "
                                  f"not a whole number of {kind} elements")
        if located is not None:
            path, offset, nbytes, mmap = located
            return _RecordStorage(path, offset, nbytes, kind, key, location, mmap)
        return _Storage(np.frombuffer(raw, dtype=np.dtype(_STORAGES[kind][0])), kind, key, location)


class _Records:
    def __init__(self, zf: zipfile.ZipFile):
        self._zf, self._names = zf, set(zf.namelist())

    def __contains__(self, name):
        return name in self._names

    def read(self, name):
        return self._zf.read(name)

    def locate(self, name):
        """(path, byte offset, byte size, mmap) of a record read straight from the file; None here."""
        return None


class _FileRecords(_Records):
    """The records of an archive on disk: stored (uncompressed) ones are read by Rust from the file."""

    def __init__(self, zf: zipfile.ZipFile, path: str, mmap: bool):
        super().__init__(zf)
        self._path, self._mmap = path, mmap

    def locate(self, name):
        info = self._zf.getinfo(name)
        if info.compress_type != zipfile.ZIP_STORED:
            return None
        # The data follows the record's local header, whose name and extra field lengths may differ
        # from the central directory's (torch pads the extra field to align the data to 64 bytes).
        fp = self._zf.fp
        fp.seek(info.header_offset)
        head = fp.read(30)
        if len(head) != 30 or head[:4] != b"PK\x03\x04":
            raise UnpicklingError(f"corrupted checkpoint: bad local header for record {name}")
        n, m = struct.unpack("<HH", head[26:30])
        return self._path, info.header_offset + 30 + n + m, info.file_size, self._mmap


def _map(obj, fn, memo=None):
    """`fn` on every tensor in nested containers. Memoized by identity, so tied tensors stay tied and
    shared or cyclic containers cost one visit."""
    memo = {} if memo is None else memo
    if id(obj) in memo:
        return memo[id(obj)]
    if isinstance(obj, Tensor):
        memo[id(obj)] = fn(obj)
    elif type(obj) in (dict, OrderedDict):
        out = memo[id(obj)] = type(obj)()  # before the children: a container may hold itself
        out.update((k, _map(v, fn, memo)) for k, v in obj.items())
        if type(obj) is OrderedDict:
            out.__dict__.update(obj.__dict__)  # state_dict()._metadata
    elif type(obj) is list:
        out = memo[id(obj)] = []
        out.extend(_map(v, fn, memo) for v in obj)
    elif type(obj) is tuple:
        memo[id(obj)] = tuple(_map(v, fn, memo) for v in obj)
    else:
        return obj
    return memo[id(obj)]


def _read_all(f) -> bytes:
    if isinstance(f, (str, os.PathLike)):
        with open(os.fspath(f), "rb") as fh:
            return fh.read()
    if isinstance(f, (bytes, bytearray)):
        return bytes(f)
    return f.read()


def _is_zip(data: bytes) -> bool:
    try:
        return zipfile.is_zipfile(io.BytesIO(data))
    except Exception:  # noqa: BLE001 - zipfile raises assorted errors on damaged directories
        return True  # let ZipFile report what is wrong


_MEMO_PUTS = {"PUT", "BINPUT", "LONG_BINPUT"}
_MEMO_GETS = {"GET", "BINGET", "LONG_BINGET"}


def _checked_pickle(f, what: str) -> int:
    """Walks one pickle's opcodes without running any, so that damage fails here, in pure Python,
    rather than sizing memory in the C unpickler: a length claiming more bytes than remain (which
    the C unpickler allocates before reading), a memo index beyond the entries stored so far (it
    grows its memo table to the index), a digit string past Python's limit. Returns its start."""
    start = f.tell()
    stored = 0
    try:
        for op, arg, _ in pickletools.genops(f):
            if op.name in _MEMO_PUTS or op.name == "MEMOIZE":
                # Picklers number memo entries in order: an index past the count is not from one.
                if op.name != "MEMOIZE" and not 0 <= arg <= stored:
                    raise ValueError(f"memo index {arg} after {stored} entries")
                stored += 1
            elif op.name in _MEMO_GETS and not 0 <= arg < stored:
                raise ValueError(f"memo index {arg} read with {stored} entries stored")
    except Exception as e:  # noqa: BLE001 - genops raises ValueError and others on damaged input
        raise UnpicklingError(f"truncated or corrupt checkpoint: the {what} pickle at byte {start} is damaged ({e})") from None
    f.seek(start)
    return start


def _load_zip(data: bytes):
    return _unpickle_zip(zipfile.ZipFile(io.BytesIO(data)), _Records)


def _unpickle_zip(zf: zipfile.ZipFile, records):
    pkl = [n for n in zf.namelist() if n.endswith("data.pkl")]
    if not pkl:
        raise UnpicklingError("not a torch checkpoint: the archive has no data.pkl record")
    prefix = pkl[0][: -len("data.pkl")]
    f = io.BytesIO(zf.read(pkl[0]))
    _checked_pickle(f, "data.pkl")
    return _Unpickler(f, records(zf), prefix).load()


def _load_zip_file(path: str, mmap: bool):
    """A zip checkpoint on disk: only the directory and the pickle are read here; each storage record
    is mapped (mmap=True) or copied once, by Rust, when a tensor needs it."""
    with zipfile.ZipFile(path) as zf:
        return _unpickle_zip(zf, lambda z: _FileRecords(z, path, mmap))


def load(f, map_location=None, pickle_module=None, *, weights_only: bool = True, mmap=None, **pickle_load_args) -> Any:
    """torch.load for the zip and the legacy formats: returns the saved object with candle_bind tensors.
    `weights_only=False` is accepted but grants nothing more: no code from the file ever runs.
    `mmap=True` (a path only, as torch) maps each tensor's bytes in place, copy-on-write: no read up
    front, and writes to the tensors never reach the file."""
    path = os.fspath(f) if isinstance(f, (str, os.PathLike)) else None
    if mmap and path is None:
        raise ValueError("f must be a file path in order to use the mmap argument")
    if path is not None:
        with open(path, "rb") as fh:  # FileNotFoundError and friends as torch's, before anything else
            is_zip = zipfile.is_zipfile(fh)
    data = None if path is not None and is_zip else _read_all(f)
    if mmap and data is not None:
        raise RuntimeError("mmap can only be used with files saved with "
                           f"`torch.save({f + ', ' if isinstance(f, str) else ''}_use_new_zipfile_serialization=True), "
                           "please torch.save your checkpoint with this option in order to use mmap.")
    _LOCATIONS.seen = {}
    try:
        if data is None:
            obj = _load_zip_file(path, bool(mmap))
        elif _is_zip(data):
            obj = _load_zip(data)
        elif data[257:262] == b"ustar":
            raise UnpicklingError(
                "this is torch's oldest checkpoint format (a tar archive, from torch's earliest releases), which "
                "candle_bind does not read (torch itself refuses it with weights_only=True); re-save it with torch: "
                "torch.save(torch.load(f, weights_only=False), f2)")
        else:
            from ._legacy_checkpoint import load_legacy

            obj = load_legacy(data)
    except (UnpicklingError, _C.DTypeError):
        raise
    except Exception as e:  # noqa: BLE001 - zipfile/pickle raise many kinds of errors on damaged input
        raise UnpicklingError(f"corrupted checkpoint: {type(e).__name__}: {e}") from None
    finally:
        seen, _LOCATIONS.seen = _LOCATIONS.seen, None
    return _map(obj, lambda t: _place(t, seen.get(id(t), "cpu"), map_location))


def _place(t: Tensor, location: str, map_location) -> Tensor:
    """Where torch.load puts a tensor saved on `location`: there, or where map_location sends it
    (a device or its name, a dict of location names, or a callable(storage, location))."""
    if callable(map_location) and not isinstance(map_location, (str, _C.device)):
        moved = map_location(t, location)
        return moved if isinstance(moved, Tensor) else t
    if isinstance(map_location, dict):
        target = map_location.get(location, location)
    elif map_location is not None:
        target = map_location
    else:
        target = location
    target = _C.device(target) if not isinstance(target, _C.device) else target
    if target.type == "cuda" and not _C.cuda_is_available():
        raise RuntimeError("Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is False. "
                           "If you are running on a CPU-only machine, please use torch.load with "
                           "map_location=torch.device('cpu') to map your storages to the CPU.")
    moved = t.to(target)
    if moved is not t and type(t) is not Tensor:
        from .nn.parameter import Parameter

        if isinstance(t, Parameter):
            return Parameter(moved, t.requires_grad)
    return moved


# ----------------------------------------------------------------------------------------- save
class _Writer:
    """A protocol-2 pickle of dicts/lists/tuples/scalars/strings/tensors, as torch.save lays it out."""

    def __init__(self):
        self.out = io.BytesIO()
        self.storages: list = []
        self.keys: dict = {}

    def w(self, b: bytes):
        self.out.write(b)

    def glob(self, module: str, name: str):
        self.w(b"c" + module.encode() + b"\n" + name.encode() + b"\n")

    def str_(self, s: str):
        b = s.encode("utf-8")
        self.w(b"X" + struct.pack("<I", len(b)) + b)

    def int_(self, i: int):
        if -(2**31) <= i < 2**31:
            self.w(b"J" + struct.pack("<i", i))
        else:
            b = i.to_bytes((i.bit_length() + 8) // 8, "little", signed=True)
            self.w(b"\x8a" + bytes([len(b)]) + b)

    def obj(self, x):
        if x is None:
            self.w(b"N")
        elif x is True:
            self.w(b"\x88")
        elif x is False:
            self.w(b"\x89")
        elif isinstance(x, Tensor):
            self.tensor(x)
        elif isinstance(x, _C.dtype):
            self.glob("torch", repr(x).rsplit(".", 1)[-1])
        elif type(x).__name__ in ("QuantizedTensor", "qscheme") and type(x).__module__ == "candle_bind._qtensor":
            self.quantized(x)
        elif isinstance(x, int):
            self.int_(x)
        elif isinstance(x, float):
            self.w(b"G" + struct.pack(">d", x))
        elif isinstance(x, str):
            self.str_(x)
        elif isinstance(x, (dict, OrderedDict)):
            if isinstance(x, OrderedDict):
                self.glob("collections", "OrderedDict")
                self.w(b")R")
            else:
                self.w(b"}")
            if x:
                self.w(b"(")
                for k, v in x.items():
                    self.obj(k)
                    self.obj(v)
                self.w(b"u")
            if isinstance(x, OrderedDict) and "_metadata" in getattr(x, "__dict__", {}):
                # state_dict()'s versions, which torch's loaders read (BUILD sets the attribute back)
                self.obj({"_metadata": x._metadata})
                self.w(b"b")
        elif isinstance(x, list):
            self.w(b"]")
            if x:
                self.w(b"(")
                for v in x:
                    self.obj(v)
                self.w(b"e")
        elif isinstance(x, tuple):
            self.w(b"(")
            for v in x:
                self.obj(v)
            self.w(b"t")
        else:
            raise TypeError(f"candle_bind.save cannot write objects of type {type(x).__name__} "
                            "(tensors, dicts, lists, tuples, numbers, strings, None and bools)")

    def quantized(self, x):
        """A quantized tensor as torch writes one (_rebuild_qtensor), or a qscheme (a torch global)."""
        from . import _qtensor

        if isinstance(x, _qtensor.qscheme):
            return self.glob("torch", x.name)
        self.glob("torch._utils", "_rebuild_qtensor")
        self.w(b"(")
        self.storage_view(x._int, _qtensor._INT_DTYPES[repr(x.dtype).rsplit(".", 1)[-1]][1])
        if x._axis is None:
            self.obj((x.qscheme(), float(x._scales[0]), int(x._zps[0])))
        else:
            self.obj((x.qscheme(), x.q_per_channel_scales(), x.q_per_channel_zero_points(), int(x._axis)))
        self.w(b"\x89")
        self.glob("collections", "OrderedDict")
        self.w(b")R")
        self.w(b"tR")

    def tensor(self, t: Tensor):
        from .nn.parameter import Parameter

        is_param = isinstance(t, Parameter)
        if is_param:
            self.glob("torch._utils", "_rebuild_parameter")
            self.w(b"(")
        self.glob("torch._utils", "_rebuild_tensor_v2")
        self.w(b"(")
        self.storage_view(t, _DTYPE_STORAGE[repr(t.dtype).rsplit(".", 1)[-1]])
        self.w(b"\x89")
        self.glob("collections", "OrderedDict")
        self.w(b")R")
        self.w(b"tR")
        if is_param:
            self.w(b"\x88" if t.requires_grad else b"\x89")
            self.glob("collections", "OrderedDict")
            self.w(b")R")
            self.w(b"tR")

    def storage_view(self, t: Tensor, kind: str):
        """The persistent id of `t`'s storage record (as `kind`), offset 0, size and contiguous stride."""
        dtype = repr(t.dtype).rsplit(".", 1)[-1]
        # Tensors sharing memory at the same place (tied weights) share one storage record.
        ident = (t.data_ptr(), tuple(t.shape), tuple(t.stride()), dtype) if t.numel() else None
        if ident is not None and ident in self.keys:
            key = self.keys[ident]
        else:
            key = str(len(self.storages))
            self.storages.append(t.contiguous())
            if ident is not None:
                self.keys[ident] = key
        self.w(b"(")  # persistent id tuple
        self.str_("storage")
        self.glob("torch", kind)
        self.str_(key)
        self.str_(str(t.device))  # torch.load puts the tensor back there (map_location aside)
        self.int_(t.numel())
        self.w(b"tQ")
        self.int_(0)
        self.obj(tuple(int(s) for s in t.shape))
        stride, acc = [], 1
        for s in reversed(t.shape):
            stride.append(acc)
            acc *= s
        self.obj(tuple(reversed(stride)))


def _storage_bytes(t: Tensor) -> bytes:
    t = t.cpu()
    if t.dtype == _C.bfloat16:
        f32 = t.float().numpy().copy(order="C")
        return (f32.view(np.uint32) >> 16).astype("<u2").tobytes()
    return t.numpy().copy(order="C").tobytes()


def save(obj: Any, f, pickle_module=None, pickle_protocol=2, _use_new_zipfile_serialization=True) -> None:
    """torch.save's zip format, readable by `torch.load(weights_only=True)`."""
    wr = _Writer()
    wr.w(b"\x80\x02")
    wr.obj(obj)
    wr.w(b".")
    name = "archive"
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED) as zf:
        zf.writestr(f"{name}/data.pkl", wr.out.getvalue())
        zf.writestr(f"{name}/byteorder", "little")
        for i, t in enumerate(wr.storages):
            _write_aligned(zf, buf, f"{name}/data/{i}", _storage_bytes(t))
        zf.writestr(f"{name}/version", "3\n")
    data = buf.getvalue()
    if isinstance(f, (str, os.PathLike)):
        write_file(os.fspath(f), data)
    else:
        f.write(data)


def _write_aligned(zf: zipfile.ZipFile, buf: io.BytesIO, name: str, data: bytes) -> None:
    """A stored record whose data starts at a multiple of 64 bytes, padded as torch's writer pads
    (an extra field "FB"), so torch.load(mmap=True) maps its tensors in place."""
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type, info.external_attr = zipfile.ZIP_STORED, 0o600 << 16
    start = buf.tell() + 30 + len(name.encode()) + 4
    pad = -start % 64
    info.extra = b"FB" + struct.pack("<H", pad) + b"Z" * pad
    zf.writestr(info, data)


def write_file(path: str, data: bytes) -> None:
    """Writes `data` to `path`. A file that tensors of this process map in place (loaded with mmap)
    is replaced, not truncated: a new file renamed over it, so the mapped tensors keep the old bytes
    (truncating it would make reading them raise SIGBUS)."""
    if not _C.is_mapped(path):
        with open(path, "wb") as fh:
            fh.write(data)
        return
    import shutil
    import tempfile

    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)), prefix=".candle_bind-")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        shutil.copymode(path, tmp)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
