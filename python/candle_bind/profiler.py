"""torch.profiler: Candle has no profiler to hook, so `profile` records nothing (its trace is empty)
and `record_function` only marks a region. accelerate names these at import time (ProfileKwargs),
and scripts wrap their loops in them; both then run unprofiled."""

from __future__ import annotations

import contextlib
import enum
import json

__all__ = ["ProfilerActivity", "ProfilerAction", "profile", "schedule", "record_function"]


class ProfilerActivity(enum.Enum):
    CPU = 0
    CUDA = 1
    XPU = 2
    MTIA = 3
    HPU = 4
    PrivateUse1 = 5


class ProfilerAction(enum.Enum):
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0, **kwargs):
    """torch's step -> ProfilerAction function (only consulted by a profiler that records)."""

    def action(step: int) -> ProfilerAction:
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        cycle = wait + warmup + active
        if repeat > 0 and step // cycle >= repeat:
            return ProfilerAction.NONE
        mod = step % cycle
        if mod < wait:
            return ProfilerAction.NONE
        if mod < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if mod < cycle - 1 else ProfilerAction.RECORD_AND_SAVE

    return action


class profile(contextlib.AbstractContextManager):
    """Accepts torch's arguments and records no events."""

    def __init__(self, *args, on_trace_ready=None, **kwargs):
        self.on_trace_ready = on_trace_ready
        self.step_num = 0

    def start(self) -> None:
        return None

    def stop(self) -> None:
        if self.on_trace_ready is not None:
            self.on_trace_ready(self)

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()

    def step(self) -> None:
        self.step_num += 1

    def events(self) -> list:
        return []

    def key_averages(self, *args, **kwargs) -> list:
        return []

    def export_chrome_trace(self, path: str) -> None:
        with open(path, "w") as f:
            json.dump({"traceEvents": []}, f)


class record_function(contextlib.ContextDecorator):
    """A labelled region (`with record_function("name"):` or as a decorator); nothing is recorded."""

    def __init__(self, name: str, args: str | None = None):
        self.name = name

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
