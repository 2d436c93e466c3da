"""torch.ao.quantization: the stubs a quantizable model holds before it is prepared and converted (in float
they pass the tensor through, as torch's do). Preparing, calibrating and converting a model (observers,
qconfigs, quantized kernels) is not supported by candle_bind and says so."""

from __future__ import annotations

from ...nn import Module

__all__ = ["QuantStub", "DeQuantStub", "QuantWrapper"]


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
    raise AttributeError(f"torch.ao.quantization.{name} is not supported by candle_bind yet (quantizing a model "
                         "needs torch's quantized kernels; run the float model)")
