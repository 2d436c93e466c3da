"""Real concurrency: several Python threads run candle_bind at once (the native module releases the
GIL around its heavy kernels, and our intra-op pool is shared by all of them). Every concurrent
result must equal, within 1e-6, the serial result computed beforehand for the same input:
shared models forward from 4 threads, in-place writes from 4 threads, `set_num_threads` changed
while others compute, and shape errors in one thread while the others work. Also: heavy kernels
really let other Python threads run, grad mode is per thread (as torch's), and an in-place write
into a tensor that another thread's kernel is reading never hangs. Every concurrent part runs under
a watchdog (threads joined with a timeout; a stuck thread fails the test with its stack, and a hard
faulthandler deadline ends the process if even the main thread cannot run; the write-vs-read cases,
which could freeze the interpreter, run in subprocesses)."""

import faulthandler
import os
import subprocess
import sys
import threading
import time
import traceback

import numpy as np
import pytest
import torch

import candle_bind as cb
from candle_bind import nn
import candle_bind.nn.functional as F
from conftest import to_cb

tnn = torch.nn

N_THREADS = 4
WATCHDOG_S = 120.0
# Concurrent results against the serial ones: "bit-for-bit or within 1e-6". A kernel may split its
# work differently when the pool is busy or sized differently, which may move the last bit.
EXACT_TOL = 1e-6


# ------------------------------------------------------------------------------------------ harness
def run_concurrently(fns, timeout=WATCHDOG_S):
    """Runs each fn on its own thread, all released at once by a barrier; joins them with a shared
    deadline. Fails with every stuck thread's stack if any is still running at the deadline, else
    with every thread's traceback if any raised. Returns the fns' results in order."""
    n = len(fns)
    barrier = threading.Barrier(n)
    results, errors = [None] * n, [None] * n

    def wrap(i, fn):
        try:
            barrier.wait(timeout)
            results[i] = fn()
        except BaseException:  # noqa: BLE001 - reported below, whatever it is
            errors[i] = traceback.format_exc()

    threads = [threading.Thread(target=wrap, args=(i, fn), name=f"cb-test-{i}", daemon=True) for i, fn in enumerate(fns)]
    # Backstop: if a thread hangs holding the GIL, the joins below never time out; this C-level
    # timer dumps every thread's stack and ends the process instead of hanging CI.
    faulthandler.dump_traceback_later(timeout + 60, exit=True)
    try:
        for t in threads:
            t.start()
        deadline = time.monotonic() + timeout
        for t in threads:
            t.join(max(0.0, deadline - time.monotonic()))
    finally:
        faulthandler.cancel_dump_traceback_later()
    stuck = [t for t in threads if t.is_alive()]
    if stuck:
        frames = sys._current_frames()
        stacks = "\n".join(f"--- {t.name}:\n" + "".join(traceback.format_stack(frames[t.ident]))
                           for t in stuck if t.ident in frames)
        pytest.fail(f"{len(stuck)} of {n} threads still running after {timeout:.0f} s (deadlock or hang): "
                    f"{[t.name for t in stuck]}\n{stacks}", pytrace=False)
    failed = [(i, e) for i, e in enumerate(errors) if e is not None]
    if failed:
        pytest.fail(f"{len(failed)} of {n} threads failed:\n" + "\n".join(f"--- thread {i}:\n{e}" for i, e in failed),
                    pytrace=False)
    return results


def arrays(out):
    """A forward's output (a tensor or nested tuples of them) as a flat list of numpy copies."""
    if isinstance(out, (tuple, list)):
        return [a for o in out for a in arrays(o)]
    return [np.array(out.numpy(), copy=True)]


def check_same(got, ref, what):
    assert len(got) == len(ref), what
    for k, (g, r) in enumerate(zip(got, ref)):
        assert g.shape == r.shape and g.dtype == r.dtype, (what, k, g.shape, r.shape, g.dtype, r.dtype)
        if not np.array_equal(g, r):
            diff = float(np.max(np.abs(g.astype(np.float64) - r)))
            assert np.allclose(g, r, rtol=EXACT_TOL, atol=EXACT_TOL), \
                f"{what}, output {k}: concurrent result differs from the serial one (max abs diff {diff:.3g})"


