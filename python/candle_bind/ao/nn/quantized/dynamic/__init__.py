"""torch.ao.nn.quantized.dynamic: modules with float inputs and outputs whose weights are quantized."""

from .modules import Linear

__all__ = ["Linear"]


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    raise AttributeError(f"torch.ao.nn.quantized.dynamic.{name} is not supported by candle_bind yet (only Linear)")
