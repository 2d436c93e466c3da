"""Devices as torch has them: every op returns its result on its inputs' device, mixing devices
raises torch's error, and the ways tensors and modules move (`.to`, `.cuda()`, `.cpu()`,
`module.to`, `torch.load(map_location=...)`, `safetensors.load_file(device=...)`, `device=` in
factories). The CUDA cases run where a GPU is (skipped elsewhere).

Two reruns of the whole suite check the device paths against torch:
- the generic test mode (CANDLE_BIND_GENERIC=1): CPU tensors take the Candle-op paths that CUDA
  tensors take, on any machine (CI included);
- on the GPU (CANDLE_BIND_TEST_DEVICE=cuda): candle_bind's tensors live on CUDA, where there is one.
"""

import io
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

import candle_bind as cb
from candle_bind import nn
from conftest import assert_same, make, to_cb

CUDA = cb.cuda.is_available()
DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(not CUDA, reason="no CUDA device"))]
HERE = os.path.dirname(os.path.abspath(__file__))

# Files the reruns leave out: ones about the CPU itself (its kernels' instruction sets, memory
# sharing with numpy, RSS, threads timing our kernels), the fuzzer, and this file.
NOT_DEVICE_TESTS = ["test_isa.py", "test_fuzz.py", "test_longrun.py", "test_threads.py", "test_stubs.py", "test_devices.py",
                    "test_whisper.py", "test_torchaudio.py", "test_torchvision_ops.py",
                    "test_peft.py", "test_open_clip.py", "test_cross_encoder.py", "test_quantize_dynamic_hf.py",
                    "test_diffusers.py", "test_torchvision.py", "test_timm.py", "test_opinfo.py", "test_transformers_archs.py",
                    "test_mmap_load.py",
                    # the server and Ray plumbing (its model kernels are the ones test_gguf/test_models check)
                    "test_serve.py", "test_ray.py"]


def _rerun(env_extra, timeout, also_ignore=()):
    env = dict(os.environ, **env_extra)
    ignore = [f"--ignore={os.path.join(HERE, name)}" for name in [*NOT_DEVICE_TESTS, *also_ignore]]
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *ignore, HERE],
                          env=env, capture_output=True, text=True, timeout=timeout, cwd=os.path.dirname(HERE))


@pytest.mark.skipif(any(k in os.environ for k in ("CANDLE_BIND_GENERIC", "CANDLE_BIND_ISA", "CANDLE_BIND_TEST_DEVICE")),
                    reason="already a rerun")
def test_suite_on_the_generic_paths():
    """The suite with CPU tensors on the device paths (CANDLE_BIND_GENERIC=1): each op's CUDA logic
    checked against torch on this machine."""
    out = _rerun({"CANDLE_BIND_GENERIC": "1"}, 2400)
    assert out.returncode == 0, f"CANDLE_BIND_GENERIC=1:\n{out.stdout[-8000:]}\n{out.stderr[-3000:]}"


@pytest.mark.skipif(not CUDA or "CANDLE_BIND_TEST_DEVICE" in os.environ, reason="no CUDA device, or already on it")
def test_suite_on_cuda():
    """The suite with candle_bind's tensors on the GPU (CANDLE_BIND_TEST_DEVICE=cuda)."""
    out = _rerun({"CANDLE_BIND_TEST_DEVICE": "cuda"}, 3000)
    assert out.returncode == 0, f"CANDLE_BIND_TEST_DEVICE=cuda:\n{out.stdout[-8000:]}\n{out.stderr[-3000:]}"


# ---- device semantics, on every device this machine has ----

@pytest.mark.parametrize("device", DEVICES)
def test_results_stay_on_the_inputs_device(device):
    x = to_cb(make((2, 3, 8, 8), seed=1)).to(device)
    w = to_cb(make((4, 3, 3, 3), seed=2)).to(device)
    idx = cb.tensor([[0, 2], [1, 0]]).to(device)
    m = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
                      nn.Flatten(), nn.Linear(64, 5), nn.LayerNorm(5)).eval().to(device)
    outs = [
        x + 1, x * x, x.sum(1), x.mean((2, 3)), x.max(-1).values, x.argmax(-1), x.softmax(-1), x.exp(),
        x > 0, x.clamp(-1, 1), x.reshape(2, -1) @ cb.ones(192, 4, device=device), x[:, 1:, ::2], x[x > 0],
        x.flatten(1).gather(1, idx), x.flatten(1)[:, cb.tensor([3, 1]).to(device)], x.sort(-1).values,
        x.flatten(1).topk(3).indices, x.cumsum(1), cb.where(x > 0, x, 0.0), x.nonzero(), x.unique(),
        cb.nn.functional.conv2d(x, w, padding=1), cb.nn.functional.gelu(x), cb.nn.functional.interpolate(x, scale_factor=2),
        cb.nn.functional.avg_pool2d(x, 2), cb.nn.functional.scaled_dot_product_attention(x, x, x, is_causal=True),
        cb.nn.functional.layer_norm(x, (8,)), m(x), cb.zeros_like(x), cb.arange(5, device=device),
        cb.randn(3, device=device), cb.tensor([1.0], device=device), cb.full((2,), 3.0, device=device),
    ]
    for o in outs:
        assert o.device.type == device, o


