"""torch.nn.quantized: `FloatFunctional`, the float stand-in quantizable models use for their additions
and concatenations (torchvision's quantization models); quantized layers themselves are not supported."""

from __future__ import annotations

from .. import _C
from .modules import Identity, Module

__all__ = ["FloatFunctional"]


class FloatFunctional(Module):
    """Before quantization these are plain ops (the observer in torch's is an Identity)."""

    def __init__(self):
        super().__init__()
        self.activation_post_process = Identity()

    def forward(self, x):
        raise RuntimeError("FloatFunctional is not intended to use the 'forward'. Please use the underlying "
                           "operation")

    def add(self, x, y):
        return x + y

    def add_scalar(self, x, y):
        return x + y

    def mul(self, x, y):
        return x * y

    def mul_scalar(self, x, y):
        return x * y

    def cat(self, x, dim: int = 0):
        return _C.cat(x, dim)

    def add_relu(self, x, y):
        return (x + y).relu()

    def matmul(self, x, y):
        return x @ y


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    if name in ("dynamic", "Linear", "LinearPackedParams"):  # torch.nn.quantized.dynamic: torch.ao.nn's
        from ..ao.nn import quantized

        return getattr(quantized, name)
    raise AttributeError(f"torch.nn.quantized.{name} is not supported by candle_bind yet (no quantized layers)")
