"""candle_bind.gguf: GGUF files (llama.cpp's format) with their quantized tensors.

    meta, tensors = candle_bind.gguf.load("model.gguf")
    w = tensors["blk.0.attn_q.weight"]      # QTensor: .shape, .ggml_dtype, .dequantize()
    layer = candle_bind.nn.QuantizedLinear(w)  # matmul on the quantized weight
"""

from __future__ import annotations

import os
from typing import Any, Dict, Tuple

from . import _C
from ._C import QTensor, quantize

__all__ = ["QTensor", "load", "metadata", "quantize", "save"]


def load(path) -> Tuple[Dict[str, Any], Dict[str, QTensor]]:
    """(metadata, tensors) of a GGUF file; quantized tensors stay quantized."""
    return _C.gguf_read(os.fspath(path))


def metadata(path) -> Dict[str, Any]:
    """The metadata of a GGUF file without its tensors (the whole header is still checked)."""
    return _C.gguf_metadata(os.fspath(path))


def save(path, metadata: Dict[str, Any], tensors: Dict[str, Any]) -> None:
    """Writes GGUF: QTensors as they are, Tensors as F32; metadata of bool/int/float/str/list."""
    _C.gguf_write(os.fspath(path), dict(metadata), dict(tensors))
