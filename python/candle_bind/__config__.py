"""torch.__config__: how this build of candle_bind was made and how it runs here (`show()`, also
`python -m candle_bind info`)."""

from __future__ import annotations

import os
import platform

__all__ = ["show", "parallel_info"]


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _facts() -> dict:
    from . import _C

    info = dict(_C.build_info())
    active, best, unknown = _C.cpu_capability()
    info.update(cpu=_cpu_model(), isa=active, isa_best=best, threads=_C.get_num_threads(), cpus=os.cpu_count(),
                isa_override=os.environ.get("CANDLE_BIND_ISA"), isa_unknown=unknown)
    return info


def show() -> str:
    """A human-readable description of this build and machine (torch.__config__.show())."""
    f = _facts()
    isa = f["isa"] if f["isa"] == f["isa_best"] else f"{f['isa']} (capped by CANDLE_BIND_ISA; the CPU has {f['isa_best']})"
    lines = [
        f"candle_bind {f['version']}, {f['target']}"
        + (", debug assertions" if f["debug_assertions"] else ""),
        f"  CUDA: {'built in (cargo feature cuda)' if f['cuda'] else 'not built (CPU only)'}",
        f"  CPU: {f['cpu']}, {f['cpus']} logical CPUs",
        f"  kernels' instruction set: {isa}",
        f"  intra-op threads: {f['threads']}",
        f"  malloc tuning: {'on' if f['malloc_tuning'] else 'off (CANDLE_BIND_MALLOC_TUNING=0)'}",
    ]
    if f["isa_unknown"]:
        lines.append(f"  CANDLE_BIND_ISA={f['isa_unknown']!r} is not a level we know: ignored")
    return "\n".join(lines) + "\n"


def parallel_info() -> str:
    """torch.__config__.parallel_info(): the thread settings."""
    f = _facts()
    return f"ATen/Parallel:\n\tat::get_num_threads() : {f['threads']}\n\tintra-op parallelism: candle_bind's pool\n"