def _torch_input(shape, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=g)


# ------------------------------------------------------------------------------------------ models
class Workload:
    """A shared model (or function), one input per thread, the serial result of each."""

    def __init__(self, name, ours, make_input):
        self.name, self.ours = name, ours
        self.torch_inputs = [make_input(1000 * hash_name(name) + tid) for tid in range(N_THREADS)]
        self.inputs = [tuple(to_cb(x) for x in xs) for xs in self.torch_inputs]
        self.serial = [arrays(self.ours(*xs)) for xs in self.inputs]

    def run(self, tid):
        return arrays(self.ours(*self.inputs[tid]))


def hash_name(name):
    return sum(map(ord, name))


def _copy(t_mod, c_mod):
    res = c_mod.load_state_dict(t_mod.state_dict())
    assert res.missing_keys == [] and res.unexpected_keys == []
    t_mod.eval()
    c_mod.eval()
    return c_mod


def _mlp(m):
    return m.Sequential(m.Linear(512, 512), m.GELU(), m.LayerNorm(512), m.Linear(512, 256))


def _cnn(m):
    # 16 and 32 channels 3x3 stride 1: the Winograd path (with its shared filter cache); 5x5 stride 2:
    # im2col; 1x1: the single-gemm path.
    return m.Sequential(m.Conv2d(16, 32, 3, padding=1), m.BatchNorm2d(32), m.ReLU(), m.MaxPool2d(2),
                        m.Conv2d(32, 32, 3, padding=1), m.ReLU(), m.Conv2d(32, 16, 5, stride=2, padding=2),
                        m.ReLU(), m.MaxPool2d(2), m.Conv2d(16, 8, 1))


def _build_workloads():
    torch.manual_seed(0)
    out = {}
    t = _mlp(tnn)
    out["mlp"] = (t, _copy(t, _mlp(nn)), lambda s: (_torch_input((64, 512), s),))
    t = _cnn(tnn)
    with torch.no_grad():
        t[1].running_mean.uniform_(-0.5, 0.5)
        t[1].running_var.uniform_(0.5, 2.0)
        t[1].weight.uniform_(0.5, 1.5)
        t[1].bias.uniform_(-0.5, 0.5)
    out["cnn"] = (t, _copy(t, _cnn(nn)), lambda s: (_torch_input((8, 16, 32, 32), s),))
    t = tnn.LSTM(64, 128, num_layers=2, batch_first=True)
    out["lstm"] = (t, _copy(t, nn.LSTM(64, 128, num_layers=2, batch_first=True)),
                   lambda s: (_torch_input((8, 20, 64), s),))
    kw = dict(d_model=128, nhead=4, dim_feedforward=256, dropout=0.0, batch_first=True)
    t = tnn.TransformerEncoderLayer(**kw)
    out["encoder"] = (t, _copy(t, nn.TransformerEncoderLayer(**kw)), lambda s: (_torch_input((8, 32, 128), s),))
    sdpa_t = lambda q, k, v: tnn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)  # noqa: E731
    sdpa_c = lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True)  # noqa: E731
    out["sdpa"] = (sdpa_t, sdpa_c, lambda s: tuple(_torch_input((8, 4, 64, 32), s + i) for i in range(3)))
    return {name: (t, Workload(name, c, mk)) for name, (t, c, mk) in out.items()}


@pytest.fixture(scope="module")
def workloads():
    built = _build_workloads()
    # The serial results are right (against torch), so the concurrent ones are compared with real values.
    for name, (t, w) in built.items():
        with torch.no_grad():
            ref = arrays(t(*w.torch_inputs[0]))
        for k, (o, r) in enumerate(zip(w.serial[0], ref)):
            np.testing.assert_allclose(o, r, atol=1e-4, rtol=1e-4, err_msg=f"{name} output {k} vs torch")
    return {name: w for name, (t, w) in built.items()}


NAMES = ["mlp", "cnn", "lstm", "encoder", "sdpa"]
ROUNDS = 60  # rounds of all five workloads per thread (mixed test)
SAME_ITERS = 100  # iterations per thread when all threads share one workload


