"""torch's legacy (pre-1.6, non-zip) checkpoints, written live by torch with
`_use_new_zipfile_serialization=False` and read by candle_bind.load: real layers end to end, every
storage dtype (the same dtypes the zip path gives), shared storages and views, nested objects,
file kinds and map_location, truncated and corrupt files (clear exceptions, no code run, no
buffers sized from a header), and load_state_dict's one-element -> 0-d rule for 0.3 checkpoints."""

import io
import os
import pickle
import pickletools
import random
import struct
import tarfile
import time
from collections import OrderedDict

import numpy as np
import pytest
import torch

import candle_bind as cb
from candle_bind import nn
from conftest import assert_same, make, to_cb

CLEAN_ERRORS = (pickle.UnpicklingError, RuntimeError)  # DTypeError and CandleError are RuntimeErrors


def legacy(obj) -> bytes:
    buf = io.BytesIO()
    torch.save(obj, buf, _use_new_zipfile_serialization=False)
    return buf.getvalue()


def zipped(obj) -> bytes:
    buf = io.BytesIO()
    torch.save(obj, buf)
    return buf.getvalue()


def torch_view(data: bytes):
    """torch's own reading of a file (the oracle), with its safe loader."""
    return torch.load(io.BytesIO(data), weights_only=True)


def as_np(t):
    if isinstance(t, torch.Tensor):
        t = t.detach()
        return (t.float() if t.dtype in (torch.bfloat16, torch.float8_e4m3fn) else t).numpy()
    return (t.float() if t.dtype in (cb.bfloat16, cb.float8_e4m3fn) else t).numpy()


def assert_same_values(ours, ref):
    assert tuple(ours.shape) == tuple(ref.shape)
    np.testing.assert_array_equal(as_np(ours), as_np(ref))


def pickle_ends(data: bytes, count: int) -> list:
    """Byte offsets where each of the first `count` pickles of the file ends (opcodes walked, none run)."""
    f, ends = io.BytesIO(data), []
    for _ in range(count):
        for _ in pickletools.genops(f):
            pass
        ends.append(f.tell())
    return ends


# ----------------------------------------------------------------------------------- layers
def _bn(lib):
    m = lib.nn.BatchNorm2d(4)
    if lib is torch:  # trained-looking statistics
        g = torch.Generator().manual_seed(7)
        m.running_mean.copy_(torch.randn(4, generator=g) * 0.1)
        m.running_var.copy_(torch.rand(4, generator=g) + 0.5)
        m.num_batches_tracked.fill_(321)
    return m.eval()


LAYERS = {
    "Linear": (lambda lib: lib.nn.Linear(5, 3), lambda: make((2, 5), seed=1)),
    "Conv2d": (lambda lib: lib.nn.Conv2d(3, 4, 3, padding=1), lambda: make((1, 3, 6, 6), seed=2)),
    "BatchNorm2d": (_bn, lambda: make((2, 4, 3, 3), seed=3)),
    "LSTM": (lambda lib: lib.nn.LSTM(4, 6, num_layers=2, batch_first=True), lambda: make((2, 5, 4), seed=4)),
    "Embedding": (lambda lib: lib.nn.Embedding(10, 4), lambda: torch.tensor([[1, 9, 0], [3, 3, 7]])),
}


@pytest.mark.parametrize("name", list(LAYERS))
def test_layer_state_dicts_load_and_match_torch(name, tmp_path):
    build, sample = LAYERS[name]
    torch.manual_seed(0)
    ref = build(torch)
    sd = ref.state_dict()
    path = tmp_path / f"{name}.pth"
    path.write_bytes(legacy(sd))
    loaded = cb.load(path)
    assert isinstance(loaded, OrderedDict) and list(loaded) == list(sd)
    for k, v in sd.items():
        assert_same(loaded[k], v)
    ours = build(cb)
    result = ours.load_state_dict(loaded)
    assert result.missing_keys == [] and result.unexpected_keys == []
    ours.eval()
    x = sample()
    with torch.no_grad():
        expected = ref(x)
    assert_same(ours(to_cb(x)), expected, atol=1e-5)


