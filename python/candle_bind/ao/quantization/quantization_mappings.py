"""torch.ao.quantization.quantization_mappings: which quantized module replaces which float module."""

from __future__ import annotations

import warnings

from ... import nn
from ..nn.quantized import dynamic as nnqd

__all__ = ["DEFAULT_DYNAMIC_QUANT_MODULE_MAPPINGS", "get_default_dynamic_quant_module_mappings",
           "get_dynamic_quant_module_class"]


class _StaysFloat:
    """Stands in for torch's dynamic quantized modules that candle_bind lacks (LSTM, GRU, the RNN cells,
    Embedding, EmbeddingBag): the layer is kept in float, with a warning (its outputs are then closer to
    the float model's than torch's quantized ones would be, never further)."""

    def __init__(self, name: str):
        self.name = name

    def from_float(self, mod, use_precomputed_fake_quant=False):
        warnings.warn(f"candle_bind has no dynamic quantized {self.name}: this {type(mod).__name__} stays in float "
                      "(only Linear layers are quantized)", stacklevel=4)
        return mod


DEFAULT_DYNAMIC_QUANT_MODULE_MAPPINGS = {
    nn.GRUCell: _StaysFloat("GRUCell"),
    nn.Linear: nnqd.Linear,
    nn.modules.transformer.NonDynamicallyQuantizableLinear: nnqd.Linear,
    nn.LSTM: _StaysFloat("LSTM"),
    nn.GRU: _StaysFloat("GRU"),
    nn.LSTMCell: _StaysFloat("LSTMCell"),
    nn.RNNCell: _StaysFloat("RNNCell"),
    nn.Embedding: _StaysFloat("Embedding"),
    nn.EmbeddingBag: _StaysFloat("EmbeddingBag"),
}


def get_default_dynamic_quant_module_mappings() -> dict:
    return dict(DEFAULT_DYNAMIC_QUANT_MODULE_MAPPINGS)


def get_dynamic_quant_module_class(float_module_class, additional_dynamic_quant_mapping=None):
    mapping = {**DEFAULT_DYNAMIC_QUANT_MODULE_MAPPINGS, **(additional_dynamic_quant_mapping or {})}
    if float_module_class not in mapping:
        raise AssertionError(f"Float module class {str(float_module_class)} does not have a corresponding quantized "
                             "module class")
    return mapping[float_module_class]