def _worker(workloads, tid, rounds, order=None):
    order = order or NAMES[tid % len(NAMES):] + NAMES[:tid % len(NAMES)]

    def fn():
        for r in range(rounds):
            for name in order:
                w = workloads[name]
                check_same(w.run(tid), w.serial[tid], f"thread {tid} round {r} {name}")
        return rounds
    return fn


def test_shared_models_mixed(workloads):
    """4 threads, each cycling through the five shared models in a different order, own inputs."""
    run_concurrently([_worker(workloads, tid, ROUNDS) for tid in range(N_THREADS)])


@pytest.mark.parametrize("name", NAMES)
def test_shared_model_same(workloads, name):
    """All 4 threads on the same shared model at once (same weights, same caches)."""
    run_concurrently([_worker(workloads, tid, SAME_ITERS, order=[name]) for tid in range(N_THREADS)])


# ------------------------------------------------------------------------------------------ in-place
ROWS, COLS, STEPS = 256, 512, 30


def _inplace_program(x, y, shared, tid, steps=STEPS):
    """In-place writes into x and y (own tensors, or disjoint slices of one base), reading `shared`.
    Written for both torch and candle_bind tensors."""
    for s in range(steps):
        x.add_(shared)
        x.mul_(0.5 + 0.01 * tid)
        x[s % x.shape[0]] = float(s - tid)
        x[:, (7 * s + tid) % x.shape[1]] = shared[: x.shape[0], s % shared.shape[1]]
        x[1:5, 100:200] += 1.0
        x.clamp_(-20.0, 20.0)
        y.copy_(x)
        y.mul_(x)
        if s % 5 == tid % 5:
            y.fill_(float(tid))
        x.sub_(y * 1e-3)
    return x, y


def _inplace_inputs(lib):
    g = np.random.default_rng(1234)
    base = [(g.standard_normal((ROWS, COLS), dtype=np.float32), g.standard_normal((ROWS, COLS), dtype=np.float32))
            for _ in range(N_THREADS)]
    shared = g.standard_normal((ROWS, COLS), dtype=np.float32)
    conv = (lambda a: torch.from_numpy(a.copy())) if lib is torch else (lambda a: cb.from_numpy(a))
    return [(conv(a), conv(b)) for a, b in base], conv(shared), shared


@pytest.mark.parametrize("layout", ["own", "slices"])
def test_inplace_concurrent(layout):
    """4 threads write in place (add_, mul_, x[i] = v, x[:, j] = t, slice +=, clamp_, copy_, fill_,
    sub_), each on its own tensors ('own') or on disjoint row blocks of one shared base ('slices'),
    all reading one shared read-only tensor; results equal the serial run, and torch's."""
    ref_pairs, ref_shared, _ = _inplace_inputs(torch)
    for tid, (x, y) in enumerate(ref_pairs):
        _inplace_program(x, y, ref_shared, tid)

    def fresh():
        pairs, shared, shared_np = _inplace_inputs(cb)
        if layout == "slices":
            bx = cb.cat([x for x, _ in pairs])
            by = cb.cat([y for _, y in pairs])
            pairs = [(bx[i * ROWS:(i + 1) * ROWS], by[i * ROWS:(i + 1) * ROWS]) for i in range(N_THREADS)]
            return pairs, shared, shared_np, (bx, by)
        return pairs, shared, shared_np, None

    pairs, shared, _, _ = fresh()
    serial = []
    for tid, (x, y) in enumerate(pairs):
        _inplace_program(x, y, shared, tid)
        serial.append((x.numpy().copy(), y.numpy().copy()))
    for tid, ((x, y), (tx, ty)) in enumerate(zip(serial, ref_pairs)):
        np.testing.assert_allclose(x, tx.numpy(), rtol=1e-5, atol=1e-5, err_msg=f"thread {tid} x vs torch")
        np.testing.assert_allclose(y, ty.numpy(), rtol=1e-5, atol=1e-5, err_msg=f"thread {tid} y vs torch")

    for rep in range(10):
        pairs, shared, shared_np, bases = fresh()

        def job(tid, pairs=pairs, shared=shared):
            def fn():
                x, y = pairs[tid]
                _inplace_program(x, y, shared, tid)
                return x.numpy().copy(), y.numpy().copy()
            return fn

        got = run_concurrently([job(tid) for tid in range(N_THREADS)])
        for tid, ((gx, gy), (sx, sy)) in enumerate(zip(got, serial)):
            np.testing.assert_array_equal(gx, sx, err_msg=f"rep {rep} thread {tid}: x differs from the serial run")
            np.testing.assert_array_equal(gy, sy, err_msg=f"rep {rep} thread {tid}: y differs from the serial run")
        np.testing.assert_array_equal(shared.numpy(), shared_np, err_msg="the shared read-only tensor was written")
        if bases is not None:  # the base saw every slice's writes
            np.testing.assert_array_equal(bases[0].numpy(), np.concatenate([s[0] for s in serial]))
            np.testing.assert_array_equal(bases[1].numpy(), np.concatenate([s[1] for s in serial]))


