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


def best(fn, number):
    """Seconds per call: the best of 5 repeats of `number` calls, after one warm-up call."""
    fn()
    return min(timeit.repeat(fn, number=number, repeat=5)) / number


def header(label: str, width: int = 46, unit: str = "µs"):
    print(f"{label:<{width}} {'torch ' + unit:>10} {'cb ' + unit:>10} {'ratio':>7}")


def row(name, t_fn, c_fn, number, width: int = 46):
    """Times torch's and candle_bind's version of one case and prints the ratio cb / torch."""
    t, c = best(t_fn, number), best(c_fn, number)
    print(f"{name:<{width}} {t * 1e6:>10.2f} {c * 1e6:>10.2f} {c / t:>7.2f}")
