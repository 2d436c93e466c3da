"""Bad input raises a Python exception as torch's does, and never takes the process down: sizes no
machine can hold, arguments torch rejects, and a panic inside our thread pool."""

import subprocess
import sys
import textwrap

import numpy as np
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
    "m.linspace(0, 1, 10**12)",
    "m.logspace(float('inf'), 3, 10**12, dtype=m.uint8)",
    "m.bincount(m.tensor([1, 2]), minlength=10**12)",
    "m.zeros((2**21,) * 3)",
    "m.multinomial(m.ones(5), 10**12, replacement=True)",
    "m.nn.functional.pad(m.ones(3, 3, 1).expand(3, 3, 2), (2**62, -1), mode='replicate')",
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


def test_every_pool_task_runs_once_at_any_thread_count():
    # Each thread runs its own share first and then takes from the others' ends: no task may be
    # skipped or run twice, whether the shares divide evenly or not.
    before = cb.get_num_threads()
    try:
        for threads in (2, 3, 5, 8):
            cb.set_num_threads(threads)
            for n in (2, 3, 7, 64, 1001):
                assert cb._C._pool_task_counts(n) == [1] * n, (threads, n)
    finally:
        cb.set_num_threads(before)


# Calls the API fuzzer (tests/fuzz_api.py) found raising or hanging where torch returns: same values now.
ACCEPTED = [
    "x = m.ones(2, 4, 0, 3); x.mul_(2); r = x",
    "x = m.zeros(4, 0, 4, 0); x.logical_and_(m.ones(4, 1, 1, 1).expand(4, 1, 4, 1)); r = x",
    "r = m.nn.Dropout(0.5)(m.ones(2, 4, 0, 3))",
    "r = m.diag_embed(m.ones(0, 5, 0, dtype=m.bfloat16).permute(2, 1, 0), 0)",
    "x = m.arange(25, dtype=m.int16).reshape(5, 5) - 12; x.le_(float('inf')); r = x",
    "x = m.arange(6, dtype=m.int16) - 3; x[1] = 7; x += 2; r = x",
    "r = m.sign(m.tensor([3, -2, 0], dtype=m.int16))",
    "r = ~m.tensor([3, -2, 0], dtype=m.int16)",
    "r = m.tensor([3, -2, 0], dtype=m.int16).abs()",
    "r = F.max_pool2d((m.arange(72, dtype=m.int16) * 7 % 23).reshape(2, 1, 6, 6), 2, return_indices=True)",
    "r = F.max_pool2d((m.arange(72) * 7 % 23).reshape(2, 1, 6, 6) - 2**40, 2)",
    "r = F.max_pool2d(m.ones(0, 2, 7, 5, dtype=m.int16), (3, 4), stride=2, return_indices=True)",
    "r = F.interpolate(m.ones(0, 1, 2, 4), size=(10**6, 10**6), mode='bicubic').shape",
    "r = m.linspace(-3.5, 7.25, 101, dtype=m.float64)",
    "r = m.linspace(0, 100, 33, dtype=m.int64)",
    "r = m.logspace(-2, 2, 9, dtype=m.float64)",
    "r = F.pad(m.arange(24.).reshape(2, 3, 4), (2, 3), mode='replicate')",
    "r = F.pad(m.arange(24.).reshape(2, 3, 4), (3, 2), mode='reflect')",
    "r = F.pad(m.arange(24.).reshape(2, 3, 4), (4, 1), mode='circular')",
    "r = m.zeros(0, 4, 5, dtype=m.int32).narrow(1, 1, 2)",
    "r = m.select(m.zeros(0, 4), 1, 1)",
    "r = m.zeros(0, 4, 4).tensor_split(3, -2)",
    "r = m.zeros(0, 4).transpose(-1, -2)[2, None]",
    "r = m.zeros(1, 0, 1, 2, dtype=m.int16)[..., 1]",
    "r = m.median(m.zeros(5, 2, 4, 0).transpose(-1, -2), 3)",
    "r = m.chunk(m.zeros(5, 1, 0, 2).transpose(-1, -2), 3, -2)",
    "r = F.pad(m.zeros(0, 4, dtype=m.bfloat16), (-2, 1))",
    # found by conformance/opinfo.py
    "r = m.logspace(1.5, 3.5, 5, dtype=m.int64)",
    "r = m.linspace(4.3, -3, 50, dtype=m.int64)",
    "r = m.arange(6.).reshape(2, 3).long(memory_format=m.contiguous_format)",
]


