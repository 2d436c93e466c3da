"""Process-wide settings and objects torch scripts touch around the model: `compile` (returns its
argument), `Generator` (seeds the one global stream), matmul precision and determinism flags,
the default dtype, memory formats and layouts."""

from __future__ import annotations

from . import _C

__all__ = ["compile", "Generator", "set_float32_matmul_precision", "get_float32_matmul_precision",
           "use_deterministic_algorithms", "are_deterministic_algorithms_enabled", "memory_format", "contiguous_format", "legacy_contiguous_format", "channels_last", "channels_last_3d",
           "preserve_format", "layout", "strided", "sparse_coo", "sparse_csr", "set_warn_always", "is_warn_always_enabled",
           "get_device_module"]


def compile(model=None, *args, **kwargs):  # noqa: A001 - torch's name
    """torch.compile: hands the function or module back unchanged (also as a decorator)."""
    if model is None:
        return lambda f: f
    return model


class Generator:
    """torch.Generator: its own stream, torch's CPU one, for randn / rand / randint / randperm given
    `generator=` (candle_bind/_generator.py). `manual_seed` also seeds candle_bind's global stream,
    which the other ops given a generator (multinomial, bernoulli, ...) draw from."""

    def __init__(self, device="cpu"):
        self.device = _C.device(device) if isinstance(device, str) else device
        self._seed = 67280421310721  # torch's default seed
        self._engine = None  # built from _seed on first use

    def manual_seed(self, seed):
        self._seed = int(seed)
        self._engine = None
        _C.manual_seed(self._seed)
        return self

    def seed(self):
        self._seed = _C.seed()
        self._engine = None
        return self._seed

    def initial_seed(self):
        return self._seed

    def get_state(self):
        from . import _generator, random

        return random.get_rng_state() if getattr(self, "_default", False) else _generator.get_state(self)

    def set_state(self, state):
        from . import _generator, random

        if getattr(self, "_default", False):
            random.set_rng_state(state)
        else:
            _generator.set_state(self, state)
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


def get_device_module(device=None):
    """torch.get_device_module: `torch.cuda` for "cuda", `torch.cpu` for "cpu" (no device: the current
    accelerator's, else the CPU's)."""
    import importlib

    from . import accelerator

    if device is None:
        kind = "cuda" if accelerator.is_available() else "cpu"
    elif isinstance(device, (str, _C.device)):
        kind = _C.device(device).type if isinstance(device, str) else device.type
    else:
        raise RuntimeError(f"Invalid value of device '{device}', expect torch.device, str, or None")
    try:
        return importlib.import_module(f"{__package__}.{kind}")
    except ModuleNotFoundError:
        raise RuntimeError(f"Device '{kind}' does not have a corresponding module registered as 'torch.{kind}'.") from None


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
legacy_contiguous_format = contiguous_format  # torch's alias (groupvit's hard_softmax passes it)


class layout(_Named):
    """torch.layout: every candle_bind tensor is strided (dense)."""


strided = layout("strided")
sparse_coo = layout("sparse_coo")
sparse_csr = layout("sparse_csr")