# ------------------------------------------------------------------------------------------ set_num_threads
def test_set_num_threads_while_computing(workloads):
    """One thread cycles set_num_threads(1..4) as fast as it can while 3 threads run the shared
    models: results stay right, nothing crashes or deadlocks, and the setting sticks."""
    original = cb.get_num_threads()
    workers = N_THREADS - 1
    remaining = [workers]
    lock = threading.Lock()
    stop = threading.Event()

    def compute(tid):
        inner = _worker(workloads, tid, ROUNDS)

        def fn():
            try:
                return inner()
            finally:
                with lock:
                    remaining[0] -= 1
                    if remaining[0] == 0:
                        stop.set()
        return fn

    def setter():
        sets = 0
        while not stop.is_set():
            for k in (1, 2, 3, 4):
                cb.set_num_threads(k)
                got = cb.get_num_threads()
                assert got == k, f"set_num_threads({k}) then get_num_threads() = {got}"
                sets += 1
                time.sleep(0.0005)
        return sets

    try:
        results = run_concurrently([compute(tid) for tid in range(workers)] + [setter])
    finally:
        stop.set()
        cb.set_num_threads(original)
    assert results[-1] >= 8, f"the setter ran only {results[-1]} times"
    assert cb.get_num_threads() == original
    # And the models still give their serial results afterwards, on the restored pool.
    for name in NAMES:
        check_same(workloads[name].run(0), workloads[name].serial[0], f"{name} after the cycling")


# ------------------------------------------------------------------------------------------ errors
def _bad_calls(workloads):
    """Calls that raise a shape error, each with torch's exception type and message fragment."""
    mlp, cnn = workloads["mlp"].ours, workloads["cnn"].ours
    lstm, enc = workloads["lstm"].ours, workloads["encoder"].ours
    big_a, big_b = cb.randn(64, 512), cb.randn(500, 256)
    return [
        ("mlp", lambda: mlp(cb.randn(64, 500)), RuntimeError, "mat1 and mat2 shapes cannot be multiplied"),
        ("matmul", lambda: big_a @ big_b, RuntimeError, "mat1 and mat2 shapes cannot be multiplied"),
        ("cnn", lambda: cnn(cb.randn(8, 15, 32, 32)), RuntimeError, "expected input[8, 15, 32, 32] to have 16 channels"),
        ("lstm", lambda: lstm(cb.randn(8, 20, 60)), RuntimeError, "input.size(-1) must be equal to input_size"),
        ("encoder", lambda: enc(cb.randn(8, 32, 120)), RuntimeError, ""),
        ("sdpa", lambda: F.scaled_dot_product_attention(cb.randn(8, 4, 64, 32), cb.randn(8, 4, 64, 16),
                                                        cb.randn(8, 4, 64, 32)), RuntimeError, ""),
        ("add", lambda: big_a + cb.randn(64, 500), RuntimeError, "must match the size of tensor b (500)"),
        ("cat", lambda: cb.cat([big_a, cb.randn(64, 500)]), RuntimeError, "Sizes of tensors must match"),
    ]


