"""Run-time ISA dispatch: the level in use, CANDLE_BIND_ISA, and the whole suite again at every
level below the CPU's best (AVX2 and portable on an AVX-512 machine, portable on an AVX2 one), so
each compiled path of every kernel is checked against torch on whatever machine runs the tests."""

import os
import subprocess
import sys

import pytest
import torch

import candle_bind as cb

LEVELS = ["AVX512", "AVX2", "DEFAULT"]
ENV_NAME = {"AVX512": "avx512", "AVX2": "avx2", "DEFAULT": "portable"}


def _run(code, isa):
    env = dict(os.environ, CANDLE_BIND_ISA=isa)
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)


def test_capability_names():
    active, best, unknown = cb._C.cpu_capability()
    assert active in LEVELS and best in LEVELS and unknown is None
    assert LEVELS.index(active) >= LEVELS.index(best)
    assert cb.backends.cpu.get_cpu_capability() == active
    if "CANDLE_BIND_ISA" not in os.environ:
        # Without a cap we run what torch runs on this CPU.
        assert active == torch.backends.cpu.get_cpu_capability()


def test_cap_is_honoured_and_never_raised():
    best = cb._C.cpu_capability()[1]
    code = "import candle_bind as cb; print(cb.backends.cpu.get_cpu_capability())"
    for level in LEVELS:
        out = _run(code, ENV_NAME[level])
        assert out.returncode == 0, out.stderr
        expected = level if LEVELS.index(level) >= LEVELS.index(best) else best
        assert out.stdout.strip() == expected


def test_unknown_value_warns_and_is_ignored():
    out = _run("import candle_bind as cb; print(cb.backends.cpu.get_cpu_capability())", "sse9")
    assert out.returncode == 0
    assert "CANDLE_BIND_ISA='sse9'" in out.stderr
    assert out.stdout.strip() == cb._C.cpu_capability()[1]


# Files that run no kernel our cap changes (loaders, the shim's plumbing, stubs, error paths, the
# fuzzer's raise-or-not comparison, RSS over time, threading): once, at the CPU's best level, is enough.
NOT_KERNEL_TESTS = ["test_fuzz.py", "test_longrun.py", "test_threads.py", "test_stubs.py", "test_compat.py",
                    "test_checkpoints.py", "test_checkpoints_legacy.py", "test_mmap_load.py", "test_gguf.py", "test_utils_data.py",
                    "test_robustness.py", "test_whisper.py", "test_torchaudio.py", "test_torchvision_ops.py",
                    "test_peft.py", "test_open_clip.py", "test_cross_encoder.py", "test_quantize_dynamic_hf.py",
                    "test_diffusers.py", "test_fft.py", "test_complex.py", "test_torchvision.py", "test_timm.py", "test_opinfo.py", "test_transformers_archs.py",
                    # scalar Rust code and numpy's LAPACK: no instruction-set dispatch to cap
                    "test_special.py", "test_linalg.py", "test_error_types.py",
                    # the server and Ray plumbing (its model kernels are the ones test_gguf/test_models check)
                    "test_serve.py", "test_ray.py"]


def _lower_levels():
    best = cb._C.cpu_capability()[1]
    return [lvl for lvl in LEVELS if LEVELS.index(lvl) > LEVELS.index(best)]


@pytest.mark.skipif("CANDLE_BIND_ISA" in os.environ, reason="already running at a forced level")
@pytest.mark.parametrize("level", _lower_levels())
def test_suite_at_lower_level(level):
    """Every test file again with the kernels capped at `level` (a child pytest)."""
    here = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ, CANDLE_BIND_ISA=ENV_NAME[level])
    ignore = [f"--ignore={os.path.join(here, name)}" for name in NOT_KERNEL_TESTS]
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *ignore, here],
                         env=env, capture_output=True, text=True, timeout=2400, cwd=os.path.dirname(here))
    assert out.returncode == 0, f"CANDLE_BIND_ISA={ENV_NAME[level]}:\n{out.stdout[-6000:]}\n{out.stderr[-3000:]}"
