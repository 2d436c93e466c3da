"""The zero-edit shim (whole models: test_swap.py): torch's module names resolve to candle_bind,
unsupported APIs are named, interop with torch."""

import os
import subprocess
import sys

import pytest
import torch

import candle_bind as cb

HERE = os.path.dirname(os.path.abspath(__file__))


def run(args, env=None):
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=300, env=env)


def test_shim_names_missing_apis_and_uninstalls():
    code = (
        "import candle_bind.compat as c; c.install()\n"
        "import torch, torch.nn as nn, torch.nn.functional as F\n"
        "from torch import nn as nn2, Tensor\n"
        "from torch.nn import functional as F2\n"
        "import torch.nn.init, torch.nn.utils\n"
        "assert nn is nn2 and F is F2 and torch.compile(abs) is abs and torch.jit.script(abs) is abs\n"
        "import candle_bind\n"
        "assert torch.cuda.is_available() is candle_bind._C.cuda_is_available() and torch.backends.cudnn.enabled is False\n"
        "g = torch.Generator().manual_seed(3)\n"
        "try:\n    torch.package\nexcept AttributeError as e:\n    print(e)\n"
        "try:\n    import torch.package\nexcept ModuleNotFoundError as e:\n    print(e)\n"
        "c.uninstall()\n"
        "import sys; print('torch' in sys.modules)\n"
    )
    out = run(["-c", code])
    assert out.returncode == 0, out.stderr
    assert "torch.package is not supported by candle_bind yet" in out.stdout
    assert out.stdout.count("torch.package is not supported by candle_bind yet") == 2
    assert out.stdout.strip().endswith("False")


def test_main_usage():
    out = run(["-m", "candle_bind"])
    assert out.returncode == 2 and "usage" in out.stderr


def test_main_info_names_the_build_and_the_machine():
    out = run(["-m", "candle_bind", "info"], env=dict(os.environ, CANDLE_BIND_ISA="portable"))
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert text.startswith(f"candle_bind {cb.__version__}")
    assert ("CUDA: built in" if cb._C.cuda_compiled else "CUDA: not built") in text
    assert "instruction set: DEFAULT" in text and f"intra-op threads: {cb.get_num_threads()}" in text
    assert cb.__config__.show().splitlines()[0] == text.splitlines()[0]


def test_from_torch_to_torch():
    import candle_bind as cb

    for dt in [torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.bool, torch.uint8]:
        t = (torch.arange(6) % 3).to(dt).reshape(2, 3).t()
        c = cb.from_torch(t)
        assert tuple(c.shape) == (3, 2) and repr(c.dtype) == repr(t.dtype)
        back = cb.to_torch(c)
        assert back.dtype == t.dtype and torch.equal(back, t)


def test_einops_functions_on_candle_bind_tensors():
    einops = __import__("pytest").importorskip("einops")
    import candle_bind as cb

    t = torch.randn(2, 6, 4, 3)
    c = cb.from_torch(t)
    cases = [
        lambda e, x: e.rearrange(x, "b (h d) w c -> b h (w c) d", h=2),
        lambda e, x: e.rearrange(x, "b c h w -> (b h) w c"),
        lambda e, x: e.repeat(x[:, 0], "b h w -> b h w r", r=3),
        lambda e, x: e.pack([x, x[:, :, 0]], "b c * ")[0],
        lambda e, x: e.einsum(x, x, "b c h w, b d h w -> b c d"),
        *[lambda e, x, op=op: e.reduce(x, "b c h w -> b w", op) for op in ["sum", "mean", "max", "min", "prod"]],
    ]
    for case in cases:
        want, got = case(einops, t), case(einops, c)
        assert tuple(got.shape) == tuple(want.shape)
        assert torch.allclose(cb.to_torch(got), want, atol=1e-5)
    # einops imported before candle_bind registers the backend too
    code = "import einops, candle_bind as cb; print(tuple(einops.rearrange(cb.ones(2, 3), 'a b -> b a').shape))"
    out = run(["-c", code])
    assert out.returncode == 0 and out.stdout.strip() == "(3, 2)", out.stderr


