"""torch.random: the global generator. Its state is a seed: `get_rng_state()` reseeds the stream
with a fresh seed drawn from it and returns that seed (8 bytes), so `set_rng_state` replays exactly
what followed (the numbers are candle_bind's stream, not torch's)."""

from __future__ import annotations

import contextlib

from . import _C

__all__ = ["manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state", "fork_rng"]

_initial = [67280421310721]


def manual_seed(seed: int):
    """Seeds the global stream; returns a Generator, as torch does."""
    from ._runtime import Generator

    _initial[0] = int(seed)
    return Generator().manual_seed(int(seed))


def seed() -> int:
    _initial[0] = _C.seed()
    return _initial[0]


def initial_seed() -> int:
    return _initial[0]


def get_rng_state():
    fresh = int(_C.randint(0, 2**62, (1,)).item())
    _C.manual_seed(fresh)
    return _C.tensor(list(fresh.to_bytes(8, "little")), dtype=_C.uint8)


def set_rng_state(new_state) -> None:
    _C.manual_seed(int.from_bytes(bytes(new_state.tolist()), "little"))


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices", device_type="cuda"):
    """Random numbers drawn inside the block do not change the stream outside it."""
    if not enabled:
        yield
        return
    state = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(state)
