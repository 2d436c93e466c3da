"""Counters, gauges and histograms for `/metrics` in Prometheus' text format (version 0.0.4).
Updated from the event loop only, so no locks."""

from __future__ import annotations

from typing import Callable, Dict, List, Tuple

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)

Labels = Tuple[Tuple[str, str], ...]


def _fmt(labels: Labels, extra: Tuple[Tuple[str, str], ...] = ()) -> str:
    items = list(labels) + list(extra)
    if not items:
        return ""
    esc = lambda v: v.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')  # noqa: E731
    return "{" + ",".join(f'{k}="{esc(v)}"' for k, v in items) + "}"


class Histogram:
    def __init__(self, buckets=LATENCY_BUCKETS):
        self.buckets = buckets
        self.counts = [0] * len(buckets)
        self.total = 0
        self.sum = 0.0

    def observe(self, v: float) -> None:
        self.total += 1
        self.sum += v
        for i, b in enumerate(self.buckets):
            if v <= b:
                self.counts[i] += 1


class Metrics:
    PREFIX = "candle_bind_"

    def __init__(self):
        self._counters: Dict[str, Dict[Labels, float]] = {}
        self._hists: Dict[str, Dict[Labels, Histogram]] = {}
        self._help: Dict[str, str] = {}
        self._gauges: List[Tuple[str, str, Callable[[], float]]] = []

    def inc(self, name: str, value: float = 1.0, help: str = "", **labels: str) -> None:
        key = tuple(sorted(labels.items()))
        series = self._counters.setdefault(name, {})
        series[key] = series.get(key, 0.0) + value
        self._help.setdefault(name, help)

    def observe(self, name: str, value: float, help: str = "", **labels: str) -> None:
        key = tuple(sorted(labels.items()))
        self._hists.setdefault(name, {}).setdefault(key, Histogram()).observe(value)
        self._help.setdefault(name, help)

    def gauge(self, name: str, help: str, read: Callable[[], float]) -> None:
        self._gauges.append((name, help, read))

    def render(self) -> str:
        lines: List[str] = []
        for name, series in self._counters.items():
            full = self.PREFIX + name
            lines += [f"# HELP {full} {self._help[name]}", f"# TYPE {full} counter"]
            lines += [f"{full}{_fmt(k)} {v:g}" for k, v in series.items()]
        for name, help, read in self._gauges:
            full = self.PREFIX + name
            lines += [f"# HELP {full} {help}", f"# TYPE {full} gauge", f"{full} {read():g}"]
        for name, series in self._hists.items():
            full = self.PREFIX + name
            lines += [f"# HELP {full} {self._help[name]}", f"# TYPE {full} histogram"]
            for k, h in series.items():
                lines += [f"{full}_bucket{_fmt(k, (('le', f'{b:g}'),))} {c}" for b, c in zip(h.buckets, h.counts)]
                lines += [f"{full}_bucket{_fmt(k, (('le', '+Inf'),))} {h.total}",
                          f"{full}_sum{_fmt(k)} {h.sum:.6f}", f"{full}_count{_fmt(k)} {h.total}"]
        return "\n".join(lines) + "\n"
