"""Helpers the quantized modules share (torch.ao.nn.quantized.modules.utils)."""

from __future__ import annotations

from ..... import _C, _qtensor
from .....nn.modules.module import Module, _addindent

__all__ = ["WeightedQuantizedModule"]


class WeightedQuantizedModule(Module):
    """Base of the quantized modules with weights."""

    @classmethod
    def from_reference(cls, ref_module, output_scale, output_zero_point):
        raise NotImplementedError


def _get_weight_observer(observer):
    return getattr(observer, "activation_post_process", observer)


def _quantize_weight(float_wt, observer):
    """The weight quantized with the qparams its observer has seen (torch's `_quantize_weight`)."""
    wt_scale, wt_zp = observer.calculate_qparams()
    scheme = observer.qscheme
    if scheme in (_qtensor.per_tensor_symmetric, _qtensor.per_tensor_affine):
        qweight = _qtensor.quantize_per_tensor(float_wt, float(wt_scale), int(wt_zp), _C.qint8)
    elif scheme in (_qtensor.per_channel_symmetric, _qtensor.per_channel_affine):
        qweight = _qtensor.quantize_per_channel(float_wt, wt_scale.to(_C.float64), wt_zp.to(_C.int64),
                                                observer.ch_axis, _C.qint8)
    else:
        raise ValueError(f"Unexpected qscheme {scheme} (candle_bind quantizes Linear weights per tensor or per channel)")
    return _clamp_weights(qweight, observer)


def _clamp_weights(qweight, observer):
    """Integer values clamped to the observer's range when it is narrower than qint8's (reduce_range)."""
    observer = _get_weight_observer(observer)
    lo, hi = observer.quant_min, observer.quant_max
    if lo <= -128 and hi >= 127:
        return qweight
    qweight._int = qweight._int.clamp(lo, hi)
    return qweight


def _hide_packed_params_repr(self, params) -> str:
    """Module.__repr__ without the packed-params child (torch's)."""
    extra_repr = self.extra_repr()
    extra_lines = extra_repr.split("\n") if extra_repr else []
    child_lines = ["(" + key + "): " + _addindent(repr(module), 2)
                   for key, module in self._modules.items() if not isinstance(module, params)]
    lines = extra_lines + child_lines
    main_str = self._get_name() + "("
    if lines:
        if len(extra_lines) == 1 and not child_lines:
            main_str += extra_lines[0]
        else:
            main_str += "\n  " + "\n  ".join(lines) + "\n"
    return main_str + ")"
