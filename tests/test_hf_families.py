"""Hugging Face model families under the shim: tests/hf_families.py (a plain transformers script)
saves a tiny random model per family with real torch, then loads and runs every one once on torch
and once under `python -m candle_bind run`. Each family that works on torch must work under the
shim with the same greedy tokens and values within rtol 1e-3 / atol 1e-4, except the ones in
KNOWN_FAILURES, which must still fail there (so that a fix shows up here and gets its entry removed)."""

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("transformers")
import torch  # noqa: E402

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "hf_families.py")

# family -> why it fails under the shim (the torch API candle_bind lacks or gets wrong).
KNOWN_FAILURES: dict = {}

RTOL, ATOL = 1e-3, 1e-4


def run(*args):
    out = subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, f"{' '.join(args)} exited {out.returncode}:\n{out.stderr[-4000:]}"
    return out.stdout


def parse(stdout):
    results = {}
    for line in stdout.splitlines():
        if line.startswith("{"):
            result = json.loads(line)
            results[result["family"]] = result
    return results


def differences(family, want, got):
    """What differs between torch's result `want` and the shim's `got` (an empty list when they agree)."""
    problems = []
    if want.get("tokens") != got.get("tokens"):
        problems.append(f"{family}: generated tokens {got.get('tokens')} != torch's {want.get('tokens')}")
    if set(want["values"]) != set(got["values"]):
        problems.append(f"{family}: outputs {sorted(got['values'])} != torch's {sorted(want['values'])}")
        return problems
    for key, expected in want["values"].items():
        ours = got["values"][key]
        if len(ours) != len(expected) or not torch.allclose(
                torch.tensor(ours, dtype=torch.float64), torch.tensor(expected, dtype=torch.float64),
                rtol=RTOL, atol=ATOL):
            problems.append(f"{family}: {key} {ours} != torch's {expected}")
    return problems


@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_hf_families(tmp_path):
    folder = str(tmp_path)
    saved = parse(run(SCRIPT, "save", folder))
    reference = parse(run(SCRIPT, "run", folder))
    shim = parse(run("-m", "candle_bind", "run", SCRIPT, "run", folder))

    # The script itself must work on torch for every family this transformers has.
    families = [f for f, r in saved.items() if "saved" in r]
    assert families, saved
    broken = {f: reference.get(f) for f in families if "error" in reference.get(f, {"error": "no output"})}
    assert not broken, f"hf_families.py fails on torch itself: {broken}"

    problems = []
    for family in families:
        want, got = reference[family], shim.get(family)
        if got is None:
            problems.append(f"{family}: no output under the shim")
        elif family in KNOWN_FAILURES:
            if "error" not in got:
                problems.append(f"{family}: now runs under the shim ({KNOWN_FAILURES[family]} is fixed?): "
                                f"remove it from KNOWN_FAILURES" +
                                "".join(f"; {p}" for p in differences(family, want, got)))
        elif "error" in got:
            problems.append(f"{family}: {got['error']} at {got.get('where')}")
        else:
            problems.extend(differences(family, want, got))
    assert not problems, "\n".join(problems)
