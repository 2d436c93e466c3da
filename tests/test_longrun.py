"""Long runs: no leaks, bounded memory. Resident memory is read from /proc/self/status (Linux only):
VmRSS for the current size, VmHWM for the peak.

- 10,000 forward passes of a small model, and 10,000 save/load cycles of a small state_dict (torch's
  zip format through BytesIO, safetensors bytes, safetensors files): RSS after a warm-up of 500 must
  stay within a few MiB at the end. glibc (and Python's allocator) keep freed memory, and candle_bind
  asks glibc to keep up to 256 MB of it, so growth is measured from after the warm-up, never from zero.
- Loading a ~200 MB safetensors file in a fresh subprocess (clean baseline): peak RSS over the
  baseline, every tensor touched, must stay within 1.1x the file size, as it does for the
  `safetensors` package on torch (checked here too, as a control of the measurement).
"""

import gc
import io
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import candle_bind as cb
from candle_bind import nn
import candle_bind.safetensors as cst

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux") or not os.path.exists("/proc/self/status"),
                                reason="reads RSS from /proc/self/status (Linux only)")

MIB = 1 << 20
WARMUP = 500
TOTAL = 10_000
# Allowed RSS growth between the end of the warm-up and the end of the run. What we see on a steady
# loop is 0-1.5 MiB of allocator noise (arenas and heap top growing in steps, then plateauing: 40k
# zip-format cycles plateau at +1.5 MiB). A leak of one 8x64 float32 tensor per pass (2 KiB) would
# add ~19 MiB over the 9,500 measured passes, a leaked state_dict per cycle (33 KiB) ~300 MiB, so
# 8 MiB tells any leaked tensor buffer from allocator noise with a margin either way.
MAX_GROWTH = 8 * MIB
# Live Python objects (gc-tracked) may not pile up either: a leaked dict, list or frame per pass
# would add 9,500 of them.
MAX_OBJECT_GROWTH = 1000


