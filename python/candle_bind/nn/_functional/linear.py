"""Linear functionals: linear, bilinear."""

from __future__ import annotations

import builtins
from typing import Optional

from ... import _C
from ..._C import Tensor
from ..._tensor import dtype_cpp, not_implemented


def linear(input: Tensor, weight: Tensor, bias: Optional[Tensor] = None) -> Tensor:
    """y = x Wᵀ + b (the matmul reads Wᵀ in place; the bias add runs in the result's memory)."""
    if input.dim() == 0 or weight.dim() not in (1, 2):
        raise RuntimeError(f"linear(): expected input of at least 1 dim and a 1-D or 2-D weight, got {input.dim()}-D and {weight.dim()}-D")
    if input.dtype == _C.bool and weight.dtype == _C.bool and input.numel() and weight.numel():
        raise not_implemented("addmm_impl_cpu_", input.dtype)
    out = input.matmul(weight.t()) if weight.dim() == 2 else input.matmul(weight)
    if bias is not None:
        out += bias
    return out


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Optional[Tensor] = None) -> Tensor:
    """y_k = x1ᵀ W_k x2 + b_k over the last dims."""
    named = [("input1", input1), ("input2", input2), ("weight", weight)] + ([("bias", bias)] if bias is not None else [])
    if builtins.any(t.dtype != input1.dtype for _, t in named):
        raise RuntimeError("All tensors must have the same dtype, got "
                           + ", ".join(f"{n}: {dtype_cpp(t.dtype)}" for n, t in named))
    if input1.shape[:-1] != input2.shape[:-1]:
        raise RuntimeError(f"bilinear(): input batch dimensions do not match: got {input1.shape[:-1]} and {input2.shape[:-1]}")
    lead = input1.shape[:-1]
    x1 = input1.reshape(-1, input1.shape[-1])
    x2 = input2.reshape(-1, input2.shape[-1])
    out_f, in1, in2 = weight.shape
    # (B, in1) @ (in1, out·in2) → (B, out, in2), then contract with x2.
    t = (x1 @ weight.permute(1, 0, 2).reshape(in1, out_f * in2)).reshape(-1, out_f, in2)
    out = (t * x2.unsqueeze(1)).sum(-1)
    if bias is not None:
        out = out + bias
    return out.reshape(*lead, out_f)