def test_exception_in_one_thread_does_not_disturb_others(workloads):
    """Thread 3 alternates shape errors (in every shared model, matmul, add, cat) with correct calls;
    threads 0-2 run the shared models meanwhile. Each error has torch's type and message, the
    erroring thread's next calls are right, and the others never see a wrong result."""
    bad = _bad_calls(workloads)

    def erroring():
        raised = 0
        for r in range(ROUNDS):
            for i, (what, call, exc, msg) in enumerate(bad):
                try:
                    call()
                except exc as e:
                    assert msg in str(e), f"{what}: unexpected message {e!r}"
                    raised += 1
                else:
                    raise AssertionError(f"{what}: the bad call did not raise")
                name = NAMES[(r + i) % len(NAMES)]
                w = workloads[name]
                check_same(w.run(3), w.serial[3], f"erroring thread round {r} {name} after {what}")
        return raised

    results = run_concurrently([_worker(workloads, tid, ROUNDS) for tid in range(N_THREADS - 1)] + [erroring])
    assert results[-1] == ROUNDS * len(bad)


# ------------------------------------------------------------------------------------------ GIL
def _gil_fraction(call, reps=3):
    """How much a pure-Python counting thread progresses while `call` runs, as a fraction of what it
    does in the same time while the main thread sleeps (GIL free). A kernel that keeps the GIL gives
    the counter one switch interval (5 ms) per call at most: a fraction near 0."""
    counter = [0]
    stop = threading.Event()

    def count():
        while not stop.is_set():
            counter[0] += 1

    t = threading.Thread(target=count, daemon=True)
    t.start()
    best = 0.0
    try:
        for _ in range(reps):
            c0, t0 = counter[0], time.perf_counter()
            time.sleep(0.15)
            free_rate = (counter[0] - c0) / (time.perf_counter() - t0)
            c0, t0 = counter[0], time.perf_counter()
            call()
            busy = (counter[0] - c0) / (time.perf_counter() - t0)
            best = max(best, busy / max(free_rate, 1.0))
            if best > 0.5:
                break
    finally:
        stop.set()
        t.join(10)
    return best


@pytest.mark.skipif(os.environ.get("CANDLE_BIND_GENERIC") == "1",
                    reason="times our CPU kernels; the generic test mode runs Candle's ops instead")
def test_heavy_kernels_release_the_gil():
    """matmul, conv2d, SDPA and LSTM let another Python thread run while they compute (the
    concurrency the tests above rely on). One kernel thread, so a core is free for the counter; each
    call takes ~70-250 ms here, so a kernel holding the GIL would score under ~0.07."""
    g = np.random.default_rng(0)
    a = cb.from_numpy(g.standard_normal((1536, 1536), dtype=np.float32))
    conv = nn.Conv2d(128, 128, 3, padding=1)
    img = cb.from_numpy(g.standard_normal((4, 128, 64, 64), dtype=np.float32))
    q = cb.from_numpy(g.standard_normal((8, 8, 512, 64), dtype=np.float32))
    lstm = nn.LSTM(256, 256, batch_first=True)
    seq = cb.from_numpy(g.standard_normal((8, 400, 256), dtype=np.float32))
    calls = {
        "matmul": lambda: a @ a,
        "conv2d": lambda: conv(img),
        "sdpa": lambda: F.scaled_dot_product_attention(q, q, q),
        "lstm": lambda: lstm(seq),
    }
    # The harness itself: a builtin that holds the GIL for ~100 ms must score low.
    control = _gil_fraction(lambda: sum(range(4_000_000)), reps=1)
    assert control < 0.25, f"the measurement cannot see a GIL holder (control scored {control:.3f})"
    original = cb.get_num_threads()
    cb.set_num_threads(1)
    try:
        fractions = {k: _gil_fraction(c) for k, c in calls.items()}
    finally:
        cb.set_num_threads(original)
    held = {k: round(f, 3) for k, f in fractions.items() if f < 0.25}
    assert not held, f"kernels that seem to hold the GIL (counter progress fraction while running): {held}; all: {fractions}"


