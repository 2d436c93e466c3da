"""Bad input raises a Python exception as torch's does, and never takes the process down: sizes no
machine can hold, arguments torch rejects, and a panic inside our thread pool."""

import subprocess
import sys
import textwrap

import pytest
import torch

import candle_bind as cb

# Each asks for terabytes (or more than a machine word can count): torch raises RuntimeError at once.
HUGE = [
    "m.zeros(10**12)",
    "m.empty(2**45)",
    "m.full((2**20, 2**20), 1.0)",
    "m.arange(0, 1e13)",
    "m.zeros(1).expand(10**11).contiguous()",
    "m.zeros(1).expand(10**11).clone()",
    "m.randn(10**6, 10**6)",
    "m.rand(10**6, 10**6, dtype=m.float64)",
    "m.randint(0, 10, (10**12,))",
    "m.ones(1000).repeat(10**9)",
    "m.ones(200000, 1) @ m.ones(1, 200000)",
    "m.ones(200000, 1) + m.ones(1, 200000)",
    "m.where(m.ones(200000, 1) > 0, m.ones(1, 200000), 0.0)",
    "m.eye(10**7)",
    "m.zeros(2**62, 4)",
    "m.zeros(2**40, 2**40)",
    "m.ones(3).new_zeros(10**12)",
    "m.zeros(1, 1, 4, 4).repeat(1, 1, 10**6, 10**6)",
    "m.ones(2).repeat_interleave(10**12)",
    "m.nn.functional.interpolate(m.ones(1, 1, 4, 4), scale_factor=1e6)",
    "m.nn.functional.conv_transpose2d(m.ones(1, 1, 4, 4), m.ones(1, 1, 1, 1), stride=10**6)",
]


def _run_each(module: str, calls: list[str]) -> list[str]:
    """Runs every call in one child process (an abort there fails the test, not the test run); returns,
    per call, 'ok' or 'RuntimeError: message' (any subclass) or 'OtherType: message'."""
    script = textwrap.dedent(f"""
        import {module} as m
        import {module}.nn.functional
        for call in {calls!r}:
            try:
                eval(call)
                print("ok", flush=True)
            except Exception as e:
                kind = "RuntimeError" if isinstance(e, RuntimeError) else type(e).__name__
                print(kind + ": " + str(e).splitlines()[0][:200], flush=True)
    """)
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    lines = p.stdout.splitlines()
    assert p.returncode == 0, f"{module} died with {p.returncode} after {calls[len(lines)] if len(lines) < len(calls) else '?'}:\n{p.stderr[-2000:]}"
    return lines


def test_huge_allocations_raise_runtime_error_like_torch():
    ours = _run_each("candle_bind", HUGE)
    theirs = _run_each("torch", HUGE)
    for call, got, want in zip(HUGE, ours, theirs):
        assert want != "ok", f"torch allocated {call}"
        assert got != "ok", f"{call}: no error (torch: {want})"
        assert got.startswith("RuntimeError"), f"{call}: {got}"
        assert "can't allocate memory" in got or "overflow" in got or "negative" in got, f"{call}: {got}"


def test_out_of_memory_error_names_the_bytes():
    with pytest.raises(cb.OutOfMemoryError, match="you tried to allocate 4000000000000 bytes"):
        cb.zeros(10**12)
    assert issubclass(cb.OutOfMemoryError, RuntimeError)
    assert cb.cuda.OutOfMemoryError is cb.OutOfMemoryError


def test_huge_sizes_stay_free_on_the_meta_device():
    assert cb.zeros(10**12, device="meta").shape == (10**12,)
    with pytest.raises(RuntimeError, match="overflow"):
        cb.zeros(2**62, 4, device="meta")


# Arguments torch rejects: we raise the same exception type (messages are torch's where it matters).
REJECTED = [
    "F.conv2d(m.ones(1, 1, 5, 5), m.ones(1, 1, 3, 3), stride=0)",
    "F.conv2d(m.ones(1, 1, 5, 5), m.ones(1, 1, 3, 3), stride=-1)",
    "F.conv2d(m.ones(1, 1, 5, 5), m.ones(1, 1, 3, 3), dilation=0)",
    "F.conv2d(m.ones(1, 1, 5, 5), m.ones(1, 1, 3, 3), padding=-1)",
    "F.conv2d(m.ones(1, 1, 5, 5), m.ones(1, 1, 3, 3), groups=0)",
    "F.conv2d(m.ones(1, 1, 5, 5), m.ones(1, 1, 0, 3))",
    "F.conv1d(m.ones(1, 1, 5), m.ones(1, 1, 3), stride=0)",
    "F.conv3d(m.ones(1, 1, 3, 3, 3), m.ones(1, 1, 1, 1, 1), dilation=0)",
    "F.conv_transpose2d(m.ones(1, 1, 5, 5), m.ones(1, 1, 3, 3), stride=0)",
    "F.conv_transpose2d(m.ones(1, 1, 2, 2), m.ones(1, 1, 1, 1), padding=3)",
    "F.conv2d(m.ones(1, 1, 5, 5), m.ones(1, 1, 3, 3), padding=2**62)",
    "F.conv2d(m.ones(1, 1, 5, 5), m.ones(1, 1, 3, 3), dilation=2**62)",
    "m.nn.Embedding(10, 4)(m.tensor([-1]))",
    "m.nn.Embedding(10, 4)(m.tensor([10]))",
    "m.repeat_interleave(m.ones(3), m.tensor([1, -1, 2]))",
    "m.ones(3).repeat_interleave(-1)",
    "m.ones(3).repeat(-1)",
    "F.interpolate(m.ones(1, 1, 4, 4), scale_factor=2, mode='cubic')",
    "F.interpolate(m.ones(1, 1, 4, 4), scale_factor=-2)",
    "F.interpolate(m.ones(1, 1, 4, 4), size=(0, 3))",
    "F.interpolate(m.ones(1, 1, 4, 4), scale_factor=float('nan'))",
    "m.arange(0, float('inf'))",
    "m.arange(float('nan'), 3)",
    "m.arange(0, 10, float('nan'))",
    "m.empty(-1)",
    "m.zeros(3).index_select(0, m.tensor([-1]))",
    "m.zeros(3).gather(0, m.tensor([-1]))",
    "m.zeros(3).scatter(0, m.tensor([-1]), m.ones(1))",
]


@pytest.mark.parametrize("call", REJECTED)
def test_rejected_arguments_raise_as_torch_does(call):
    def run(m):
        try:
            eval(call, {"m": m, "F": m.nn.functional})
        except Exception as e:  # noqa: BLE001 - the type is what is compared
            return e
        return None
    want, got = run(torch), run(cb)
    assert want is not None, f"torch accepts {call}"
    assert got is not None, f"{call}: no error (torch: {want!r})"
    assert isinstance(got, type(want)), f"{call}: {got!r}, torch: {want!r}"


def test_a_panic_in_a_pool_task_reaches_python_and_the_pool_keeps_working():
    before = cb.get_num_threads()
    cb.set_num_threads(2)
    try:
        for _ in range(3):
            with pytest.raises(BaseException, match="panicked on purpose"):
                cb._C._pool_panic_check(64)
        x = torch.randn(512, 1024)
        assert torch.allclose(torch.from_numpy((cb.from_numpy(x.numpy()) * 2).softmax(-1).numpy()), (x * 2).softmax(-1), atol=1e-6)
    finally:
        cb.set_num_threads(before)