def test_einops_layers_under_the_shim():
    """einops.layers.torch (imported against real torch first) is re-imported against candle_bind."""
    __import__("pytest").importorskip("einops")
    from einops.layers.torch import EinMix, Rearrange, Reduce

    import candle_bind as cb
    import candle_bind.compat as compat

    layers = torch.nn.Sequential(Rearrange("b c (h p) w -> b h (p w) c", p=2), Reduce("b h x c -> b x c", "max"),
                                 EinMix("b x c -> b x d", weight_shape="c d", bias_shape="d", c=3, d=5))
    compat.install()
    try:
        from einops.layers.torch import EinMix as CEinMix, Rearrange as CRearrange, Reduce as CReduce
        ours = cb.nn.Sequential(CRearrange("b c (h p) w -> b h (p w) c", p=2), CReduce("b h x c -> b x c", "max"),
                                CEinMix("b x c -> b x d", weight_shape="c d", bias_shape="d", c=3, d=5))
    finally:
        compat.uninstall()
    from einops.layers.torch import Rearrange as Again

    assert Again is Rearrange and issubclass(CRearrange, cb.nn.Module)
    ours.load_state_dict({k: cb.from_torch(v) for k, v in layers.state_dict().items()})
    x = torch.randn(2, 3, 4, 5)
    assert torch.allclose(cb.to_torch(ours(cb.from_torch(x))), layers(x).detach(), atol=1e-5)


def test_dlpack_both_ways():
    import numpy as np

    import candle_bind as cb
    from candle_bind.utils.dlpack import to_dlpack

    for dt in [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int64, torch.int32,
               torch.uint8, torch.bool]:
        t = (torch.arange(24) % 5).to(dt).view(2, 3, 4)
        for view in (t, t.transpose(0, 2), t[:, 1:, ::2], t[0, 0, :0], t[1, 2, 3]):
            c = cb.from_dlpack(view)
            assert tuple(c.shape) == tuple(view.shape) and repr(c.dtype) == repr(view.dtype)
            assert torch.equal(cb.to_torch(c), view)
            back = torch.from_dlpack(c)
            assert back.dtype == view.dtype and torch.equal(back, view)
    # Export shares memory (a view of the storage, offsets and strides kept); import copies.
    x = cb.arange(12.0).reshape(3, 4)
    shared = torch.from_dlpack(x[1:].t())
    shared[0, 0] = 100.0
    assert x[1, 0].item() == 100.0
    assert torch.from_dlpack(to_dlpack(x)).shape == (3, 4)
    assert np.from_dlpack(x).tolist() == x.tolist()
    assert x.__dlpack_device__() == (1, 0)
    assert cb.from_dlpack(np.arange(3.0)).tolist() == [0.0, 1.0, 2.0]
    capsule = x.__dlpack__()
    cb.from_dlpack(capsule)
    import pytest

    with pytest.raises(TypeError, match="unused DLPack capsule"):
        cb.from_dlpack(capsule)  # consumed once
    with pytest.raises(TypeError):
        cb.from_dlpack(3)
    with pytest.raises(TypeError, match="unsupported DLPack dtype"):
        cb.from_dlpack(torch.zeros(2, dtype=torch.complex64))


