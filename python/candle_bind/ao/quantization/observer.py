"""torch.ao.quantization.observer: the observers a qconfig names. For dynamic quantization only the
weight observers compute anything (min/max → scale and zero point, with torch's float32 arithmetic);
the activation observer is a placeholder, since each call quantizes its input from its own range."""

from __future__ import annotations

import warnings
from functools import partial

import numpy as np

from ... import _C, _qtensor
from ...nn.modules.module import Module

__all__ = ["ObserverBase", "UniformQuantizationObserverBase", "MinMaxObserver", "PerChannelMinMaxObserver",
           "PlaceholderObserver", "default_observer", "default_weight_observer", "default_per_channel_weight_observer",
           "default_dynamic_quant_observer", "default_placeholder_observer", "default_float_qparams_observer",
           "default_float_qparams_observer_4bit"]

_EPS = float(np.finfo(np.float32).eps)


class _PartialWrapper:
    """A factory of observers with fixed arguments (`Observer.with_args(...)`), as torch's."""

    def __init__(self, p):
        self.p = p
        self.callable_args = {}

    def __call__(self, *args, **keywords):
        for name, make in self.callable_args.items():
            keywords.setdefault(name, make())
        return self.p(*args, **keywords)

    def __repr__(self):
        return self.p.__repr__() + self.callable_args.__repr__()

    def with_args(self, **kwargs):
        return _with_args(self, **kwargs)

    def with_callable_args(self, **kwargs):
        result = _PartialWrapper(p=self.p)
        result.callable_args = {**self.callable_args, **kwargs}
        return result


def _with_args(cls_or_self, **kwargs):
    return _PartialWrapper(partial(cls_or_self, **kwargs))


class ObserverBase(Module):
    def __init__(self, dtype, is_dynamic: bool = False):
        super().__init__()
        self.dtype = dtype
        self.is_dynamic = is_dynamic

    with_args = classmethod(_with_args)

    def forward(self, x):
        raise NotImplementedError

    def calculate_qparams(self, **kwargs):
        raise NotImplementedError


def calculate_qmin_qmax(quant_min, quant_max, has_customized_qrange: bool, dtype, reduce_range: bool):
    """The integer range of a dtype, halved by reduce_range (torch's `calculate_qmin_qmax`)."""
    if has_customized_qrange:
        if reduce_range:
            quant_min, quant_max = quant_min // 2, quant_max // 2
        return quant_min, quant_max
    if dtype in (_C.qint8, _C.int8):
        return (-64, 63) if reduce_range else (-128, 127)
    if dtype in (_C.quint8, _C.uint8):
        return (0, 127) if reduce_range else (0, 255)
    if dtype in (_C.qint32, _C.int32):
        return -(2**31), 2**31 - 1
    return 0, 15


