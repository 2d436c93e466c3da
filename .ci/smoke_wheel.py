"""Smoke test of an installed candle-bind wheel in a bare environment (numpy only, no Rust, no torch):
import, a tensor op, a layer, a safetensors round trip and the shim on a tiny torch script."""

import os
import subprocess
import sys
import tempfile
import time

t0 = time.perf_counter()
import candle_bind as torch  # noqa: E402
from candle_bind import nn  # noqa: E402
from candle_bind.safetensors import load_file, save_file  # noqa: E402

print(f"import candle_bind {torch.__version__}: {(time.perf_counter() - t0) * 1000:.0f} ms")
assert "site-packages" in torch.__file__, torch.__file__  # the wheel, not a source tree

x = torch.arange(6, dtype=torch.float32).reshape(2, 3)
assert (x @ x.T).tolist() == [[5.0, 14.0], [14.0, 50.0]]
torch.manual_seed(0)
lin = nn.Linear(3, 2)
y = lin(x)
assert y.shape == (2, 2) and y.dtype == torch.float32
with tempfile.TemporaryDirectory() as d:
    path = os.path.join(d, "w.safetensors")
    save_file(lin.state_dict(), path)
    back = load_file(path)
    assert all(torch.equal(back[k], v) for k, v in lin.state_dict().items())
    script = os.path.join(d, "script.py")
    with open(script, "w") as f:
        f.write("import torch\nimport torch.nn.functional as F\n"
                "print(F.softmax(torch.tensor([1.0, 2.0, 3.0]), dim=0).sum().item())\n")
    out = subprocess.run([sys.executable, "-m", "candle_bind", "run", script], capture_output=True, text=True)
    assert out.returncode == 0 and abs(float(out.stdout) - 1.0) < 1e-6, out
try:
    import importlib.metadata as md

    assert md.version("candle-bind") == torch.__version__
except ImportError:
    pass
print(torch.__config__.show(), end="")
print("wheel smoke test: ok")
