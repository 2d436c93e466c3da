"""The zero-edit shim (whole models: test_swap.py): torch's module names resolve to candle_bind,
unsupported APIs are named, interop with torch."""

import os
import subprocess
import sys

import torch

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
        "assert torch.cuda.is_available() is False and torch.backends.cudnn.enabled is False\n"
        "g = torch.Generator().manual_seed(3)\n"
        "try:\n    torch.fft\nexcept AttributeError as e:\n    print(e)\n"
        "c.uninstall()\n"
        "import sys; print('torch' in sys.modules)\n"
    )
    out = run(["-c", code])
    assert out.returncode == 0, out.stderr
    assert "torch.fft is not supported by candle_bind yet" in out.stdout
    assert out.stdout.strip().endswith("False")


def test_main_usage():
    out = run(["-m", "candle_bind"])
    assert out.returncode == 2 and "usage" in out.stderr


def test_from_torch_to_torch():
    import candle_bind as cb

    for dt in [torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.bool, torch.uint8]:
        t = (torch.arange(6) % 3).to(dt).reshape(2, 3).t()
        c = cb.from_torch(t)
        assert tuple(c.shape) == (3, 2) and repr(c.dtype) == repr(t.dtype)
        back = cb.to_torch(c)
        assert back.dtype == t.dtype and torch.equal(back, t)
