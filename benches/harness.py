"""What every benchmark script shares: --threads, best-of timing, one ratio row per case."""

import argparse
import os
import platform
import timeit


def cpu_line():
    """The CPU, the ISA level each side's kernels run (candle_bind's honours CANDLE_BIND_ISA, torch's
    ATEN_CPU_CAPABILITY) and the load: printed with every table."""
    import torch

    import candle_bind as cb

    try:
        info = open("/proc/cpuinfo").read()
    except OSError:
        info = ""
    names = [ln.split(":", 1)[1].strip() for ln in info.splitlines() if ln.startswith("model name")]
    model = names[0] if names else platform.processor()
    return (f"cpu: {model}, {os.cpu_count()} cores, ISA: candle_bind {cb.backends.cpu.get_cpu_capability()}, "
            f"torch {torch.backends.cpu.get_cpu_capability()}; load average {os.getloadavg()[0]:.2f}")


def setup(doc: str):
    """Parses --threads, imports torch and candle_bind and sets both thread counts; returns them."""
    p = argparse.ArgumentParser(description=doc)
    p.add_argument("--threads", type=int, default=None)
    args = p.parse_args()
    import torch

    import candle_bind as cb

    if args.threads:
        torch.set_num_threads(args.threads)
        cb.set_num_threads(args.threads)
    print(cpu_line())
    print(f"threads: torch {torch.get_num_threads()}, candle_bind {cb.get_num_threads()}")
    return torch, cb


def settle(fn, seconds=0.25):
    """Calls `fn` for `seconds` before timing. Both sides' idle workers spin after a parallel op
    (torch's OpenMP threads for tens of milliseconds), and on a machine with few cores the other
    side's spinning workers would otherwise take the cores this side's timing needs."""
    import time

    end = time.perf_counter() + seconds
    fn()
    while time.perf_counter() < end:
        fn()


def best(fn, number, repeat=5):
    """Seconds per call: the best of `repeat` repeats of `number` calls, after `settle`."""
    settle(fn)
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number


def header(label: str, width: int = 46, unit: str = "µs"):
    print(f"{label:<{width}} {'torch ' + unit:>10} {'cb ' + unit:>10} {'ratio':>7}")


def row(name, t_fn, c_fn, number, width: int = 46, rounds: int = 3):
    """Times torch's and candle_bind's version of one case and prints the ratio cb / torch. The sides
    take turns for `rounds` rounds (best of each side over all): a shared host's slow spells, which
    last seconds, then fall on both sides alike instead of on whichever happened to be timing."""
    t = c = float("inf")
    for _ in range(rounds):
        t, c = min(t, best(t_fn, number, 3)), min(c, best(c_fn, number, 3))
    print(f"{name:<{width}} {t * 1e6:>10.2f} {c * 1e6:>10.2f} {c / t:>7.2f}")


def run_swapped(script, side, args, label=""):
    """Runs `script` as a worker with `args`, on torch (side "torch": plain python) or on candle_bind
    (side "cb": under `python -m candle_bind run`), each side in its own process. The worker prints one
    JSON line last; lines before it are passed through. Returns the parsed JSON, or None (and says
    why) when the worker failed."""
    import json
    import subprocess
    import sys

    cmd = [sys.executable, *(["-m", "candle_bind", "run"] if side == "cb" else []), os.path.abspath(script), *args]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        print(f"{label} [{side}] failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
        return None
    *rest, last = proc.stdout.strip().splitlines()
    if rest:
        print("\n".join(rest))
    return json.loads(last)


def print_profile(name, fn, top=25):
    """cProfile of one call of `fn`: the `top` functions by own time."""
    import cProfile
    import pstats

    prof = cProfile.Profile()
    prof.runcall(fn)
    stats = pstats.Stats(prof)
    print(f"\ncProfile of one {name} call: {stats.total_calls} calls, {stats.total_tt * 1e3:.1f} ms;"
          f" top {top} by own time")
    print(f"{'tottime ms':>10} {'cumtime ms':>10} {'ncalls':>8}  function")
    for (file, line, fn_name), (_, nc, tt, ct, _) in sorted(stats.stats.items(), key=lambda kv: -kv[1][2])[:top]:
        for marker in ("site-packages/", "python/"):
            file = file.split(marker, 1)[-1]
        print(f"{tt * 1e3:>10.1f} {ct * 1e3:>10.1f} {nc:>8}  {file}:{line}({fn_name})")


def cpu_has_amx() -> bool:
    try:
        return " amx_int8" in open("/proc/cpuinfo").read()
    except OSError:
        return False


AMX_NOTE = ("llama.cpp: extra weight buffers off (its AMX matmul faults on this CPU: ggml-org/llama.cpp#20824, "
            "fix pending in #26954); it runs the ggml dot products it runs on CPUs without AMX")


def llama_cpp():
    """Imports llama_cpp; on a CPU with AMX, its models load without extra weight buffers (AMX_NOTE)."""
    import llama_cpp

    if cpu_has_amx() and not getattr(llama_cpp, "_amx_off", False):
        default = llama_cpp.llama_cpp.llama_model_default_params

        def params():
            p = default()
            p.use_extra_bufts = False
            return p
        llama_cpp.llama_cpp.llama_model_default_params = llama_cpp.llama_model_default_params = params
        llama_cpp._amx_off = True
    return llama_cpp