# ------------------------------------------------------------------------------------------ grad mode
# torch keeps grad mode per thread (a new thread starts enabled); code that serves requests from a
# thread pool relies on it: one request's `with torch.no_grad():` must not change another's mode.
LIBS = {"torch": torch, "candle_bind": cb}


@pytest.mark.parametrize("lib", list(LIBS))
def test_grad_mode_is_per_thread(lib):
    """Thread A enters no_grad, then thread B does, then A leaves, then B leaves (forced order):
    meanwhile a third thread and the main thread keep grad enabled, and every thread's mode is its
    own throughout and enabled at the end, as in torch."""
    L = LIBS[lib]
    steps = [threading.Event() for _ in range(5)]
    seen = {}

    def a():
        with L.no_grad():
            seen["a inside"] = L.is_grad_enabled()
            steps[0].set()
            steps[1].wait(10)
        seen["a after"] = L.is_grad_enabled()
        steps[2].set()

    def b():
        steps[0].wait(10)
        seen["b before"] = L.is_grad_enabled()
        with L.no_grad():
            steps[1].set()
            steps[2].wait(10)
            seen["b inside"] = L.is_grad_enabled()
        seen["b after"] = L.is_grad_enabled()
        steps[3].set()

    def c():
        steps[0].wait(10)
        seen["c while a is inside"] = L.is_grad_enabled()
        steps[3].wait(10)
        seen["c at the end"] = L.is_grad_enabled()

    run_concurrently([a, b, c], timeout=30)
    seen["main at the end"] = L.is_grad_enabled()
    try:
        assert seen == {"a inside": False, "a after": True, "b before": True, "b inside": False, "b after": True,
                        "c while a is inside": True, "c at the end": True, "main at the end": True}, seen
    finally:
        L.set_grad_enabled(True)  # do not leave a wrong global mode to the tests after this one


@pytest.mark.parametrize("lib", list(LIBS))
def test_no_grad_decorator_concurrent_calls(lib):
    """One `@no_grad()`-decorated function called from two threads whose own modes differ (A with
    grad disabled, B enabled), calls overlapping (A enters, B enters, A leaves, B leaves): each thread
    gets its own mode back, as in torch (which enters a fresh context per call)."""
    L = LIBS[lib]
    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()
    seen = {}

    @L.no_grad()
    def f(me):
        seen[f"{me} inside"] = L.is_grad_enabled()
        if me == "a":
            a_in.set()
            b_in.wait(10)
        else:
            b_in.set()
            a_out.wait(10)

    def a():
        L.set_grad_enabled(False)
        try:
            f("a")
            seen["a after"] = L.is_grad_enabled()
        finally:
            a_out.set()
            L.set_grad_enabled(True)

    def b():
        a_in.wait(10)
        f("b")
        seen["b after"] = L.is_grad_enabled()

    try:
        run_concurrently([a, b], timeout=30)
        assert seen == {"a inside": False, "b inside": False, "a after": False, "b after": True}, seen
    finally:
        L.set_grad_enabled(True)



@pytest.mark.parametrize("lib", list(LIBS))
def test_inference_mode_is_per_thread(lib):
    """Inside `inference_mode()` this thread reports it (and grad disabled); another thread, at the
    same moment, is in neither, as in torch."""
    L = LIBS[lib]
    inside, checked = threading.Event(), threading.Event()
    seen = {}

    def a():
        with L.inference_mode():
            seen["a inference"] = L.is_inference_mode_enabled()
            seen["a grad"] = L.is_grad_enabled()
            inside.set()
            checked.wait(10)
        seen["a inference after"] = L.is_inference_mode_enabled()

    def b():
        inside.wait(10)
        seen["b inference"] = L.is_inference_mode_enabled()
        seen["b grad"] = L.is_grad_enabled()
        checked.set()

    try:
        run_concurrently([a, b], timeout=30)
        assert seen == {"a inference": True, "a grad": False, "a inference after": False, "b inference": False,
                        "b grad": True}, seen
    finally:
        L.set_grad_enabled(True)

