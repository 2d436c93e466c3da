"""Process-wide settings and objects torch scripts touch around the model: `compile` (returns its
argument), `Generator` (seeds the one global stream), matmul precision and determinism flags,
the default dtype, memory formats and layouts."""

from __future__ import annotations

from . import _C

__all__ = ["compile", "Generator", "set_float32_matmul_precision", "get_float32_matmul_precision",
           "use_deterministic_algorithms", "are_deterministic_algorithms_enabled", "memory_format", "contiguous_format", "channels_last", "channels_last_3d",
           "preserve_format", "layout", "strided", "sparse_coo", "sparse_csr", "set_warn_always", "is_warn_always_enabled"]


def compile(model=None, *args, **kwargs):  # noqa: A001 - torch's name
    """torch.compile: hands the function or module back unchanged (also as a decorator)."""
    if model is None:
        return lambda f: f
    return model


class Generator:
    """torch.Generator: `manual_seed` seeds candle_bind's global generator (one stream per process)."""

    def __init__(self, device="cpu"):
        self.device = _C.device(device) if isinstance(device, str) else device
        self._seed = 67280421310721

    def manual_seed(self, seed):
        self._seed = int(seed)
        _C.manual_seed(self._seed)
        return self

    def seed(self):
        self._seed = _C.seed()
        return self._seed

    def initial_seed(self):
        return self._seed

    def get_state(self):
        from .random import get_rng_state

        return get_rng_state()

    def set_state(self, state):
        from .random import set_rng_state

        set_rng_state(state)
        return self


_matmul_precision = ["highest"]
_deterministic = [False]
_warn_always = [False]


def set_float32_matmul_precision(precision: str) -> None:
    if precision not in ("highest", "high", "medium"):
        raise RuntimeError(f"Invalid precision {precision!r}: expected highest, high or medium")
    _matmul_precision[0] = precision


def get_float32_matmul_precision() -> str:
    return _matmul_precision[0]


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Recorded; candle_bind's CPU kernels are deterministic either way."""
    _deterministic[0] = bool(mode)


def are_deterministic_algorithms_enabled() -> bool:
    return _deterministic[0]


def set_warn_always(b: bool) -> None:
    _warn_always[0] = bool(b)


def is_warn_always_enabled() -> bool:
    return _warn_always[0]


class _Named:
    """A torch constant known by its name: prints as `torch.<name>`, pickles as the module global."""

    def __init__(self, name: str):
        self._name = name

    def __repr__(self):
        return f"torch.{self._name}"

    def __reduce__(self):
        return self._name


class memory_format(_Named):
    """torch.memory_format: candle_bind tensors are row-major; the formats are accepted names."""


contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
preserve_format = memory_format("preserve_format")


class layout(_Named):
    """torch.layout: every candle_bind tensor is strided (dense)."""


strided = layout("strided")
sparse_coo = layout("sparse_coo")
sparse_csr = layout("sparse_csr")