class UniformQuantizationObserverBase(ObserverBase):
    eps = _EPS

    def __init__(self, dtype=_C.quint8, qscheme=_qtensor.per_tensor_affine, reduce_range=False, quant_min=None,
                 quant_max=None, factory_kwargs=None, eps=_EPS, is_dynamic=False, **kwargs):
        super().__init__(dtype=dtype, is_dynamic=is_dynamic)
        self.qscheme = qscheme
        if reduce_range:
            warnings.warn("Please use quant_min and quant_max to specify the range for observers. reduce_range will "
                          "be deprecated in a future release of PyTorch.", stacklevel=2)
        self.reduce_range = reduce_range
        self.eps = float(eps)
        if qscheme not in _qtensor.QSCHEMES.values():
            raise AssertionError(f"Default Observer only works for per_tensor_affine, per_tensor_symmetric, "
                                 f"per_channel_affine, per_channel_symmetric and per_channel_float_qparams "
                                 f"quantization scheme, got {qscheme}")
        if dtype not in (_C.qint8, _C.quint8, _C.qint32, _C.int8, _C.uint8, _C.int32):
            raise AssertionError(f"Default Observer only works for qint8, quint8 and quint4x2 data type, got {dtype}")
        self.has_customized_qrange = quant_min is not None and quant_max is not None
        if self.has_customized_qrange and not quant_min <= 0 <= quant_max:
            raise AssertionError("Used-specified quantization range must include 0.")
        self.quant_min, self.quant_max = calculate_qmin_qmax(quant_min, quant_max, self.has_customized_qrange,
                                                             dtype, reduce_range)

    def _calculate_qparams(self, min_val, max_val):
        """(scale, zero_point) tensors from min/max tensors, in float32 as torch's observers compute them."""
        lo = np.atleast_1d(np.asarray(min_val.tolist(), np.float32))
        hi = np.atleast_1d(np.asarray(max_val.tolist(), np.float32))
        per_tensor = min_val.dim() == 0
        if lo.size == 0 or (per_tensor and lo[0] == np.inf and hi[0] == -np.inf):
            warnings.warn("must run observer before calling calculate_qparams. Returning default values.",
                          stacklevel=2)
            return _C.tensor([1.0]), _C.tensor([0])
        if np.any(lo > hi):
            raise AssertionError(f"min {min_val} should be less than max {max_val}")
        qmin, qmax = self.quant_min, self.quant_max
        min_neg, max_pos = np.minimum(lo, np.float32(0)), np.maximum(hi, np.float32(0))
        eps = np.float32(self.eps)
        zero_point = np.zeros(lo.shape, np.int64)
        if self.qscheme in (_qtensor.per_tensor_symmetric, _qtensor.per_channel_symmetric):
            max_pos = np.maximum(-min_neg, max_pos)
            scale = np.maximum(max_pos / np.float32((qmax - qmin) / 2), eps)
            if self.dtype in (_C.quint8, _C.uint8):
                zero_point[:] = (qmin + qmax) // 2 if self.has_customized_qrange else 128
        elif self.qscheme is _qtensor.per_channel_affine_float_qparams:
            raise NotImplementedError("per_channel_affine_float_qparams (quantized Embedding weights) is not "
                                      "supported by candle_bind")
        else:
            scale = np.maximum((max_pos - min_neg) / np.float32(qmax - qmin), eps)
            zero_point = qmin - np.rint(min_neg / scale).astype(np.int64)
            zero_point = np.clip(zero_point, qmin, qmax)
        return (_C.tensor(scale.astype(np.float32).tolist(), dtype=_C.float32),
                _C.tensor(zero_point.astype(np.int64).tolist(), dtype=_C.int64))

    def reset_min_max_vals(self):
        raise NotImplementedError("Cannot reset min/max values in the given observer.")


class MinMaxObserver(UniformQuantizationObserverBase):
    """Running min/max of everything seen, per tensor."""

    def __init__(self, dtype=_C.quint8, qscheme=_qtensor.per_tensor_affine, reduce_range=False, quant_min=None,
                 quant_max=None, factory_kwargs=None, eps=_EPS, is_dynamic=False, **kwargs):
        if qscheme not in (_qtensor.per_tensor_affine, _qtensor.per_tensor_symmetric):
            raise NotImplementedError("MinMaxObserver's qscheme only support torch.per_tensor_symmetric and "
                                      "torch.per_tensor_affine.")
        super().__init__(dtype=dtype, qscheme=qscheme, reduce_range=reduce_range, quant_min=quant_min,
                         quant_max=quant_max, factory_kwargs=factory_kwargs, eps=eps, is_dynamic=is_dynamic, **kwargs)
        self.register_buffer("min_val", _C.tensor(float("inf")))
        self.register_buffer("max_val", _C.tensor(float("-inf")))

    def forward(self, x_orig):
        if x_orig.numel() == 0:
            return x_orig
        x = x_orig.detach().float()
        self.min_val = _C.tensor(min(float(self.min_val), float(x.min())))
        self.max_val = _C.tensor(max(float(self.max_val), float(x.max())))
        return x_orig

    def calculate_qparams(self):
        return self._calculate_qparams(self.min_val, self.max_val)

    def extra_repr(self):
        return f"min_val={self.min_val}, max_val={self.max_val}"

    def reset_min_max_vals(self):
        self.min_val = _C.tensor(float("inf"))
        self.max_val = _C.tensor(float("-inf"))