# ------------------------------------------------------------------------------------------ write vs read
# One thread writes in place (mul_(1.0): the same values, so results stay defined) into a tensor that
# another thread's kernel is reading: a weight being updated while a model serves, a shared buffer.
# torch races on the values but never hangs. Here a hang would freeze the whole interpreter (the
# GIL included), so each case runs in its own subprocess, all started at once, with faulthandler
# dumping the child's stacks and ending it after CHILD_WATCHDOG_S.
CHILD_WATCHDOG_S = 20
CHILD_RUN_S = 3.0
_WRITE_READ_CHILD = r"""
import faulthandler, sys, threading, time
faulthandler.dump_traceback_later(float(sys.argv[2]), exit=True)
import numpy as np
import candle_bind as torch
from candle_bind import nn
import candle_bind.nn.functional as F

torch.manual_seed(0)
conv, lin, ln = nn.Conv2d(64, 64, 3, padding=1), nn.Linear(512, 512), nn.LayerNorm(512)
lstm = nn.LSTM(64, 128, batch_first=True)
img, x, seq, q = torch.randn(8, 64, 32, 32), torch.randn(64, 512), torch.randn(8, 20, 64), torch.randn(8, 4, 64, 32)
cases = {
    "conv2d/weight": (lambda: conv(img), conv.weight), "conv2d/input": (lambda: conv(img), img),
    "linear/weight": (lambda: lin(x), lin.weight), "layer_norm": (lambda: ln(x), x), "gelu": (lambda: F.gelu(x), x),
    "softmax": (lambda: x.softmax(-1), x), "sum": (lambda: x.sum(-1), x), "add": (lambda: x + x, x),
    "max_pool2d": (lambda: F.max_pool2d(img, 2), img), "sdpa": (lambda: F.scaled_dot_product_attention(q, q, q), q),
    "lstm/weight": (lambda: lstm(seq)[0], lstm.weight_hh_l0),
}
call, target = cases[sys.argv[1]]
ref = call().numpy().copy()
bad, done, counts = [], threading.Event(), [0, 0]
def read():
    # By time, not count: a hang needs the writer to block on the tensor's lock exactly while the
    # reader's kernel ends, so fast kernels need many tries.
    end = time.monotonic() + float(sys.argv[3])
    try:
        while time.monotonic() < end or counts[0] < 20:
            out = call().numpy()
            counts[0] += 1
            if not np.array_equal(out, ref):
                bad.append(float(np.abs(out - ref).max()))
    finally:
        done.set()
def write():
    while not done.is_set():
        target.mul_(1.0)
        counts[1] += 1
ts = [threading.Thread(target=read), threading.Thread(target=write)]
for t in ts:
    t.start()
for t in ts:
    t.join()
print("OK" if not bad else f"WRONG {len(bad)} of {counts[0]} results, max diff {max(bad)}", counts)
"""
WRITE_READ_CASES = ["conv2d/weight", "conv2d/input", "linear/weight", "layer_norm", "gelu", "softmax", "sum", "add",
                    "max_pool2d", "sdpa", "lstm/weight"]


@pytest.fixture(scope="module")
def write_read_children():
    procs = {k: subprocess.Popen([sys.executable, "-c", _WRITE_READ_CHILD, k, str(CHILD_WATCHDOG_S), str(CHILD_RUN_S)],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for k in WRITE_READ_CASES}
    yield procs
    for p in procs.values():
        if p.poll() is None:
            p.kill()
            p.communicate()


@pytest.mark.parametrize("case", WRITE_READ_CASES)
def test_inplace_write_while_another_thread_reads(write_read_children, case):
    """Thread A runs a kernel on a tensor for 3 s while thread B writes that tensor in place
    (mul_(1.0)) as fast as it can: no deadlock, and A's results never change."""
    p = write_read_children[case]
    try:
        out, err = p.communicate(timeout=CHILD_WATCHDOG_S + 30)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
    if "Timeout" in err:
        pytest.fail(f"{case}: deadlock: the reader and the writer were still running after {CHILD_WATCHDOG_S} s; "
                    f"stacks:\n{err[-3000:]}", pytrace=False)
    assert p.returncode == 0, err[-3000:]
    assert out.startswith("OK"), out
