"""Checkpoints against torch and safetensors: round trips both ways, every storage dtype, views and
tied weights, nested checkpoints, malicious and broken files (clear errors, module untouched), and
a bounded fuzz of both loaders."""

import io
import os
import pickle
import random
import struct
import sys
import zipfile
from collections import OrderedDict

import numpy as np
import pytest
import safetensors.torch as st
import torch

import candle_bind as cb
import candle_bind.safetensors as cst
from candle_bind import nn
from conftest import assert_same, make, to_cb

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples"))
from resnet import resnet18  # noqa: E402

LOAD_ERRORS = (pickle.UnpicklingError, ValueError, cb.CandleError, KeyError, FileNotFoundError, TypeError)


def sample_state():
    torch.manual_seed(0)
    sd = OrderedDict()
    sd["conv.weight"] = torch.randn(4, 3, 3, 3)
    sd["bn.running_mean"] = torch.randn(4)
    sd["bn.num_batches_tracked"] = torch.tensor(7)
    sd["half"] = torch.randn(5).half()
    sd["bf16"] = torch.randn(5).bfloat16()
    sd["double"] = torch.randn(2, 2).double()
    sd["long"] = torch.arange(6).reshape(2, 3)
    sd["int"] = torch.arange(4, dtype=torch.int32)
    sd["byte"] = torch.arange(4, dtype=torch.uint8)
    sd["bool"] = torch.tensor([True, False, True])
    sd["empty"] = torch.zeros(0, 3)
    sd["scalar"] = torch.tensor(2.5)
    base = torch.randn(6, 4)
    sd["lm.weight"] = base
    sd["emb.weight"] = base  # tied
    sd["view"] = base[2:, 1::2]  # a view into a shared storage
    sd["transposed"] = base.t()
    return sd


def as_np(t):
    if isinstance(t, torch.Tensor):
        return (t.float() if t.dtype == torch.bfloat16 else t).numpy()
    return (t.float() if t.dtype == cb.bfloat16 else t).numpy()


def test_torch_save_loads_exactly(tmp_path):
    sd = sample_state()
    ck = {"model": sd, "optimizer": {"lr": 0.1, "betas": (0.9, 0.99)}, "epoch": 3, "args": {"name": "run", "layers": [1, 2]},
          "best": None, "param": torch.nn.Parameter(torch.ones(2))}
    path = tmp_path / "ck.pth"
    torch.save(ck, path)
    out = cb.load(path)
    assert out["epoch"] == 3 and out["args"] == {"name": "run", "layers": [1, 2]} and out["best"] is None
    assert out["optimizer"]["betas"] == (0.9, 0.99)
    assert isinstance(out["model"], OrderedDict) and list(out["model"]) == list(sd)
    for k, v in sd.items():
        o = out["model"][k]
        assert tuple(o.shape) == tuple(v.shape), k
        assert np.array_equal(as_np(o), as_np(v)), k
    assert out["model"]["lm.weight"] is out["model"]["emb.weight"]
    assert isinstance(out["param"], nn.Parameter)
    with open(path, "rb") as f:
        assert cb.load(f)["epoch"] == 3
    assert cb.load(path.read_bytes())["epoch"] == 3


def test_save_is_read_by_torch(tmp_path):
    sd = sample_state()
    ours = cb.load_state = {k: to_cb(v) for k, v in sd.items()}
    ours["emb.weight"] = ours["lm.weight"]
    path = tmp_path / "ours.pt"
    cb.save({"model": OrderedDict(ours), "step": 10, "cfg": {"d": 1.5}}, path)
    back = torch.load(path, weights_only=True)
    assert back["step"] == 10 and back["cfg"] == {"d": 1.5}
    for k, v in sd.items():
        assert torch.equal(back["model"][k], v.contiguous()), k
    assert back["model"]["emb.weight"].data_ptr() == back["model"]["lm.weight"].data_ptr()
    buf = io.BytesIO()
    cb.save(ours, buf)
    assert cb.load(buf.getvalue())["int"].dtype == cb.int32


