"""torch.random: the global generator (ChaCha12; its numbers are candle_bind's stream, not torch's).
`get_rng_state()` is its whole state as a uint8 tensor, so `set_rng_state` replays exactly what
followed, and `fork_rng` leaves the stream outside the block untouched."""

from __future__ import annotations

import contextlib

from . import _C

__all__ = ["manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state", "fork_rng"]

_initial = [67280421310721]


def manual_seed(seed: int):
    """Seeds the global stream; returns a Generator, as torch does."""
    from ._runtime import Generator

    _initial[0] = int(seed)
    default = Generator().manual_seed(int(seed))
    default._default = True  # torch's default generator: `generator=` it is the global stream
    return default


def seed() -> int:
    _initial[0] = _C.seed()
    return _initial[0]


def initial_seed() -> int:
    return _initial[0]


def get_rng_state():
    return _C.tensor(list(_C.rng_state()), dtype=_C.uint8)


def set_rng_state(new_state) -> None:
    _C.set_rng_state(bytes(new_state.tolist()))


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
