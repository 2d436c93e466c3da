"""torch.ao.nn.quantized.modules.linear: `LinearPackedParams` (a quantized weight packed for the int8
kernels, or a float16-rounded one) and the quantized `Linear` it belongs to. The static `Linear`
(quantized tensors in and out) only holds and saves its weights here; the dynamic Linear runs."""

from __future__ import annotations

from ..... import _C, _qtensor
from .....nn import modules as _nn
from .....nn.modules.module import Module
from .utils import WeightedQuantizedModule, _hide_packed_params_repr

__all__ = ["LinearPackedParams", "Linear"]

_FP16_MAX = 65504.0


class _Fp16Packed:
    """What `quantized::linear_prepack_fp16` keeps: the weight rounded to float16 (held as float32,
    values past float16's range saturated as fbgemm's) and the float bias."""

    def __init__(self, weight, bias):
        self.weight = weight.float().clamp(-_FP16_MAX, _FP16_MAX).half().float()
        self.bias = bias

    def unpack(self):
        return self.weight, self.bias

    def __call__(self, x):
        if x.dim() < 2:
            raise RuntimeError("Expected input.dim() >= 2 to be true, but got false.")
        from .....nn import functional as F

        return F.linear(x, self.weight, self.bias)


def _prepack(weight, bias):
    """`quantized::linear_prepack`: a qint8 weight (per tensor, or per channel along dim 0) and a float bias."""
    if not isinstance(weight, _qtensor.QuantizedTensor) or weight.dtype is not _C.qint8:
        raise RuntimeError("quantized::linear_prepack (fbgemm): expected a qint8 quantized weight, got "
                           f"{getattr(weight, 'dtype', type(weight).__name__)}")
    scheme = weight.qscheme()
    if scheme is _qtensor.per_tensor_affine:
        return _C.qlinear_prepack(weight._int, weight._scales, weight._zps, bias)
    if scheme is _qtensor.per_channel_affine and weight._axis == 0:
        return _C.qlinear_prepack(weight._int, weight._scales, weight._zps, bias, per_channel=True)
    raise RuntimeError(f"quantized::linear_prepack: unsupported quantization scheme {scheme} "
                       f"(axis {weight._axis}) for a Linear weight")


def _unpack(packed):
    w, bias = packed.unpack()
    if packed.per_channel:
        qw = _qtensor.QuantizedTensor(w, _C.qint8, _qtensor.per_channel_affine, packed.scales, packed.zero_points, 0)
    else:
        qw = _qtensor.QuantizedTensor(w, _C.qint8, _qtensor.per_tensor_affine, packed.scales, packed.zero_points)
    return qw, bias


class LinearPackedParams(Module):
    _version = 3

    def __init__(self, dtype=_C.qint8):
        super().__init__()
        self.dtype = dtype
        if dtype is _C.qint8:
            wq = _qtensor._empty_affine_quantized([1, 1], scale=1.0, zero_point=0, dtype=_C.qint8)
        elif dtype is _C.float16:
            wq = _C.zeros(1, 1)
        else:
            raise RuntimeError("Unsupported dtype on dynamic quantized linear!")
        self.set_weight_bias(wq, None)

    def set_weight_bias(self, weight, bias) -> None:
        if self.dtype is _C.qint8:
            self._packed_params = _prepack(weight, bias)
        elif self.dtype is _C.float16:
            self._packed_params = _Fp16Packed(weight, bias)
        else:
            raise RuntimeError("Unsupported dtype on dynamic quantized linear!")

    def _weight_bias(self):
        if self.dtype is _C.qint8:
            return _unpack(self._packed_params)
        if self.dtype is _C.float16:
            return self._packed_params.unpack()
        raise RuntimeError("Unsupported dtype on dynamic quantized linear!")

    def forward(self, x):
        return x

    # Version 3: `dtype` and `_packed_params` = (weight, bias), as torch's.
    def _save_to_state_dict(self, destination, prefix, keep_vars):
        super()._save_to_state_dict(destination, prefix, keep_vars)
        destination[prefix + "dtype"] = self.dtype
        destination[prefix + "_packed_params"] = self._weight_bias()

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs):
        version = local_metadata.get("version", None)
        if version is None or version < 2:
            self.dtype = _C.qint8
        else:
            self.dtype = state_dict.pop(prefix + "dtype")
        if version is None or version < 3:
            self.set_weight_bias(state_dict.pop(prefix + "weight"), state_dict.pop(prefix + "bias"))
        if version == 3:
            weight, bias = state_dict.pop(prefix + "_packed_params")
            self.set_weight_bias(weight, bias)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, False, missing_keys, unexpected_keys,
                                      error_msgs)

    def __repr__(self):
        return self._weight_bias().__repr__()


class Linear(WeightedQuantizedModule):
    """torch.ao.nn.quantized.Linear: holds, prints and saves as torch's; running it needs quantized
    tensors as input (static quantization), which candle_bind does not support."""

    _version = 3
    _FLOAT_MODULE = (_nn.Linear, _nn.transformer.NonDynamicallyQuantizableLinear)

    def __init__(self, in_features, out_features, bias_=True, dtype=_C.qint8):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        bias = _C.zeros(out_features) if bias_ else None
        if dtype is _C.qint8:
            qweight = _qtensor._empty_affine_quantized([out_features, in_features], scale=1, zero_point=0,
                                                       dtype=_C.qint8)
        elif dtype is _C.float16:
            qweight = _C.zeros(out_features, in_features)
        else:
            raise RuntimeError("Unsupported dtype specified for quantized Linear!")
        self._packed_params = LinearPackedParams(dtype)
        self._packed_params.set_weight_bias(qweight, bias)
        self.scale = 1.0
        self.zero_point = 0

    def _get_name(self):
        return "QuantizedLinear"

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, scale={self.scale}, "
                f"zero_point={self.zero_point}, qscheme={self.weight().qscheme()}")

    def __repr__(self):
        return _hide_packed_params_repr(self, LinearPackedParams)

    def forward(self, x):
        raise NotImplementedError("quantized::linear (static quantization: quantized tensors in and out) is not "
                                  "supported by candle_bind; use dynamic quantization "
                                  "(torch.ao.quantization.quantize_dynamic), whose Linear takes float inputs")

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        super()._save_to_state_dict(destination, prefix, keep_vars)
        destination[prefix + "scale"] = _C.tensor(self.scale)
        destination[prefix + "zero_point"] = _C.tensor(self.zero_point)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs):
        self.scale = float(state_dict.pop(prefix + "scale"))
        self.zero_point = int(state_dict.pop(prefix + "zero_point"))
        version = local_metadata.get("version", None)
        if version is None or version == 1:
            weight, bias = state_dict.pop(prefix + "weight"), state_dict.pop(prefix + "bias")
            state_dict.update({prefix + "_packed_params.weight": weight, prefix + "_packed_params.bias": bias})
        super()._load_from_state_dict(state_dict, prefix, local_metadata, False, missing_keys, unexpected_keys,
                                      error_msgs)

    def _weight_bias(self):
        return self._packed_params._weight_bias()

    def weight(self):
        return self._weight_bias()[0]

    def bias(self):
        return self._weight_bias()[1]

    def set_weight_bias(self, w, b) -> None:
        self._packed_params.set_weight_bias(w, b)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        raise NotImplementedError("static quantization (quantized.Linear.from_float) is not supported by candle_bind; "
                                  "use torch.ao.quantization.quantize_dynamic")