def _values(r):
    if isinstance(r, (tuple, list)) and not isinstance(r, (cb.Size, torch.Size)):
        return [_values(x) for x in r]
    if hasattr(r, "numpy"):
        return str(r.dtype).split(".")[-1], list(r.shape), r.double().numpy().tolist()
    return tuple(r)


@pytest.mark.parametrize("call", ACCEPTED)
def test_fuzzer_findings_return_what_torch_returns(call):
    def run(m):
        scope = {"m": m, "F": m.nn.functional}
        exec(call, scope)
        return _values(scope["r"])
    got, want = run(cb), run(torch)
    if "linspace" in call:  # linspace's last bits follow torch's vector width: within an ulp or so
        assert got[:2] == want[:2] and np.allclose(got[2], want[2], rtol=1e-6, atol=0), call
    else:
        assert got == want, call


# A 0-d tensor has one implicit dim (0 or -1): reductions over it return the value, shape ops that need
# a real dim raise torch's error. Each raised a Rust panic before.
ZERO_D = [
    "m.nanmean(x, 0)", "m.std_mean(x, 0)", "m.var_mean(x, -1)", "m.logcumsumexp(x, 0)", "(x > 1).sum(0)",
    "m.amax(x, 0)", "m.all(x, dim=0)", "m.aminmax(x, dim=0)", "m.logsumexp(x, 0)",
    "F.normalize(x, dim=0)", "F.cosine_similarity(x, x, dim=0)",
    "x.narrow(0, 0, 1)", "x.roll(1, 0)", "x.chunk(1, 0)", "x.split(1, 0)", "x.unbind(0)",
    # found by conformance/opinfo.py: a 1-d index over a 0-d input
    "m.gather(x, 0, m.tensor([0]))", "x.gather(-1, m.tensor([0, 0]))", "m.gather(x, 0, m.tensor([1]))",
    "x.scatter(0, m.tensor([0]), 3.0)", "x.scatter_add(0, m.tensor([0]), m.tensor([2.0]))",
]


@pytest.mark.parametrize("call", ZERO_D)
def test_zero_d_tensors_with_a_dim_behave_as_torch(call):
    def run(m):
        scope = {"m": m, "F": m.nn.functional, "x": m.tensor(1.5)}
        try:
            return _values(eval(call, scope))
        except Exception as e:  # noqa: BLE001 - the type is what is compared
            return type(e)
    want, got = run(torch), run(cb)
    if isinstance(want, type):
        assert isinstance(got, type) and issubclass(got, want), (call, got, want)
    else:
        assert repr(got) == repr(want), call  # repr: NaN equals NaN


@pytest.mark.parametrize("dtype,value", [("int64", float("nan")), ("int64", float("inf")), ("int64", 3.7), ("uint8", 300),
                                         ("uint8", -255), ("int8", 128), ("int32", 2**31), ("bool", float("nan")),
                                         ("float32", 1e300), ("float16", 70000.0), ("float16", float("-inf"))])
def test_fill_takes_what_the_dtype_holds_as_torch(dtype, value):
    def run(m):
        try:
            return repr(m.zeros(2, dtype=getattr(m, dtype)).fill_(value).tolist())
        except RuntimeError as e:
            return str(e)
    assert run(cb) == run(torch)