# ----------------------------------------------------------------------------------- dtypes
def dtype_samples():
    g = torch.Generator().manual_seed(0)
    f = torch.randn(2, 3, generator=g) * 3
    return {
        "float32": f, "float64": f.double(), "float16": f.half(), "bfloat16": f.bfloat16(),
        "int64": torch.arange(-3, 3).reshape(2, 3), "int32": torch.arange(-3, 3, dtype=torch.int32),
        "uint8": torch.arange(250, 256, dtype=torch.uint8), "bool": torch.tensor([True, False, True]),
        "int8": torch.tensor([-128, -1, 0, 127], dtype=torch.int8),
        "int16": torch.tensor([-32768, 300, 32767], dtype=torch.int16),
        "float8_e4m3fn": torch.arange(256, dtype=torch.uint8).view(torch.float8_e4m3fn),  # every byte, NaNs too
        "scalar": torch.tensor(2.5), "empty": torch.zeros(0, 3),
    }


def test_every_dtype_loads_as_the_zip_path_loads_it():
    sd = dtype_samples()
    ours, via_zip = cb.load(legacy(sd)), cb.load(zipped(sd))
    for k, v in sd.items():
        assert ours[k].dtype == via_zip[k].dtype, k
        assert tuple(ours[k].shape) == tuple(v.shape), k
        np.testing.assert_array_equal(as_np(ours[k]), as_np(v), err_msg=k)
    assert ours["int8"].dtype == cb.int8 and ours["int16"].dtype == cb.int16
    assert ours["float8_e4m3fn"].dtype == cb.float8_e4m3fn
    for name in ("float32", "float64", "float16", "bfloat16", "int64", "int32", "uint8", "bool"):
        assert ours[name].dtype == getattr(cb, name), name


@pytest.mark.parametrize("make_unsupported", [
    lambda: torch.tensor([1, 2, 3]).to(torch.uint16),
    lambda: torch.randn(3).to(torch.float8_e5m2),
])
@pytest.mark.parametrize("write", [legacy, zipped])
def test_unsupported_dtypes_name_the_dtype(make_unsupported, write):
    t = make_unsupported()
    with pytest.raises(cb.DTypeError, match=f"torch.{str(t.dtype).split('.')[-1]} tensors are not supported"):
        cb.load(write({"t": t}))


@pytest.mark.parametrize("write", [legacy, zipped])
def test_complex_tensors_load(write):
    z = torch.randn(3, 4, dtype=torch.complex64)
    sd = {"z": z, "zt": z.t(), "z128": torch.randn(2, dtype=torch.complex128)}
    ours = cb.load(write(sd))
    for k, v in sd.items():
        assert ours[k].dtype == getattr(cb, str(v.dtype).split(".")[-1]) and tuple(ours[k].shape) == tuple(v.shape)
        np.testing.assert_array_equal(ours[k].numpy(), v.numpy())


# ------------------------------------------------------------------------- storages and views
def test_shared_storages_and_views_match_torch():
    g = torch.Generator().manual_seed(1)
    base = torch.randn(6, 4, generator=g)
    flat = torch.arange(20, dtype=torch.int64)
    sd = OrderedDict(base=base, tied=base, transposed=base.t(), strided=base[2:, 1::2], row=base[3],
                     tail=flat[5:], window=flat[7:13].view(2, 3), stepped=flat[::4], expanded=flat[2:5].expand(2, 3),
                     param=torch.nn.Parameter(base[1:3]))
    data = legacy(sd)
    ours, ref = cb.load(data), torch_view(data)
    for k in sd:
        assert_same_values(ours[k], ref[k])
    assert ours["base"] is ours["tied"]  # same view of the same storage: one object, as in the zip path
    assert isinstance(ours["param"], nn.Parameter) and ours["param"].requires_grad


def test_nested_objects_and_file_kinds(tmp_path):
    sd = torch.nn.Linear(3, 2).state_dict()
    obj = {"model": sd, "opt": {"lr": 1e-3, "betas": (0.9, 0.999), "state": {0: {"step": torch.tensor(4.0)}}},
           "epoch": 7, "names": ["a", "b"], "best": None, "nested": [{"x": torch.ones(2, 2)}, (torch.zeros(1), "z")],
           "p": torch.nn.Parameter(torch.full((2,), 3.0), requires_grad=False)}
    data = legacy(obj)
    path = tmp_path / "ck.pt"
    path.write_bytes(data)
    with open(path, "rb") as fh:
        from_file = cb.load(fh)
    for out in (cb.load(path), cb.load(str(path)), from_file, cb.load(io.BytesIO(data)), cb.load(data)):
        assert out["epoch"] == 7 and out["names"] == ["a", "b"] and out["best"] is None
        assert out["opt"]["lr"] == 1e-3 and out["opt"]["betas"] == (0.9, 0.999)
        assert_same(out["opt"]["state"][0]["step"], obj["opt"]["state"][0]["step"])
        assert_same(out["nested"][0]["x"], obj["nested"][0]["x"])
        assert_same(out["nested"][1][0], obj["nested"][1][0]) and out["nested"][1][1] == "z"
        assert isinstance(out["model"], OrderedDict) and out["model"]._metadata == sd._metadata
        for k, v in sd.items():
            assert_same(out["model"][k], v)
        assert isinstance(out["p"], nn.Parameter) and not out["p"].requires_grad


