"""torch.ao.nn.quantized: quantized modules. Here: `Linear` and its packed parameters (the base of the
dynamic Linear, which is what runs: `dynamic.Linear`), and `FloatFunctional`; static quantized layers
(quantized tensors in, quantized tensors out) are not supported."""

from ....nn.quantized import FloatFunctional
from . import dynamic  # noqa: F401
from .modules import Linear, LinearPackedParams

__all__ = ["FloatFunctional", "Linear", "LinearPackedParams", "dynamic"]


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    raise AttributeError(f"torch.ao.nn.quantized.{name} is not supported by candle_bind yet (dynamic quantization "
                         "of Linear layers is: torch.ao.quantization.quantize_dynamic)")
