"""torch.ao.nn.quantized.dynamic.Linear: float input and output, int8 weight; each call quantizes the
input from its range and runs the int8 kernels (`_C.qlinear_dynamic`, torch's fbgemm numerics)."""

from __future__ import annotations

from ...... import _C
from ......nn import modules as _nn
from ...modules import linear as nnq
from ...modules.utils import _quantize_weight

__all__ = ["Linear"]


class Linear(nnq.Linear):
    # version used in this class is different from the parent class nnq.Linear
    _version = 4

    def __init__(self, in_features, out_features, bias_=True, dtype=_C.qint8):
        super().__init__(in_features, out_features, bias_, dtype=dtype)
        self.version = 4

    def forward(self, x):
        packed = self._packed_params
        if packed.dtype is _C.qint8:
            # reduce_range from version 4 on, as torch's (activations quantized to 0..127).
            return _C.qlinear_dynamic(x, packed._packed_params, self.version is not None and self.version >= 4)
        if packed.dtype is _C.float16:
            return packed._packed_params(x).to(x.dtype)
        raise RuntimeError("Unsupported dtype on dynamic quantized linear!")

    def _get_name(self):
        return "DynamicQuantizedLinear"

    def extra_repr(self):
        s = f"in_features={self.in_features}, out_features={self.out_features}, dtype={self._packed_params.dtype}"
        if self._packed_params.dtype is _C.qint8:
            s += f", qscheme={self.weight().qscheme()}"
        return s

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs):
        self.version = local_metadata.get("version", None)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, False, missing_keys, unexpected_keys,
                                      error_msgs)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        """A dynamic quantized Linear from a float Linear with a `qconfig` (its weight observer decides
        the dtype: qint8, or float16)."""
        float_modules = [_nn.Linear, _nn.transformer.NonDynamicallyQuantizableLinear]
        if type(mod) not in float_modules:
            raise AssertionError("nn.quantized.dynamic.Linear.from_float only works for one of"
                                 + str([m.__name__ for m in float_modules]) + f", got {type(mod)}")
        if not hasattr(mod, "qconfig"):
            raise AssertionError("Input float module must have qconfig defined")
        if mod.qconfig is not None and mod.qconfig.weight is not None:
            weight_observer = mod.qconfig.weight()
        else:
            from .....quantization.qconfig import default_dynamic_qconfig

            weight_observer = default_dynamic_qconfig.weight()
        dtype = weight_observer.dtype
        if dtype not in (_C.qint8, _C.float16):
            raise AssertionError("The only supported dtypes for dynamic quantized linear are qint8 and float16, "
                                 f"got: {dtype}")
        weight = mod.weight.detach()
        if dtype is _C.qint8:
            weight_observer(weight)
            qweight = _quantize_weight(weight.float(), weight_observer)
        else:
            qweight = weight.float()
        qlinear = cls(mod.in_features, mod.out_features, dtype=dtype)
        qlinear.set_weight_bias(qweight, mod.bias)
        return qlinear

    @classmethod
    def from_reference(cls, ref_qlinear):
        qlinear = cls(ref_qlinear.in_features, ref_qlinear.out_features, dtype=ref_qlinear.weight_dtype)
        qlinear.set_weight_bias(ref_qlinear.get_quantized_weight(), ref_qlinear.bias)
        return qlinear