IDIOMS = '''
from contextlib import nullcontext
import torch
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
device = "mps" if torch.backends.mps.is_available() else device
dtype = "bfloat16" if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else "float32"
ptdtype = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[dtype]
torch.manual_seed(1337)
torch.cuda.manual_seed(1337)
torch.backends.cuda.matmul.allow_tf32 = True
torch.backends.cudnn.allow_tf32 = True
torch.set_num_threads(2)
print(torch.get_num_threads())
device_type = "cuda" if "cuda" in str(device) else "cpu"
ctx = nullcontext() if device_type == "cpu" else torch.amp.autocast(device_type=device_type, dtype=ptdtype)
with ctx, torch.autocast("cpu", enabled=False), torch.amp.autocast(device_type="cpu", dtype=torch.bfloat16):
    pass
torch.set_printoptions(precision=2)
x = torch.randn(2, 3, device=device, generator=torch.Generator().manual_seed(0))
print(isinstance(x, torch.Tensor), x.is_cuda, x.device.type, torch.is_tensor(x), x.dtype == torch.float32)
print(torch.Size([2, 3]) == x.shape, type(x.shape) is torch.Size)
print(torch.finfo(torch.float32).eps, torch.iinfo(torch.int64).max)
with torch.set_grad_enabled(False):
    print(torch.is_grad_enabled())
print(torch.is_grad_enabled())
f = torch.compile(lambda a: a + 1, mode="reduce-overhead")
print(torch.cuda.device_count(), torch.tensor([1.0, 2.0]).to(device, non_blocking=True) / 3)
torch.cuda.empty_cache()
print(torch.get_default_dtype(), torch.float, F.one_hot(torch.tensor([0, 2]), 3).tolist())
torch.testing.assert_close(torch.ones(2) + 1e-7, torch.ones(2))
print(torch.allclose(torch.ones(2), torch.ones(2) + 1e-3), torch.isclose(torch.ones(2), torch.tensor([1.0, 2.0])).tolist())
try:
    torch.testing.assert_close(torch.ones(2), torch.zeros(2))
except AssertionError as e:
    print(str(e).splitlines()[0])
'''


def test_script_idioms_around_the_model(tmp_path):
    """What scripts do around the model (devices, flags, autocast, seeding, printing) prints the
    same under torch and under the shim."""
    script = tmp_path / "idioms.py"
    script.write_text(IDIOMS)
    no_gpu = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}  # both sides on the CPU, GPU or not
    ref = run(["-W", "ignore", str(script)], env=no_gpu)
    ours = run(["-m", "candle_bind", "run", str(script)], env=no_gpu)
    assert ref.returncode == 0, ref.stderr
    assert ours.returncode == 0, ours.stderr
    assert ours.stdout == ref.stdout


def test_torch_cpp_extensions_load_only_where_candle_bind_serves_them():
    """torchvision imports under the shim (its operators and image codecs are served by candle_bind:
    tests/test_torchvision.py); any other torch C++ extension fails to load as torch's does for a library
    that will not load (OSError), so packages with optional C++ ops go on without them."""
    import candle_bind.compat as compat

    compat.install()
    try:
        import torch as shimmed

        with pytest.raises(OSError, match="cannot load torch C\\+\\+ extensions"):
            shimmed.ops.load_library("/nonexistent/_C.so")
    finally:
        compat.uninstall()


def test_torchaudio_extension_probe_reports_the_library_absent(tmp_path):
    """torchaudio re-raises a failed load of its compiled library; the shim patches its probe
    (torchaudio._extension.utils._load_lib, as the module loads) to report the library absent, the
    case torchaudio supports. A stand-in package with torchaudio's layout checks this where torchaudio
    itself is not installed (test_torchaudio.py runs the real one)."""
    ext = tmp_path / "torchaudio" / "_extension"
    ext.mkdir(parents=True)
    (tmp_path / "torchaudio" / "__init__.py").write_text("from . import _extension\n")
    (ext / "utils.py").write_text(
        "import torch\n\ndef _load_lib(lib):\n    torch.ops.load_library(lib + '.so')\n    return True\n")
    (ext / "__init__.py").write_text(
        "from .utils import _load_lib\n_IS_TORCHAUDIO_EXT_AVAILABLE = _load_lib('_torchaudio')\n"
        "fail_if_no_align = None\n")
    script = tmp_path / "probe.py"
    script.write_text("import torch, torchaudio\n"
                      "print(torchaudio._extension._IS_TORCHAUDIO_EXT_AVAILABLE)\n"
                      "print(torchaudio._extension.fail_if_no_align is not None)\n"
                      "try:\n    torch.ops.torchaudio.rnnt_loss_forward()\n"
                      "except NotImplementedError as e:\n    print(e)\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    out = run(["-m", "candle_bind", "run", str(script)], env=env)
    assert out.returncode == 0, out.stderr
    available, align_guard, message = out.stdout.splitlines()
    assert available == "False" and align_guard == "True"
    assert "rnnt_loss" in message and "cannot load under candle_bind" in message
    assert run([str(script)], env=env).returncode != 0  # on torch, the load itself fails (no such library)