@pytest.mark.parametrize("device", DEVICES)
def test_in_place_ops_and_assignment(device):
    ref = make((4, 6), seed=3)
    x = to_cb(ref).to(device)
    view = x[:, 2:4]
    view += 1
    ref[:, 2:4] += 1
    x[0] = 5.0
    ref[0] = 5.0
    x[x < -1] = 0.0
    ref[ref < -1] = 0.0
    x[:, cb.tensor([0, 5]).to(device)] = cb.tensor([7.0, 8.0]).to(device)
    ref[:, torch.tensor([0, 5])] = torch.tensor([7.0, 8.0])
    x.mul_(2).clamp_(max=9)
    ref.mul_(2).clamp_(max=9)
    x.index_add_(0, cb.tensor([1, 1]).to(device), cb.ones(2, 6, device=device))
    ref.index_add_(0, torch.tensor([1, 1]), torch.ones(2, 6))
    assert x.device.type == device
    assert_same(x, ref)
    cache = cb.zeros(1, 2, 8, 4, device=device)
    cache[:, :, 3:5] = cb.ones(1, 2, 2, 4, device=device)
    assert cache.sum().item() == 16 and cache[0, 0, 3].sum().item() == 4


@pytest.mark.skipif(not CUDA, reason="no CUDA device")
def test_mixing_devices_raises_torchs_error():
    a, b = cb.ones(3), cb.ones(3, device="cuda")
    for f in (lambda: a + b, lambda: b @ a, lambda: cb.where(a > 0, a, b), lambda: cb.cat([a, b]),
              lambda: nn.Linear(3, 2).cuda()(a)):
        with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
            f()
    # A 0-d CPU tensor joins as a number does.
    assert (b + cb.tensor(2.0)).device.type == "cuda"


@pytest.mark.skipif(CUDA, reason="a machine without a GPU")
def test_cuda_is_unavailable_here():
    assert not cb.cuda.is_available() and cb.cuda.device_count() == 0
    with pytest.raises(RuntimeError, match="CUDA"):
        cb.ones(2).cuda()
    with pytest.raises(RuntimeError, match="CUDA"):
        cb.zeros(2, device="cuda")
    cb.cuda.synchronize()
    cb.cuda.empty_cache()
    cb.cuda.manual_seed(0)
    buf = io.BytesIO()
    torch.save({"w": torch.ones(2)}, buf)
    assert cb.load(io.BytesIO(buf.getvalue()), map_location="cpu")["w"].device.type == "cpu"


@pytest.mark.parametrize("device", DEVICES)
def test_moves_and_loads(device, tmp_path):
    t = cb.arange(6.0).reshape(2, 3)
    for moved in (t.to(device), t.to(cb.device(device)), t.to(device=device, dtype=cb.float16),
                  cb.tensor([[0.0, 1, 2], [3, 4, 5]], device=device), cb.as_tensor(t, device=device)):
        assert moved.device.type == device
        assert np.array_equal(moved.float().cpu().numpy(), t.numpy())
    if device == "cuda":
        assert t.cuda().is_cuda and t.cuda(0).device == cb.device("cuda", 0) and t.cuda().cpu().is_cpu
        assert t.cuda().get_device() == 0 and t.get_device() == -1
    m = nn.Linear(3, 2).to(device)
    assert all(p.device.type == device for p in m.parameters())
    path = tmp_path / "w.pt"
    torch.save(torch.nn.Linear(3, 2).state_dict(), path)
    sd = cb.load(path, map_location=device)
    assert all(v.device.type == device for v in sd.values())
    sd = cb.load(path, map_location=lambda storage, loc: storage)
    assert all(v.device.type == "cpu" for v in sd.values())
    sd = cb.load(path, map_location={"cpu": device})
    assert all(v.device.type == device for v in sd.values())
    m.load_state_dict(cb.load(path))
    assert all(p.device.type == device for p in m.parameters())
    from candle_bind import safetensors as st

    st.save_file({"w": cb.ones(2, 2, device=device)}, str(tmp_path / "w.safetensors"))
    assert st.load_file(str(tmp_path / "w.safetensors"), device=device)["w"].device.type == device


