"""candle_bind.nn: torch.nn's Module system and layers over Candle."""

from . import functional, init, utils  # noqa: F401
from .modules import *  # noqa: F401,F403
from .modules import Module  # noqa: F401
from .parameter import Buffer, Parameter, UninitializedBuffer, UninitializedParameter  # noqa: F401


def __getattr__(name):
    # torch.nn's submodules and wrappers loaded on first use (nn.parallel, nn.attention).
    import importlib

    if name in ("parallel", "attention", "quantized"):
        return importlib.import_module(f"{__name__}.{name}")
    if name in ("DataParallel",):
        return getattr(importlib.import_module(f"{__name__}.parallel"), name)
    raise AttributeError(f"torch.nn.{name} is not supported by candle_bind yet")