def status(key: str) -> int:
    """A /proc/self/status size field (VmRSS, VmHWM, RssAnon, RssFile, ...) in bytes."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    raise KeyError(key)


def live_objects() -> int:
    gc.collect()
    return len(gc.get_objects())


def run_and_measure(step, total=TOTAL, warmup=WARMUP):
    """Runs step(i) `total` times; returns (RSS growth from after the warm-up to the end in bytes,
    gc-tracked object growth over the same span, the RSS samples taken along the way)."""
    samples = []
    for i in range(warmup):
        step(i)
    rss0, obj0 = status("VmRSS"), live_objects()
    for i in range(warmup, total):
        step(i)
        if (i + 1) % 2000 == 0:
            samples.append((i + 1, status("VmRSS")))
    return status("VmRSS") - rss0, live_objects() - obj0, samples


def fmt(samples):
    return ", ".join(f"{i}: {r / MIB:.1f} MiB" for i, r in samples)


def small_model():
    cb.manual_seed(0)
    return nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 64)).eval()


def test_forward_passes_do_not_leak():
    """10,000 forward passes of Linear(64,64)+ReLU+Linear on batch 8, each with a fresh input from
    numpy and its result read back (.numpy(), .item()), as a serving loop does."""
    m = small_model()
    g = np.random.default_rng(0)
    xs = [g.standard_normal((8, 64), dtype=np.float32) for _ in range(16)]
    w1, b1 = m[0].weight.numpy().copy(), m[0].bias.numpy().copy()
    w2, b2 = m[2].weight.numpy().copy(), m[2].bias.numpy().copy()
    expect = [np.maximum(x @ w1.T + b1, 0) @ w2.T + b2 for x in xs]
    sums = [0.0] * len(xs)

    def step(i):
        k = i % len(xs)
        with cb.no_grad():
            y = m(cb.from_numpy(xs[k]))
        out = y.numpy()
        sums[k] = y.sum().item()
        if i % 1000 == 0:
            np.testing.assert_allclose(out, expect[k], rtol=1e-5, atol=1e-5)

    growth, objects, samples = run_and_measure(step)
    print(f"\nforward x{TOTAL}: RSS growth after warm-up {growth / MIB:.2f} MiB, objects {objects:+d} ({fmt(samples)})")
    assert growth <= MAX_GROWTH, f"RSS grew {growth / MIB:.2f} MiB over {TOTAL - WARMUP} passes ({fmt(samples)})"
    assert objects <= MAX_OBJECT_GROWTH, f"{objects} more live Python objects after {TOTAL - WARMUP} passes"
    np.testing.assert_allclose(sums, [e.sum() for e in expect], rtol=1e-4, atol=1e-3)


def _pt_cycle(sd):
    buf = io.BytesIO()
    cb.save(sd, buf)
    buf.seek(0)
    return cb.load(buf)


def _st_bytes_cycle(sd):
    return cst.load(cst.save(sd))


@pytest.mark.parametrize("fmt_name", ["pt-bytesio", "safetensors-bytes", "safetensors-file"])
def test_save_load_cycles_do_not_leak(fmt_name, tmp_path):
    """10,000 cycles of state_dict -> save -> load -> load_state_dict, in torch's zip format through
    BytesIO (candle_bind.save/load), as safetensors bytes (candle_bind.safetensors.save/load) and as
    a safetensors file (save_file/load_file, the `safetensors.torch` API)."""
    m = small_model()
    sd = m.state_dict()
    ref = {k: v.numpy().copy() for k, v in sd.items()}
    # On tmpfs where there is one: rewriting a file 10,000 times on a disk-backed ext4 costs ~2 ms a
    # write here (truncation, discard), which would time the disk, not us.
    shm = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
    path = os.path.join(shm, f"candle_bind_longrun_{os.getpid()}.safetensors") if shm else str(tmp_path / "m.safetensors")

    def file_cycle(sd):
        cst.save_file(sd, path)
        return cst.load_file(path)

    cycle = {"pt-bytesio": _pt_cycle, "safetensors-bytes": _st_bytes_cycle, "safetensors-file": file_cycle}[fmt_name]

    def step(i):
        loaded = cycle(m.state_dict())
        res = m.load_state_dict(loaded)
        assert res.missing_keys == [] and res.unexpected_keys == []
        if i % 1000 == 0:
            for k, v in loaded.items():
                np.testing.assert_array_equal(v.numpy(), ref[k], err_msg=f"cycle {i}: {k}")

    try:
        growth, objects, samples = run_and_measure(step)
    finally:
        if os.path.exists(path):
            os.remove(path)
    print(f"\n{fmt_name} x{TOTAL}: RSS growth after warm-up {growth / MIB:.2f} MiB, objects {objects:+d} ({fmt(samples)})")
    assert growth <= MAX_GROWTH, f"RSS grew {growth / MIB:.2f} MiB over {TOTAL - WARMUP} cycles ({fmt(samples)})"
    assert objects <= MAX_OBJECT_GROWTH, f"{objects} more live Python objects after {TOTAL - WARMUP} cycles"
    for k, v in m.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), ref[k], err_msg=k)


# ------------------------------------------------------------------------------------------ peak RSS
N_BIG, BIG_SHAPE = 8, (2560, 2560)  # 8 float32 tensors of 25 MiB: a 200 MiB file
MAX_PEAK_RATIO = 1.1


@pytest.fixture(scope="module")
def big_file(tmp_path_factory):
    from safetensors.numpy import save_file

    g = np.random.default_rng(0)
    tensors = {f"layer{i}.weight": g.standard_normal(BIG_SHAPE, dtype=np.float32) for i in range(N_BIG)}
    path = tmp_path_factory.mktemp("big") / "big.safetensors"
    save_file(tensors, str(path))
    sums = {k: float(v.sum(dtype=np.float64)) for k, v in tensors.items()}
    del tensors
    return str(path), sums


# Runs in a fresh interpreter: imports, prepares what must exist before loading (the model for
# load_model), hands glibc's kept free memory back (malloc_trim) so the baseline has no free heap
# for the loader to reuse unseen, resets the peak (writing 5 to /proc/self/clear_refs sets VmHWM to
# the current RSS; where that is refused, VmHWM so far stands), then loads, touches every tensor
# (a float32 sum, which allocates nothing the size of a tensor), and reports the peak.
_CHILD = textwrap.dedent(r"""
    import ctypes, json, os, sys
    path, mode = sys.argv[1], sys.argv[2]

    def status(key):
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024

    if mode == "torch-reference":
        import torch
        from safetensors.torch import load_file
    else:
        import candle_bind as cb
        from candle_bind import nn
        from candle_bind.safetensors import load_file, load_model, safe_open
    model = None
    if mode == "load_model":
        model = nn.ModuleDict({f"layer{i}": nn.Linear(2560, 2560, bias=False) for i in range(8)})
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except OSError:
        pass
    base = status("VmRSS")
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        reset = True
    except OSError:
        reset = False
    sums = {}
    if mode in ("load_file", "torch-reference"):
        tensors = load_file(path)
        sums = {k: float(v.sum().item()) for k, v in tensors.items()}
        after = {k: status(k) for k in ("RssAnon", "RssFile")}
    elif mode == "safe_open":
        tensors = {}
        with safe_open(path, framework="pt") as f:
            for k in f.keys():
                tensors[k] = f.get_tensor(k)
                sums[k] = float(tensors[k].sum().item())
            after = {k: status(k) for k in ("RssAnon", "RssFile")}
    elif mode == "load_model":
        load_model(model, path)
        sums = {k: float(v.sum().item()) for k, v in model.state_dict().items()}
        after = {k: status(k) for k in ("RssAnon", "RssFile")}
    peak = status("VmHWM")
    print(json.dumps(dict(base=base, peak=peak, reset=reset, sums=sums, after=after, rss=status("VmRSS"))))
""")


@pytest.mark.parametrize("mode", ["torch-reference", "load_file", "safe_open", "load_model"])
def test_safetensors_load_peak_rss(big_file, mode):
    """Peak RSS of loading a 200 MiB safetensors file, over a clean baseline, is at most 1.1x the file
    size: load_file (what `from safetensors.torch import load_file` is under the shim), safe_open +
    get_tensor for every name, and load_model into a module built before the baseline.
    'torch-reference' runs the same measurement on the safetensors package with real torch."""
    path, sums = big_file
    size = os.path.getsize(path)
    proc = subprocess.run([sys.executable, "-c", _CHILD, path, mode], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-4000:]
    r = json.loads(proc.stdout.strip().splitlines()[-1])
    got = r["sums"]
    assert set(got) == set(sums)
    for k, v in sums.items():
        # float32 sums of 6.5M values (no temporaries: a float64 copy would add to the peak)
        assert got[k] == pytest.approx(v, rel=1e-4, abs=0.5), k
    ratio = (r["peak"] - r["base"]) / size
    detail = (f"{mode}: peak {r['peak'] / MIB:.0f} MiB - baseline {r['base'] / MIB:.0f} MiB = "
              f"{(r['peak'] - r['base']) / MIB:.0f} MiB for a {size / MIB:.0f} MiB file: {ratio:.3f}x "
              f"(peak reset: {r['reset']}; after the load, tensors alive: RssAnon {r['after']['RssAnon'] / MIB:.0f} MiB, "
              f"RssFile {r['after']['RssFile'] / MIB:.0f} MiB)")
    print("\n" + detail)
    assert ratio <= MAX_PEAK_RATIO, detail
