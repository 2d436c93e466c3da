import math

import numpy as np
import pytest
import torch

import candle_bind as cb
from conftest import assert_same, make, to_cb, DTYPES


@pytest.mark.parametrize("name", [n for n in DTYPES if n != "bfloat16"])
def test_numpy_roundtrip(name):
    a = make((3, 4), name, seed=60)
    ours = to_cb(a).numpy()
    assert ours.dtype == a.numpy().dtype
    np.testing.assert_array_equal(ours, a.numpy())
    np.testing.assert_array_equal(np.asarray(to_cb(a)), a.numpy())


def test_numpy_shares_memory_and_strides():
    x = cb.arange(12, dtype=cb.float32).reshape(3, 4)
    n = x.numpy()
    n[0, 0] = 42.0
    assert x[0, 0].item() == 42.0  # torch's .numpy() shares memory too
    t = x.t()
    np.testing.assert_array_equal(t.numpy(), n.T)
    del x
    assert n.sum() > 0  # the array keeps the storage alive


def test_numpy_bf16_raises():
    with pytest.raises(TypeError, match="BFloat16"):
        cb.ones(2, dtype=cb.bfloat16).numpy()


def test_tolist_item_and_casts():
    for name in DTYPES:
        a = make((2, 3), name, seed=61)
        assert to_cb(a).tolist() == a.tolist()
    assert cb.tensor(3.5).item() == 3.5 and isinstance(cb.tensor(3).item(), int)
    assert cb.tensor([True]).item() is True
    assert float(cb.tensor([2.5])) == 2.5 and int(cb.tensor(7)) == 7 and bool(cb.tensor([1]))
    assert [1, 2, 3][cb.tensor(1)] == 2
    with pytest.raises(RuntimeError, match="a Tensor with 6 elements cannot be converted to Scalar"):
        cb.ones(2, 3).item()
    with pytest.raises(RuntimeError, match="ambiguous"):
        bool(cb.ones(2))
    with pytest.raises(TypeError, match="len\\(\\) of a 0-d tensor"):
        len(cb.tensor(1.0))
    with pytest.raises(TypeError):
        [1, 2][cb.tensor(1.0)]


@pytest.mark.parametrize("src", ["float32", "int64", "bool", "float16", "uint8"])
@pytest.mark.parametrize("dst", list(DTYPES))
def test_to_dtype(src, dst):
    a = make((3, 4), src, seed=62)
    if src == "float32":
        a = a * 3
    if dst == "uint8" and a.dtype.is_floating_point:
        a = a.abs()  # negative float -> uint8 is undefined behaviour in torch's C++ cast
    assert_same(to_cb(a).to(DTYPES[dst][1]), a.to(DTYPES[dst][0]))


def test_dtype_methods_and_identity():
    x = cb.ones(2)
    assert x.float() is x and x.to(cb.float32) is x and x.cpu() is x
    assert x.double().dtype is cb.float64 and x.half().dtype is cb.float16 and x.long().dtype is cb.int64
    assert x.int().dtype is cb.int32 and x.bool().dtype is cb.bool and x.bfloat16().dtype is cb.bfloat16
    assert x.type_as(cb.tensor([1])).dtype is cb.int64
    assert x.to("cpu", cb.float64).dtype is cb.float64
    assert x.to(dtype=cb.int32, device="cpu").dtype is cb.int32
    assert x.to(cb.tensor([1], dtype=cb.uint8)).dtype is cb.uint8
    assert cb.long is cb.int64 and cb.float is cb.float32 and cb.half is cb.float16 and cb.double is cb.float64
    assert x.is_floating_point() and not cb.tensor([1]).is_floating_point()
    assert cb.float32.is_floating_point and cb.float32.itemsize == 4


