"""GGUF: quantize/dequantize, quantized matmul, write then read back, damaged files, bounded fuzz."""

import random
import struct

import numpy as np
import pytest
import torch

import candle_bind as cb
from candle_bind import gguf, nn
from conftest import make, to_cb


@pytest.mark.parametrize("dtype,tol", [("F32", 0.0), ("F16", 2e-3), ("BF16", 2e-2), ("Q8_0", 0.02), ("Q6K", 0.06),
                                       ("Q5_0", 0.12), ("Q4_0", 0.3), ("Q4_1", 0.3), ("Q4K", 0.25), ("Q2K", 1.2)])
def test_quantize_and_matmul(dtype, tol):
    w = make((32, 256), seed=1)
    q = gguf.quantize(to_cb(w), dtype)
    assert q.shape == (32, 256) and q.ggml_dtype == dtype
    d = q.dequantize()
    assert d.dtype == cb.float32 and tuple(d.shape) == (32, 256)
    err = np.abs(d.numpy() - w.numpy()).max()
    assert err <= tol * 3 + 1e-6
    x = make((4, 256), seed=2)
    y = nn.QuantizedLinear(q)(to_cb(x))
    ref = x @ torch.from_numpy(d.numpy()).t()
    # Candle's quantized kernels also quantize the activations (as llama.cpp): relative error.
    rel = np.linalg.norm(y.numpy() - ref.numpy()) / np.linalg.norm(ref.numpy())
    assert rel < 0.05


@pytest.mark.parametrize("dtype", ["Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q4K", "Q6K"])
@pytest.mark.parametrize("k,n", [(96, 22), (288, 35), (96, 48), (512, 64)])
def test_quantized_matmul_rows_do_not_depend_on_their_neighbours(dtype, k, n):
    """Batched generation relies on it: each row of a quantized matmul is bitwise the same computed
    alone or among others (odd block counts, column tails, row tiles of 1 to 33 rows)."""
    if dtype in ("Q4K", "Q6K") and k % 256:
        pytest.skip("k-quants need whole 256-value super-blocks")
    q = gguf.quantize(to_cb(make((n, k), seed=3)), dtype)
    x = make((33, k), seed=4).numpy()
    alone = np.concatenate([cb.nn.QuantizedLinear(q)(cb.from_numpy(x[i:i + 1])).numpy() for i in range(33)])
    for m in (2, 3, 5, 8, 16, 17, 33):
        assert np.array_equal(cb.nn.QuantizedLinear(q)(cb.from_numpy(x[:m])).numpy(), alone[:m]), m
    ref = x @ q.dequantize().numpy().T
    assert np.linalg.norm(alone - ref) / np.linalg.norm(ref) < 0.05


def test_gguf_round_trip(tmp_path):
    w = to_cb(make((16, 64), seed=3))
    meta = {"general.architecture": "llama", "general.alignment": 32, "llama.context_length": 2048,
            "rope.theta": 10000.5, "flags": True, "tokens": ["a", "b", "c"]}
    tensors = {"tok.weight": gguf.quantize(w, "Q4_0"), "norm.weight": cb.ones(64)}
    path = tmp_path / "m.gguf"
    gguf.save(path, meta, tensors)
    m, ts = gguf.load(path)
    assert m["general.architecture"] == "llama" and m["tokens"] == ["a", "b", "c"] and m["flags"] is True
    assert m["llama.context_length"] == 2048 and abs(m["rope.theta"] - 10000.5) < 1e-3
    assert ts["tok.weight"].ggml_dtype == "Q4_0" and ts["norm.weight"].ggml_dtype == "F32"
    assert np.array_equal(ts["tok.weight"].dequantize().numpy(), tensors["tok.weight"].dequantize().numpy())
    assert (ts["norm.weight"].dequantize() == 1).all()


def _gguf(n_tensors=0, n_kv=0, body=b"", version=3):
    return b"GGUF" + struct.pack("<IQQ", version, n_tensors, n_kv) + body


def test_bad_gguf_files(tmp_path):
    good = tmp_path / "good.gguf"
    gguf.save(good, {"a": 1}, {"w": cb.ones(4, 32)})
    g = good.read_bytes()
    cases = {
        "empty": b"",
        "magic": b"GGUX" + g[4:],
        "version": _gguf(version=99),
        "huge_tensor_count": _gguf(n_tensors=2**60),
        "huge_kv_count": _gguf(n_kv=2**62),
        "huge_string": _gguf(n_kv=1, body=struct.pack("<Q", 2**50) + b"abc"),
        "truncated": g[: len(g) - 40],
        "bad_value_type": _gguf(n_kv=1, body=struct.pack("<Q", 1) + b"k" + struct.pack("<I", 77)),
    }
    for name, data in cases.items():
        p = tmp_path / f"{name}.gguf"
        p.write_bytes(data)
        with pytest.raises(ValueError, match="invalid GGUF"):
            gguf.load(p)
    with pytest.raises(FileNotFoundError):
        gguf.load(tmp_path / "missing.gguf")
    with pytest.raises(ValueError, match="block size"):
        gguf.quantize(cb.ones(3, 33), "Q4_0")
    with pytest.raises(RuntimeError):
        nn.QuantizedLinear(gguf.quantize(cb.ones(4, 32), "Q8_0"))(cb.ones(2, 16))


@pytest.mark.parametrize("dtype", ["F32", "Q8_0", "Q4K"])
def test_quantized_linear_input_shapes(dtype):
    # torch's linear: a vector is one row; no rows give an empty result; leading dims are kept
    w = make((64, 256), seed=3)
    lin = nn.QuantizedLinear(gguf.quantize(to_cb(w), dtype))
    x = make((3, 5, 256), seed=4)
    full = lin(to_cb(x)).numpy()
    assert full.shape == (3, 5, 64)
    vec = lin(to_cb(x[1, 2]))
    assert tuple(vec.shape) == (64,) and np.array_equal(vec.numpy(), lin(to_cb(x[1, 2:3])).numpy()[0])
    for shape in [(0, 256), (2, 0, 256)]:
        out = lin(cb.zeros(*shape))
        assert tuple(out.shape) == shape[:-1] + (64,) and out.dtype == cb.float32
    with pytest.raises(RuntimeError):
        lin(cb.zeros(()))


def test_bounded_fuzz_of_gguf_reader(tmp_path):
    good = tmp_path / "good.gguf"
    gguf.save(good, {"name": "x", "vals": [1, 2, 3]}, {"w": gguf.quantize(cb.ones(4, 64), "Q4_0"), "b": cb.ones(8)})
    data = good.read_bytes()
    rng = random.Random(7)
    path = tmp_path / "fuzz.gguf"
    for _ in range(400):
        b = bytearray(data)
        for _ in range(rng.randint(1, 6)):
            i = rng.randrange(len(b))
            b[i] = rng.randrange(256)
        if rng.random() < 0.3:
            del b[rng.randrange(len(b)):]
        path.write_bytes(bytes(b))
        try:
            gguf.load(path)
        except (ValueError, cb.CandleError, OSError):
            pass