def test_int8_int16_storages_load_as_those_dtypes():
    buf = io.BytesIO()
    torch.save({"a": torch.tensor([-3, 4], dtype=torch.int8), "b": torch.tensor([300, -2], dtype=torch.int16)}, buf)
    out = cb.load(buf.getvalue())
    assert out["a"].dtype == cb.int8 and out["b"].dtype == cb.int16
    assert out["a"].tolist() == [-3, 4] and out["b"].tolist() == [300, -2]


def test_malicious_pickle_names_the_global(tmp_path):
    class Evil:
        def __reduce__(self):
            return (os.system, ("touch " + str(tmp_path / "pwned"),))

    path = tmp_path / "evil.pth"
    torch.save({"x": Evil()}, path)
    with pytest.raises(pickle.UnpicklingError, match=r"unsupported global (posix|os|nt)\.system"):
        cb.load(path)
    assert not (tmp_path / "pwned").exists()


def bad_files(tmp_path):
    good = io.BytesIO()
    torch.save({"w": torch.randn(4, 4)}, good)
    g = good.getvalue()
    cases = {
        "random": os.urandom(2000),
        "empty": b"",
        "truncated": g[: len(g) // 2],
        # A bare pickle is neither format (torch's legacy format is read: test_checkpoints_legacy.py).
        "plain_pickle": pickle.dumps({"a": 1}, protocol=2),
        "zip_without_pkl": _zip({"archive/other": b"x"}),
    }
    # A pickle whose tensor claims more elements than its storage record holds.
    z = zipfile.ZipFile(io.BytesIO(g))
    recs = {n: z.read(n) for n in z.namelist()}
    data_name = [n for n in recs if "/data/" in n][0]
    short = dict(recs)
    short[data_name] = recs[data_name][:8]
    cases["short_storage"] = _zip(short)
    return cases


def _zip(records):
    b = io.BytesIO()
    with zipfile.ZipFile(b, "w") as zf:
        for k, v in records.items():
            zf.writestr(k, v)
    return b.getvalue()


def test_bad_torch_files_raise_clear_errors(tmp_path):
    for name, data in bad_files(tmp_path).items():
        with pytest.raises(pickle.UnpicklingError):
            cb.load(data)
    with pytest.raises(FileNotFoundError):
        cb.load(tmp_path / "missing.pth")


def test_safetensors_round_trips(tmp_path):
    sd = {k: v.contiguous() for k, v in sample_state().items() if k not in ("emb.weight",)}
    p = tmp_path / "a.safetensors"
    st.save_file(sd, p, metadata={"format": "pt"})
    ours = cst.load_file(p)
    for k, v in sd.items():
        assert np.array_equal(as_np(ours[k]), as_np(v)) and tuple(ours[k].shape) == tuple(v.shape), k
    with cst.safe_open(p, framework="pt") as f:
        assert sorted(f.keys()) == sorted(sd) and f.metadata() == {"format": "pt"}
        assert_same(f.get_tensor("conv.weight"), sd["conv.weight"])
        sl = f.get_slice("long")
        assert sl.get_shape() == [2, 3] and sl.get_dtype() == "I64"
        assert_same(sl[:, 1:], sd["long"][:, 1:])
    q = tmp_path / "b.safetensors"
    cst.save_file(ours, q, metadata={"k": "v"})
    back = st.load_file(q)
    assert all(torch.equal(back[k], v) for k, v in sd.items())
    assert st.load(cst.save(ours)).keys() == sd.keys()
    assert cst.load(st.save(sd)).keys() == sd.keys()
    assert cst.load_file(p, device="cpu")["half"].dtype == cb.float16


def test_safetensors_models_with_shared_tensors(tmp_path):
    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(5, 3)
            self.lm = nn.Linear(3, 5)
            self.lm.weight = self.emb.weight

    m = Tied()
    p = tmp_path / "m.safetensors"
    cst.save_model(m, p)
    assert sorted(st.load_file(p).keys()) == ["emb.weight", "lm.bias"]
    m2 = Tied()
    missing, unexpected = cst.load_model(m2, p)
    assert missing == [] and unexpected == []
    assert_same(m2.lm.weight, torch.from_numpy(m.emb.weight.numpy()))
    other = nn.Linear(3, 3)
    before = other.weight.clone()
    with pytest.raises(RuntimeError, match="Missing key"):
        cst.load_model(other, p)
    assert (other.weight == before).all()


def _st_header(header: dict, body: bytes = b"") -> bytes:
    h = str(header).replace("'", '"').encode()
    return struct.pack("<Q", len(h)) + h + body


def test_bad_safetensors_raise_clear_errors(tmp_path):
    cases = {
        "random": os.urandom(100),
        "tiny": b"\x01\x02",
        "huge_header": struct.pack("<Q", 10**12) + b"{}",
        "header_past_end": struct.pack("<Q", 500) + b"{}",
        "not_json": struct.pack("<Q", 4) + b"abcd",
        "out_of_bounds": _st_header({"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}, b"\0" * 8),
        "overlap": _st_header({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                               "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}}, b"\0" * 12),
        "dtype_length_mismatch": _st_header({"a": {"dtype": "F64", "shape": [2], "data_offsets": [0, 8]}}, b"\0" * 8),
        "terabyte_shape": _st_header({"a": {"dtype": "F32", "shape": [10**12], "data_offsets": [0, 8]}}, b"\0" * 8),
    }
    for name, data in cases.items():
        with pytest.raises(ValueError, match="invalid safetensors"):
            cst.load(data)
        path = tmp_path / f"{name}.safetensors"
        path.write_bytes(data)
        with pytest.raises(ValueError):
            cst.load_file(path)
    with pytest.raises(FileNotFoundError):
        cst.load_file(tmp_path / "missing.safetensors")
    bad_dtype = _st_header({"a": {"dtype": "U16", "shape": [2], "data_offsets": [0, 4]}}, b"\0" * 8)[: -4]
    with pytest.raises(cb.DTypeError):
        cst.load(bad_dtype)


def test_failed_load_leaves_module_untouched(tmp_path):
    m = nn.Linear(4, 2)
    before = {k: v.clone() for k, v in m.state_dict().items()}
    torch.save({"weight": torch.ones(2, 4), "bias": torch.ones(3)}, tmp_path / "bad.pth")
    with pytest.raises(RuntimeError, match="size mismatch for bias"):
        m.load_state_dict(cb.load(tmp_path / "bad.pth"))
    for k, v in m.state_dict().items():
        assert (v == before[k]).all()


def test_resnet_style_checkpoint_end_to_end(tmp_path):
    def net(lib):
        return lib.nn.Sequential(
            lib.nn.Conv2d(3, 8, 7, 2, 3, bias=False), lib.nn.ReLU(inplace=True), lib.nn.MaxPool2d(3, 2, 1),
            lib.nn.Conv2d(8, 16, 3, 2, 1), lib.nn.ReLU(), lib.nn.AdaptiveAvgPool2d((1, 1)), lib.nn.Flatten(), lib.nn.Linear(16, 10))

    torch.manual_seed(3)
    t = net(torch).eval()
    torch.save(t.state_dict(), tmp_path / "net.pth")
    ours = net(cb)
    ours.load_state_dict(cb.load(tmp_path / "net.pth"))
    x = make((2, 3, 32, 32), seed=4)
    with torch.no_grad():
        ref = t(x)
    assert_same(ours(to_cb(x)), ref, atol=1e-4)


def _mutate(data: bytes, rng: random.Random) -> bytes:
    b = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        op = rng.random()
        if op < 0.5 and b:
            b[rng.randrange(len(b))] = rng.randrange(256)
        elif op < 0.75 and b:
            del b[rng.randrange(len(b)):][: rng.randint(1, 64)]
        else:
            i = rng.randrange(len(b) + 1)
            b[i:i] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 16)))
    return bytes(b)


FUZZ_EXECUTIONS = 600


def test_bounded_fuzz_of_loaders():
    """Random byte mutations of valid files: every outcome is a value or one of our exceptions."""
    rng = random.Random(1234)
    good_pt = io.BytesIO()
    torch.save({"w": torch.randn(3, 3), "n": torch.tensor(2), "meta": {"a": [1, 2]}}, good_pt)
    good_st = st.save({"w": torch.randn(3, 3), "i": torch.arange(4)})
    crashes = 0
    for i in range(FUZZ_EXECUTIONS):
        for loader, seed_data in ((cb.load, good_pt.getvalue()), (cst.load, good_st)):
            data = _mutate(seed_data, rng)
            try:
                loader(data)
            except LOAD_ERRORS:
                pass
            except Exception as e:  # noqa: BLE001 - anything else is a finding
                crashes += 1
                print("unexpected", type(e).__name__, e)
    assert crashes == 0


def test_resnet18_checkpoint_all_122_entries(tmp_path):
    torch.manual_seed(0)
    t = resnet18(torch)
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():  # trained-looking BatchNorm statistics
        for name, b in t.named_buffers():
            if "running_mean" in name:
                b.copy_(torch.randn(b.shape, generator=g) * 0.1)
            elif "running_var" in name:
                b.copy_(torch.rand(b.shape, generator=g) + 0.5)
            elif "num_batches_tracked" in name:
                b.fill_(1234)
    t.eval()
    torch.save(t.state_dict(), tmp_path / "resnet18.pth")
    sd = cb.load(tmp_path / "resnet18.pth")
    assert len(sd) == 122 and sum("num_batches_tracked" in k for k in sd) == 20
    ours = resnet18(cb)
    res = ours.load_state_dict(sd)
    assert res.missing_keys == [] and res.unexpected_keys == []
    assert ours.layer1[0].bn1.num_batches_tracked.item() == 1234
    ours.eval()
    x = make((1, 3, 224, 224), seed=5)
    with torch.no_grad():
        ref = t(x)
    assert_same(ours(to_cb(x)), ref, atol=2e-3, rtol=1e-3)


def _with_data_pkl(pkl: bytes) -> bytes:
    """A real torch.save zip whose data.pkl is replaced by `pkl`."""
    src = io.BytesIO()
    torch.save({"w": torch.ones(2)}, src)
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(src.getvalue())) as zin, zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as zout:
        for info in zin.infolist():
            zout.writestr(info, pkl if info.filename.endswith("data.pkl") else zin.read(info))
    return out.getvalue()


HOSTILE_PICKLES = {
    "binbytes8 length 2**40": b"\x80\x02\x8e" + struct.pack("<Q", 2 ** 40) + b"abc.",
    "binunicode8 length 2**62": b"\x80\x04\x8d" + struct.pack("<Q", 2 ** 62) + b"abc.",
    "binstring length 2**31-1": b"\x80\x02T" + struct.pack("<i", 2 ** 31 - 1) + b"abc.",
    "long_binput index 2**31": b"\x80\x02}r" + struct.pack("<I", 2 ** 31) + b".",
    "long_binget of nothing": b"\x80\x02}j" + struct.pack("<I", 2 ** 30) + b".",
    "long4 length 2**31-1": b"\x80\x02\x8b" + struct.pack("<i", 2 ** 31 - 1) + b"\x01.",
    "frame length 2**60": b"\x80\x04\x95" + struct.pack("<Q", 2 ** 60) + b"}.",
    "decimal long of 10**6 digits": b"\x80\x02L" + b"9" * 10 ** 6 + b"L\n.",
}


@pytest.mark.parametrize("name", list(HOSTILE_PICKLES))
def test_hostile_data_pkl_is_rejected_quickly_and_small(name):
    """A data.pkl whose lengths or memo indices promise what is not there fails in the opcode check,
    fast and without allocating what it claims (torch's weights_only loader rejects these too)."""
    import resource
    import time

    data = _with_data_pkl(HOSTILE_PICKLES[name])
    if name != "long_binput index 2**31":  # torch's pure-Python unpickler memoises in a dict; ours refuses
        with pytest.raises(Exception):     # an index no pickler writes (the C unpickler would size a table by it)
            torch.load(io.BytesIO(data), weights_only=True)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    with pytest.raises(pickle.UnpicklingError):
        cb.load(data)
    assert time.perf_counter() - t0 < 2.0
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 200 * 1024  # KiB: no big buffer