def test_finfo_iinfo():
    for name in ("float32", "float64", "float16", "bfloat16"):
        f, t = cb.finfo(DTYPES[name][1]), torch.finfo(DTYPES[name][0])
        assert (f.eps, f.max, f.min, f.tiny, f.bits) == (t.eps, t.max, t.min, t.tiny, t.bits)
    for name in ("int32", "int64", "uint8"):
        i, t = cb.iinfo(DTYPES[name][1]), torch.iinfo(DTYPES[name][0])
        assert (i.max, i.min, i.bits) == (t.max, t.min, t.bits)


def test_devices():
    d = cb.device("cpu")
    assert d.type == "cpu" and repr(d) == repr(torch.device("cpu")) and str(d) == "cpu"
    assert cb.device("cuda:1").index == 1 and cb.device("cuda", 0).type == "cuda"
    assert cb.ones(2).device == cb.device("cpu")
    assert cb.ones(2).to(cb.device("cpu")).device.type == "cpu"
    with pytest.raises(RuntimeError, match="Expected one of cpu, cuda"):
        cb.device("tpu")
    if not cb.cuda.is_available():
        # torch's words for each case: a CPU-only build, or a CUDA build on a machine without a GPU.
        with pytest.raises(RuntimeError, match="Torch not compiled with CUDA enabled|CUDA is not available"):
            cb.ones(2).cuda()
        with pytest.raises(RuntimeError, match="CUDA"):
            cb.ones(2, device="cuda")


@pytest.mark.parametrize("t", [
    torch.tensor([1.0, 2.5, 3.0]), torch.tensor([1.0, 2.0]), torch.tensor([[1, 2], [3, 4]]), torch.tensor([True, False]),
    torch.tensor(3.25), torch.tensor([1e-5, 1e5]), torch.tensor([], dtype=torch.float32), torch.zeros(0, 3),
    torch.tensor([1, 2], dtype=torch.int32), torch.tensor([0.5], dtype=torch.float64), torch.tensor([float("nan"), float("inf"), 1.5]),
    torch.arange(2000.0), torch.tensor([[0.1234567, -2.0], [100.5, 3.0]]),
])
def test_repr_matches_torch(t):
    assert repr(to_cb(t)) == repr(t)


def test_grad_mode_surface():
    with cb.no_grad():
        assert not cb.is_grad_enabled()
    assert cb.is_grad_enabled()

    @cb.no_grad()
    def f():
        return cb.is_grad_enabled()

    @cb.inference_mode()
    def g():
        return cb.is_grad_enabled()

    assert f() is False and g() is False and cb.is_grad_enabled()
    with cb.set_grad_enabled(False):
        assert not cb.is_grad_enabled()
    with cb.enable_grad():
        assert cb.is_grad_enabled()


def test_threads():
    assert cb.get_num_threads() >= 1
    cb.set_num_threads(cb.get_num_threads())


@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
def test_half_float_conversions_match_torch_bit_for_bit(dt):
    """Every 16-bit pattern widens exactly; f32 → 16 bits rounds as torch (ties to even, subnormals,
    overflow to inf, NaN), checked on all midpoints between neighbouring 16-bit values."""
    tdt, cdt = getattr(torch, dt), getattr(cb, dt)
    h = torch.arange(0, 65536, dtype=torch.int32).to(torch.int16).view(tdt)
    f = h.float()
    wide = cb.to_torch(cb.from_torch(h).float())
    nan = f.isnan()
    assert torch.equal(wide[~nan], f[~nan]) and bool(wide[nan].isnan().all())
    g = torch.Generator().manual_seed(0)
    x = torch.cat([torch.randn(20000, generator=g) * s for s in (1e-8, 1e-5, 1, 100, 7e4, 1e6)]
                  + [f, (f[:-1] + f[1:]) / 2, torch.tensor([math.inf, -math.inf, 65519.0, 65520.0, 2.0**-25])])
    ours, ref = cb.to_torch(cb.from_torch(x).to(cdt)), x.to(tdt)
    same = (ours.view(torch.int16) == ref.view(torch.int16)) | (ours.isnan() & ref.isnan())
    assert bool(same.all()), x[~same][:5]