@pytest.mark.parametrize("location", ["cpu", cb.device("cpu")])
def test_map_location_cpu(location):
    base = torch.randn(3, 3)
    obj = {"sd": torch.nn.Linear(3, 3).state_dict(), "a": base, "b": base, "p": torch.nn.Parameter(torch.ones(2))}
    data = legacy(obj)
    out, ref = cb.load(data, map_location=location), torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    assert out["a"] is out["b"]
    assert isinstance(out["p"], nn.Parameter)
    assert out["sd"]._metadata == ref["sd"]._metadata
    for k, v in ref["sd"].items():
        assert_same(out["sd"][k], v)
        assert str(out["sd"][k].device) == "cpu"


# Files with the (view key, offset, size) storage views only pre-0.4 torch wrote: current torch
# cannot write them, so they are pickled here by hand, and read by torch as the oracle.
class _StorageRef:
    def __init__(self, key, numel, view=None):
        self.key, self.numel, self.view = key, numel, view


class _TensorRef:
    def __init__(self, storage, offset, size, stride):
        self.args = (storage, offset, size, stride, False, OrderedDict())

    def __reduce__(self):
        return (torch._utils._rebuild_tensor_v2, self.args)


class _OldPickler(pickle.Pickler):
    def persistent_id(self, obj):
        if isinstance(obj, _StorageRef):
            return ("storage", torch.FloatStorage, obj.key, "cpu", obj.numel, obj.view)
        return None


def old_torch_file(obj, storages: dict) -> bytes:
    buf = io.BytesIO()
    sys_info = {"protocol_version": 1001, "little_endian": True, "type_sizes": {"short": 2, "int": 4, "long": 4}}
    for header in (0x1950A86A20F9469CFC6C, 1001, sys_info):
        pickle.dump(header, buf, protocol=2)
    _OldPickler(buf, protocol=2).dump(obj)
    pickle.dump(list(storages), buf, protocol=2)
    for t in storages.values():
        buf.write(struct.pack("<q", t.numel()) + t.numpy().tobytes())
    return buf.getvalue()


def test_storage_views_of_old_torch_files():
    root = torch.randn(12, generator=torch.Generator().manual_seed(2))
    view = _StorageRef("root", 12, ("view", 4, 6))
    obj = {"a": _TensorRef(view, 1, (2, 2), (3, 1)), "b": _TensorRef(_StorageRef("root", 12), 0, (3, 4), (4, 1)),
           "c": _TensorRef(view, 0, (6,), (1,))}
    data = old_torch_file(obj, {"root": root})
    ours, ref = cb.load(data), torch.load(io.BytesIO(data), weights_only=False)
    for k in obj:
        assert_same(ours[k], ref[k])
    outside = old_torch_file({"a": _TensorRef(_StorageRef("root", 12, ("v", 10, 6)), 0, (2,), (1,))}, {"root": root})
    with pytest.raises(pickle.UnpicklingError, match="lies outside storage root"):
        cb.load(outside)


# ------------------------------------------------------------------------ broken and hostile
def small_file() -> bytes:
    base = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    return legacy({"w": base, "t": base.t(), "n": torch.tensor(3), "h": torch.ones(2).half(), "meta": {"k": [1, 2]}})


def load_quickly(data: bytes):
    start = time.perf_counter()
    try:
        return cb.load(data)
    finally:
        assert time.perf_counter() - start < 5, "a damaged file must fail fast"


def test_truncated_files_raise_clear_errors():
    data = small_file()
    for cut in range(len(data)):  # torch writes nothing after the last storage: every prefix is damaged
        with pytest.raises(pickle.UnpicklingError) as info:
            load_quickly(data[:cut])
        assert str(info.value), cut
    assert load_quickly(data)["n"].item() == 3


