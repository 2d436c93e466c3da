"""torch.ao.quantization.quantize: `quantize_dynamic` and the two steps it takes (`propagate_qconfig_`,
`convert`), as torch's: every child module whose type (or name) the qconfig spec names gets a
`qconfig`, inherited by its children; each child with a qconfig whose type the mapping knows is
swapped for `mapping[type].from_float(child)`. The top module itself is never swapped (torch's rule)."""

from __future__ import annotations

import copy
import itertools

from ... import _C
from ... import nn
from .qconfig import default_dynamic_qconfig, float16_dynamic_qconfig, float_qparams_weight_only_qconfig
from .quantization_mappings import get_default_dynamic_quant_module_mappings

__all__ = ["quantize_dynamic", "propagate_qconfig_", "convert", "swap_module"]


def _type_before_parametrizations(module):
    cls = type(module)
    return cls.__bases__[0] if getattr(cls, "_is_parametrized", False) else cls


def _propagate_qconfig_helper(module, qconfig_dict, qconfig_parent=None, prefix=""):
    module_qconfig = qconfig_dict.get(_type_before_parametrizations(module), qconfig_parent)
    module_qconfig = qconfig_dict.get(prefix, module_qconfig)
    module_qconfig = getattr(module, "qconfig", module_qconfig)
    module.qconfig = module_qconfig
    for name, child in module.named_children():
        _propagate_qconfig_helper(child, qconfig_dict, module_qconfig, prefix + "." + name if prefix else name)


def propagate_qconfig_(module, qconfig_dict=None, prepare_custom_config_dict=None):
    """Sets `qconfig` on every module of `module` from `qconfig_dict` (types or qualified names → QConfig)."""
    _propagate_qconfig_helper(module, qconfig_dict or {})


def swap_module(mod, mapping, custom_module_class_mapping=None, use_precomputed_fake_quant=False):
    """`mapping[type(mod)].from_float(mod)` if `mod` has a qconfig and its type is mapped; else `mod`.
    The new module keeps `mod`'s forward hooks, as torch's."""
    if getattr(mod, "qconfig", None) is None:
        return mod
    qmod = mapping.get(_type_before_parametrizations(mod))
    if qmod is None:
        return mod
    new_mod = qmod.from_float(mod)
    if new_mod is not mod:
        for hook in mod._forward_pre_hooks.values():
            new_mod.register_forward_pre_hook(hook)
        for hook in mod._forward_hooks.values():
            new_mod.register_forward_hook(hook)
    return new_mod


def _convert(module, mapping, inplace=True):
    if not inplace:
        module = copy.deepcopy(module)
    reassign = {}
    for name, mod in module.named_children():
        _convert(mod, mapping, True)
        reassign[name] = swap_module(mod, mapping)
    for key, value in reassign.items():
        module._modules[key] = value
    return module


def _remove_qconfig(module):
    for child in module.children():
        _remove_qconfig(child)
    if "qconfig" in module.__dict__:
        del module.qconfig


def convert(module, mapping=None, inplace=False, remove_qconfig=True, is_reference=False,
            convert_custom_config_dict=None, use_precomputed_fake_quant=False):
    """Swaps the modules that have a qconfig for their quantized versions. candle_bind has only the
    dynamic ones, so the default mapping is the dynamic one (torch's default, static, needs observers run
    on calibration data and quantized kernels end to end)."""
    if is_reference:
        raise NotImplementedError("reference quantized modules are not supported by candle_bind")
    if mapping is None:
        mapping = get_default_dynamic_quant_module_mappings()
    if not inplace:
        module = copy.deepcopy(module)
    _convert(module, mapping, inplace=True)
    if remove_qconfig:
        _remove_qconfig(module)
    return module


def quantize_dynamic(model, qconfig_spec=None, dtype=_C.qint8, mapping=None, inplace=False):
    """Converts a float model to a dynamic (weights-only) quantized one, as torch's: Linear layers (and
    `NonDynamicallyQuantizableLinear`) become `torch.ao.nn.quantized.dynamic.Linear` with int8 weights
    (or float16 ones for `dtype=torch.float16`). `qconfig_spec` is a set of module types and/or
    qualified names, or a dict of them to QConfigs; `inplace=False` works on a deep copy.
    LSTM/GRU/RNN cells and Embeddings, which torch would also quantize, stay in float with a warning."""
    if qconfig_spec is None:
        if dtype is _C.qint8:
            qconfig_spec = dict.fromkeys((nn.Linear, nn.LSTM, nn.GRU, nn.LSTMCell, nn.RNNCell, nn.GRUCell),
                                         default_dynamic_qconfig)
        elif dtype is _C.float16:
            qconfig_spec = dict.fromkeys((nn.Linear, nn.LSTM, nn.GRU, nn.LSTMCell, nn.RNNCell, nn.GRUCell),
                                         float16_dynamic_qconfig)
        elif dtype is _C.quint8:
            qconfig_spec = dict.fromkeys((nn.EmbeddingBag, nn.Embedding), float_qparams_weight_only_qconfig)
        else:
            raise ValueError(f"Don't know how to quantize with default settings for {dtype}. Provide full qconfig "
                             "please")
    elif isinstance(qconfig_spec, set):
        if dtype is _C.qint8:
            default_qconfig = default_dynamic_qconfig
        elif dtype is _C.float16:
            default_qconfig = float16_dynamic_qconfig
        elif dtype is _C.quint8:
            default_qconfig = float_qparams_weight_only_qconfig
        else:
            raise RuntimeError("Unknown dtype specified for quantize_dynamic: ", str(dtype))
        qconfig_spec = dict(zip(qconfig_spec, itertools.repeat(default_qconfig)))
    if mapping is None:
        mapping = get_default_dynamic_quant_module_mappings()
    if not inplace:
        model = copy.deepcopy(model)
    model.eval()
    propagate_qconfig_(model, qconfig_spec)
    convert(model, mapping, inplace=True)
    return model
