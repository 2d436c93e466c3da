"""torch.ao.quantization.qconfig: which observers quantize a layer's activations and weights. The
dynamic ones (int8 and float16 weights) are what candle_bind runs."""

from __future__ import annotations

from collections import namedtuple

from ... import _C
from ...nn.modules.module import Module
from .observer import (PlaceholderObserver, default_dynamic_quant_observer, default_float_qparams_observer,
                       default_per_channel_weight_observer, default_placeholder_observer, default_weight_observer)

__all__ = ["QConfig", "QConfigDynamic", "default_dynamic_qconfig", "float16_dynamic_qconfig",
           "per_channel_dynamic_qconfig", "float_qparams_weight_only_qconfig", "float16_static_qconfig"]


class QConfig(namedtuple("QConfig", ["activation", "weight"])):
    """Observer factories (classes or `with_args` partials, not instances) for activations and weights."""

    __slots__ = ()

    def __new__(cls, activation, weight):
        if isinstance(activation, Module) or isinstance(weight, Module):
            raise ValueError("QConfig received observer instance, please pass observer class instead. "
                             "Use MyObserver.with_args(x=1) to override arguments to constructor if needed")
        return super().__new__(cls, activation, weight)


class QConfigDynamic(namedtuple("QConfigDynamic", ["activation", "weight"])):
    __slots__ = ()

    def __new__(cls, activation=PlaceholderObserver, weight=PlaceholderObserver):
        if isinstance(weight, Module):
            raise ValueError("QConfigDynamic received observer instance, please pass observer class instead. "
                             "Use MyObserver.with_args(x=1) to override arguments to constructor if needed")
        return super().__new__(cls, activation, weight)


default_dynamic_qconfig = QConfig(activation=default_dynamic_quant_observer, weight=default_weight_observer)
float16_dynamic_qconfig = QConfig(activation=PlaceholderObserver.with_args(dtype=_C.float16, is_dynamic=True),
                                  weight=PlaceholderObserver.with_args(dtype=_C.float16))
float16_static_qconfig = QConfig(activation=PlaceholderObserver.with_args(dtype=_C.float16),
                                 weight=PlaceholderObserver.with_args(dtype=_C.float16))
per_channel_dynamic_qconfig = QConfig(activation=default_dynamic_quant_observer,
                                      weight=default_per_channel_weight_observer)
float_qparams_weight_only_qconfig = QConfig(activation=default_placeholder_observer,
                                            weight=default_float_qparams_observer)
float_qparams_weight_only_qconfig_4bit = float_qparams_weight_only_qconfig
