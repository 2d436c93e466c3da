"""Runs a script once under torch (`python script.py`) and once under the shim (`python -m candle_bind
run script.py`) and compares what the two printed. The scripts (tests/hf, tests/eco) import torch, never
candle_bind; they print `key value` lines (tests/hf/common.py) and a section that raises prints
`error:<section> '<traceback>'`. Tensors agree within rtol 1e-3 / atol 1e-4 (keys naming an embedding:
1e-4 / 1e-5, or the tolerances a test passes), every other value exactly."""

import ast
import os
import subprocess
import sys

import pytest
import torch

TESTS = os.path.dirname(os.path.abspath(__file__))


def parse(stdout):
    out = {}
    for line in stdout.splitlines():
        if not line or line.startswith("#"):
            continue
        key, _, value = line.partition(" ")
        out[key] = ast.literal_eval(value)
    return out


def run(script, args, shim, env=None):
    cmd = [sys.executable, *(["-m", "candle_bind", "run"] if shim else []), script, *args]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
    assert out.returncode == 0, f"{' '.join(cmd)} exited {out.returncode}:\n{out.stderr[-6000:]}"
    return parse(out.stdout)


class Runs:
    """Each script (a name in `folder`) runs once under torch and once under the shim (both lazily)."""

    def __init__(self, folder, env=None):
        self.folder, self.env, self.cache = folder, env, {}

    def get(self, script, *args):
        if (script, args) not in self.cache:
            path = os.path.join(self.folder, script)
            try:
                self.cache[(script, args)] = (run(path, args, False, self.env), run(path, args, True, self.env))
            except AssertionError as e:  # a crashed process fails every test of its script, run once
                self.cache[(script, args)] = e
        if isinstance(self.cache[(script, args)], AssertionError):
            raise self.cache[(script, args)]
        return self.cache[(script, args)]

    def section(self, name, script, *args):
        """The torch and shim results of one section, keys without the section prefix; a section
        that raised fails the test with its traceback."""
        ref, ours = self.get(script, *args)
        if f"error:{name}" in ref:
            pytest.fail(f"{script} {name}: the reference run (real torch) failed:\n{ref[f'error:{name}']}")
        if f"error:{name}" in ours:
            pytest.fail(f"{script} {name} under candle_bind:\n{ours[f'error:{name}']}")
        pick = lambda d: {k.split(".", 1)[1]: v for k, v in d.items() if k.startswith(name + ".")}  # noqa: E731
        want, got = pick(ref), pick(ours)
        assert want, f"section {name} printed nothing"
        return want, got


def is_float(value):
    if isinstance(value, list):
        return any(is_float(v) for v in value)
    return isinstance(value, float)


def compare(want, got, rtol=None, atol=None):
    assert set(got) == set(want)
    for key, w in want.items():
        g = got[key]
        if is_float(w):
            a = atol if atol is not None else (1e-5 if "embedding" in key else 1e-4)
            r = rtol if rtol is not None else (1e-4 if "embedding" in key else 1e-3)
            w_t, g_t = torch.tensor(w, dtype=torch.float64), torch.tensor(g, dtype=torch.float64)
            assert g_t.shape == w_t.shape, (key, g_t.shape, w_t.shape)
            diff = (g_t - w_t).abs().max().item() if w_t.numel() else 0.0
            assert torch.allclose(g_t, w_t, rtol=r, atol=a, equal_nan=True), f"{key}: max abs diff {diff}"
        else:
            assert g == w, f"{key}: got {g!r}, torch gives {w!r}"