class PerChannelMinMaxObserver(UniformQuantizationObserverBase):
    """Running min/max per index of `ch_axis`."""

    def __init__(self, ch_axis=0, dtype=_C.quint8, qscheme=_qtensor.per_channel_affine, reduce_range=False,
                 quant_min=None, quant_max=None, factory_kwargs=None, eps=_EPS, is_dynamic=False, **kwargs):
        super().__init__(dtype=dtype, qscheme=qscheme, reduce_range=reduce_range, quant_min=quant_min,
                         quant_max=quant_max, factory_kwargs=factory_kwargs, eps=eps, is_dynamic=is_dynamic, **kwargs)
        self.ch_axis = ch_axis
        self.register_buffer("min_val", _C.tensor([]))
        self.register_buffer("max_val", _C.tensor([]))

    def forward(self, x_orig):
        if x_orig.numel() == 0:
            return x_orig
        x = x_orig.detach().float()
        y = x.transpose(0, self.ch_axis).reshape(x.shape[self.ch_axis], -1) if x.dim() > 1 else x.reshape(-1, 1)
        lo, hi = y.amin(dim=1), y.amax(dim=1)
        if self.min_val.numel() == 0:
            self.min_val, self.max_val = lo, hi
        else:
            self.min_val, self.max_val = _C.minimum(self.min_val, lo), _C.maximum(self.max_val, hi)
        return x_orig

    def calculate_qparams(self):
        return self._calculate_qparams(self.min_val, self.max_val)

    def extra_repr(self):
        return f"min_val={self.min_val}, max_val={self.max_val}"

    def reset_min_max_vals(self):
        self.min_val, self.max_val = _C.tensor([]), _C.tensor([])


class PlaceholderObserver(ObserverBase):
    """Records a dtype and does nothing: the activation side of dynamic and float16 qconfigs."""

    def __init__(self, dtype=_C.float32, custom_op_name: str = "", compute_dtype=None, quant_min=None,
                 quant_max=None, qscheme=None, eps=None, is_dynamic=False):
        super().__init__(dtype=dtype, is_dynamic=is_dynamic)
        if qscheme is None:
            qscheme = _qtensor.per_tensor_affine
        if eps is None:
            eps = _EPS
        self.dtype, self.qscheme, self.quant_min, self.quant_max, self.eps = dtype, qscheme, quant_min, quant_max, eps
        self.custom_op = custom_op_name

    def forward(self, x):
        return x

    def extra_repr(self):
        return f"dtype={self.dtype}, is_dynamic={self.is_dynamic}"

    def calculate_qparams(self):
        raise Exception("calculate_qparams should not be called for PlaceholderObserver")  # noqa: TRY002 - torch's


default_observer = MinMaxObserver.with_args(quant_min=0, quant_max=127)
default_placeholder_observer = PlaceholderObserver
default_weight_observer = MinMaxObserver.with_args(dtype=_C.qint8, qscheme=_qtensor.per_tensor_symmetric)
default_per_channel_weight_observer = PerChannelMinMaxObserver.with_args(dtype=_C.qint8,
                                                                         qscheme=_qtensor.per_channel_symmetric)
default_dynamic_quant_observer = PlaceholderObserver.with_args(dtype=_C.quint8, quant_min=0, quant_max=255,
                                                               is_dynamic=True)
default_float_qparams_observer = PerChannelMinMaxObserver.with_args(
    dtype=_C.quint8, qscheme=_qtensor.per_channel_affine_float_qparams, ch_axis=0)
default_float_qparams_observer_4bit = default_float_qparams_observer
