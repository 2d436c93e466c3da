"""torch.ao.quantization: dynamic quantization (`quantize_dynamic`: Linear layers with int8 or float16
weights, run on int8 kernels with torch's fbgemm numerics), its qconfigs and observers, and the stubs a
quantizable model holds before it is converted (in float they pass the tensor through, as torch's do).
Static quantization (prepare / calibrate / convert with quantized activations) is not supported."""

from __future__ import annotations

from ...nn import Module
from .observer import (MinMaxObserver, ObserverBase, PerChannelMinMaxObserver, PlaceholderObserver,  # noqa: F401
                       default_dynamic_quant_observer, default_float_qparams_observer, default_observer,
                       default_per_channel_weight_observer, default_placeholder_observer, default_weight_observer)
from .qconfig import (QConfig, QConfigDynamic, default_dynamic_qconfig, float16_dynamic_qconfig,  # noqa: F401
                      float16_static_qconfig, float_qparams_weight_only_qconfig, per_channel_dynamic_qconfig)
from .quantization_mappings import get_default_dynamic_quant_module_mappings  # noqa: F401
from .quantize import convert, propagate_qconfig_, quantize_dynamic, swap_module  # noqa: F401

__all__ = ["QuantStub", "DeQuantStub", "QuantWrapper", "quantize_dynamic", "convert", "propagate_qconfig_",
           "swap_module", "QConfig", "QConfigDynamic", "default_dynamic_qconfig", "float16_dynamic_qconfig",
           "per_channel_dynamic_qconfig", "float16_static_qconfig", "float_qparams_weight_only_qconfig",
           "MinMaxObserver", "PerChannelMinMaxObserver", "PlaceholderObserver", "ObserverBase",
           "default_dynamic_quant_observer", "default_weight_observer", "default_per_channel_weight_observer",
           "default_placeholder_observer", "default_observer", "default_float_qparams_observer",
           "get_default_dynamic_quant_module_mappings"]


class QuantStub(Module):
    def __init__(self, qconfig=None):
        super().__init__()
        if qconfig:
            self.qconfig = qconfig

    def forward(self, x):
        return x


class DeQuantStub(QuantStub):
    pass


class QuantWrapper(Module):
    def __init__(self, module):
        super().__init__()
        self.quant, self.dequant, self.module = QuantStub(), DeQuantStub(), module

    def forward(self, x):
        return self.dequant(self.module(self.quant(x)))


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    raise AttributeError(f"torch.ao.quantization.{name} is not supported by candle_bind yet (of quantization, "
                         "dynamic quantization is: torch.ao.quantization.quantize_dynamic)")
