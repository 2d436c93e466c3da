"""torch.onnx: registration of ONNX symbolics is accepted (torchvision registers its ops' at import);
exporting needs torch's tracer and raises."""

from __future__ import annotations

import enum

from . import symbolic_helper, symbolic_opset11  # noqa: F401

__all__ = ["export", "is_in_onnx_export", "register_custom_op_symbolic", "unregister_custom_op_symbolic",
           "TensorProtoDataType"]

_SYMBOLICS: dict = {}  # (op name, opset) -> the symbolic function, kept for nothing but the record


class TensorProtoDataType(enum.IntEnum):
    UNDEFINED = 0
    FLOAT = 1
    UINT8 = 2
    INT8 = 3
    UINT16 = 4
    INT16 = 5
    INT32 = 6
    INT64 = 7
    STRING = 8
    BOOL = 9
    FLOAT16 = 10
    DOUBLE = 11
    UINT32 = 12
    UINT64 = 13
    COMPLEX64 = 14
    COMPLEX128 = 15
    BFLOAT16 = 16


def register_custom_op_symbolic(symbolic_name: str, symbolic_fn, opset_version: int) -> None:
    _SYMBOLICS[(symbolic_name, opset_version)] = symbolic_fn


def unregister_custom_op_symbolic(symbolic_name: str, opset_version: int) -> None:
    _SYMBOLICS.pop((symbolic_name, opset_version), None)


def is_in_onnx_export() -> bool:
    return False


def export(*args, **kwargs):
    raise NotImplementedError("torch.onnx.export is not supported by candle_bind (it traces the model with torch's "
                              "JIT); export with real torch")