def corrupt_cases() -> dict:
    data = small_file()
    magic_end, version_end, _info_end, main_end, keys_end = pickle_ends(data, 5)

    def patched(pos, new: bytes) -> bytes:
        return data[:pos] + new + data[pos + len(new):]

    return {
        "magic": (patched(magic_end - 3, b"\x00"), "Invalid magic number"),
        "version": (patched(version_end - 3, b"\x00"), "Invalid protocol version: 768"),
        "huge count": (patched(keys_end, struct.pack("<q", 1 << 40)), "claims 1099511627776 elements"),
        "negative count": (patched(keys_end, struct.pack("<q", -5)), "claims -5 elements"),
        "no storages": (data[:keys_end], "size of storage"),
        "main pickle without STOP": (data[:main_end - 1] + data[main_end:], "pickle"),
        "storage key list not a list": (data[:main_end] + pickle.dumps(7, protocol=2) + data[keys_end:], "key list"),
    }


@pytest.mark.parametrize("case", list(corrupt_cases()))
def test_corrupt_headers_and_counts_raise_clear_errors(case):
    bad, message = corrupt_cases()[case]
    with pytest.raises(pickle.UnpicklingError, match=message):
        load_quickly(bad)


def test_pickle_lengths_are_checked_before_any_buffer_is_sized():
    head = pickle_ends(small_file(), 3)[-1]
    # A BINBYTES8 claiming 1 TiB in a 100-byte file: refused before the unpickler allocates it.
    bad = small_file()[:head] + b"\x80\x02\x8e" + struct.pack("<Q", 1 << 40) + b"x" * 64 + b"."
    with pytest.raises(pickle.UnpicklingError, match="main pickle .* is damaged"):
        load_quickly(bad)


def test_hostile_legacy_pickle_runs_nothing(tmp_path):
    class Evil:
        def __reduce__(self):
            return (os.system, ("touch " + str(tmp_path / "pwned"),))

    with pytest.raises(pickle.UnpicklingError, match=r"unsupported global (posix|os|nt)\.system"):
        cb.load(legacy({"w": torch.ones(2), "x": Evil()}))
    assert not (tmp_path / "pwned").exists()


def test_random_byte_flips_fail_cleanly():
    rng = random.Random(5)
    data = small_file()
    for _ in range(300):
        bad = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            bad[rng.randrange(len(bad))] = rng.randrange(256)
        try:
            load_quickly(bytes(bad))  # a flip inside storage bytes is just other numbers
        except CLEAN_ERRORS as e:
            assert str(e)


def test_tar_format_is_named():
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in ("sys_info", "pickle", "storages", "tensors"):
            info = tarfile.TarInfo(name)
            info.size = 4
            tar.addfile(info, io.BytesIO(b"\x80\x02N."))
    with pytest.raises(pickle.UnpicklingError, match="tar archive"):
        cb.load(buf.getvalue())


# ------------------------------------------------------------ load_state_dict: [1] -> 0-d rule
def bn_state(num_batches_tracked):
    torch.manual_seed(0)
    t = _bn(torch)
    sd = t.state_dict()
    sd["num_batches_tracked"] = num_batches_tracked
    return t, sd


def snapshot(module):
    return {k: v.numpy().copy() for k, v in module.state_dict().items()}


def test_one_element_loads_into_zero_d_buffer_like_torch():
    t, sd = bn_state(torch.tensor([42]))  # how torch 0.3 stored num_batches_tracked
    reference = _bn(torch)
    reference.load_state_dict(sd)  # torch's own rule is the oracle
    ours = nn.BatchNorm2d(4)
    ours.load_state_dict(cb.load(legacy(sd)))
    assert tuple(ours.num_batches_tracked.shape) == () == tuple(reference.num_batches_tracked.shape)
    assert ours.num_batches_tracked.item() == reference.num_batches_tracked.item() == 42
    assert_same(ours.running_var, reference.running_var)


@pytest.mark.parametrize("bad", [
    {"num_batches_tracked": torch.tensor([2, 3])},
    {"num_batches_tracked": torch.tensor([[5]])},
    {"num_batches_tracked": torch.tensor([9]), "running_mean": torch.zeros(5)},  # valid [1], but the load fails
])
def test_mismatched_shapes_raise_torchs_error_and_leave_module_unchanged(bad):
    _, sd = bn_state(torch.tensor(1))
    sd.update(bad)
    with pytest.raises(RuntimeError) as torch_error:
        _bn(torch).load_state_dict(sd)
    ours = nn.BatchNorm2d(4)
    before = snapshot(ours)
    with pytest.raises(RuntimeError) as our_error:
        ours.load_state_dict(cb.load(legacy(sd)))
    assert str(our_error.value) == str(torch_error.value)
    after = snapshot(ours)
    assert all(np.array_equal(after[k], before[k]) for k in before)