@pytest.mark.skipif(not CUDA, reason="no CUDA device")
def test_saved_from_cuda_loads_back_to_cuda(tmp_path):
    path = tmp_path / "c.pt"
    cb.save({"w": cb.ones(2, device="cuda"), "b": cb.zeros(1)}, str(path))
    back = cb.load(str(path))
    assert back["w"].device.type == "cuda" and back["b"].device.type == "cpu"
    assert torch.load(path, map_location="cpu")["w"].tolist() == [1.0, 1.0]
    assert cb.load(str(path), map_location="cpu")["w"].device.type == "cpu"


@pytest.mark.skipif(not CUDA, reason="no CUDA device")
def test_torch_cuda_functions():
    assert cb.cuda.device_count() >= 1
    name = cb.cuda.get_device_name(0)
    assert isinstance(name, str) and name
    major, minor = cb.cuda.get_device_capability()
    assert major >= 3
    free, total = cb.cuda.mem_get_info()
    assert 0 < free <= total
    props = cb.cuda.get_device_properties(0)
    assert props.total_memory == total and props.name == name
    cb.cuda.synchronize()
    cb.cuda.empty_cache()
    cb.cuda.manual_seed(1)
    assert cb.cuda.is_bf16_supported()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dt", ["int32", "int16", "int8"])
def test_small_integer_dtypes_on_every_device(device, dt):
    """int32/int16/int8 (what tokenizers, masks and quantized code hand over) live on the GPU and take
    the ops models use there: arithmetic, comparisons, where, reductions, sorts, casts, indexing
    and embedding lookups with such ids, as torch computes them."""
    tdt = getattr(torch, dt)
    x = torch.tensor([[3, -7, 0, 12], [100, -100, 5, 1]], dtype=tdt)
    c = to_cb(x).to(device)
    assert c.device.type == device and c.dtype == getattr(cb, dt)
    same = lambda got, want: assert_same(got.cpu(), want)  # noqa: E731
    same(c + c, x + x)
    same(c - 1, x - 1)
    same(c * 3, x * 3)
    same(c // 3, x // 3)
    same(c % 3, x % 3)
    same(c == 5, x == 5)
    same(c < 2, x < 2)
    same(cb.where(c > 0, c, -c), torch.where(x > 0, x, -x))
    same(cb.maximum(c, c.flip(1)), torch.maximum(x, x.flip(1)))
    same(c.sum(1), x.sum(1))
    same(c.max(), x.max())
    same(c.argmax(1), x.argmax(1))
    same(c.sort(1).values, x.sort(1).values)
    same(c.float(), x.float())
    same(c.t().contiguous(), x.t().contiguous())
    same(to_cb(x.float() * 1.5).to(device).to(getattr(cb, dt)), (x.float() * 1.5).to(tdt))
    same(c.masked_fill(c < 0, 7), x.masked_fill(x < 0, 7))
    same(c[:, 1:3], x[:, 1:3])
    same(c[c > 0], x[x > 0])
    w = torch.randn(2, 4)
    if dt == "int32":  # torch's index dtypes: int64 and int32
        ids = torch.tensor([[1, 0, 1]], dtype=tdt)
        same(cb.nn.functional.embedding(to_cb(ids).to(device), to_cb(w).to(device)), torch.nn.functional.embedding(ids, w))
        same(to_cb(w).to(device).index_select(0, to_cb(ids[0]).to(device)), w.index_select(0, ids[0]))
        same(to_cb(w).to(device)[to_cb(ids).to(device)], w[ids])
    mask = torch.tensor([[1, 1, 0]], dtype=tdt)
    same(to_cb(w).to(device)[:, None, :].expand(2, 3, 4)[0] * to_cb(mask).to(device)[0, :, None],
         w[:, None, :].expand(2, 3, 4)[0] * mask[0, :, None])
    if dt == "int8":
        same(c * 3, x * 3)  # wraps into int8's range
    cpu = c.cpu()
    assert cpu.dtype == getattr(cb, dt) and cpu.tolist() == x.tolist()


@pytest.mark.skipif(not CUDA, reason="no CUDA device")
def test_float8_stays_on_the_cpu():
    with pytest.raises(RuntimeError, match="not supported on CUDA"):
        cb.ones(2, dtype=cb.float8_e4m3fn).cuda()
    assert cb.ones(2, dtype=cb.int64).cuda().dtype == cb.int64


def test_torchs_other_device_types_construct_and_refuse_data():
    # peft, transformers and accelerate compare devices with torch.device("mps") / ("xpu")
    for name in ["mps", "xpu:1", "hpu", "privateuseone"]:
        ours, theirs = cb.device(name), torch.device(name)
        assert (str(ours), repr(ours), ours.type, ours.index) == (str(theirs), repr(theirs), theirs.type, theirs.index)
        assert ours != cb.device("cpu") and ours == cb.device(name)
    with pytest.raises(RuntimeError, match="mps device is not supported by candle_bind"):
        cb.zeros(2, device="mps")
    with pytest.raises(RuntimeError, match="Expected one of cpu, cuda, ipu, xpu"):
        cb.device("foo")
