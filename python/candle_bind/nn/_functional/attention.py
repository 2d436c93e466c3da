"""Attention functionals: scaled_dot_product_attention over the fused Rust kernel."""

from __future__ import annotations

import math

from ... import _C
from ..._tensor import dtype_cpp
# Functionals call each other as F.x, looked up at call time as the one-file module's globals were:
# a monkeypatched nn.functional.x reaches these callers too.
from .. import functional as F


def _sdpa_fused(query, key, value, attn_mask, is_causal, scale):
    """The Rust kernel on (B, L, D) views: batch dims broadcast and flattened, the mask given once
    when it is the same for every batch element."""
    lead = _broadcast_lead(query.shape[:-2], key.shape[:-2], value.shape[:-2])
    L, S, D, Dv = query.shape[-2], key.shape[-2], query.shape[-1], value.shape[-1]
    batch = math.prod(lead)  # not -1: empty tensors have no inferable dim
    flat = lambda t, n, d: t.expand(*lead, n, d).reshape(batch, n, d)  # noqa: E731
    q, k, v = flat(query, L, D), flat(key, S, D), flat(value, S, Dv)
    mask, group = None, 1
    if attn_mask is not None:
        m = attn_mask if attn_mask.dim() >= 2 else attn_mask.reshape(1, -1)
        mlead = (1,) * (len(lead) - (m.dim() - 2)) + tuple(m.shape[:-2])
        # Batch dims the mask has, then dims it broadcasts over (a (B, 1, L, S) mask for (B, H)
        # heads): the kernel reads mask row block bi // group instead of an expanded copy.
        j = len(lead)
        while j > 0 and mlead[j - 1] == 1:
            j -= 1
        if mlead[:j] == lead[:j]:
            group = math.prod(lead[j:])
            mask = m.reshape(*mlead, *m.shape[-2:]).expand(*lead[:j], *mlead[j:], L, S).reshape(math.prod(lead[:j]), L, S)
        else:
            mask = m.expand(*lead, L, S).reshape(batch, L, S)
        if not mask.is_floating_point() and mask.dtype != _C.bool:
            raise RuntimeError(f"Expected attn_mask dtype to be bool or float or to match query dtype, but got attn_mask.dtype: {mask.dtype}")
    out = _C.sdpa(q.contiguous(), k.contiguous(), v.contiguous(), mask.contiguous() if mask is not None else None,
                  bool(is_causal), float(scale), group)
    return out.reshape(*lead, L, Dv)


def _broadcast_lead(*shapes):
    from ... import broadcast_shapes

    return tuple(broadcast_shapes(*[tuple(s) for s in shapes]))


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    """softmax(q kᵀ · scale + mask) v with torch's masks: bool (True = attend) or additive float,
    broadcast over the batch/head dims; `is_causal` aligns the triangle to the top left as torch
    does when L ≠ S; rows with every position masked come out as zeros, as torch's safe softmax."""
    if is_causal and attn_mask is not None:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True")
    if not (query.dtype == key.dtype == value.dtype):
        raise RuntimeError(f"Expected query, key, and value to have the same dtype, but got query.dtype: "
                           f"{dtype_cpp(query.dtype)} key.dtype: {dtype_cpp(key.dtype)} and value.dtype: "
                           f"{dtype_cpp(value.dtype)} instead.")
    if attn_mask is not None and attn_mask.dtype != _C.bool and not attn_mask.is_floating_point():
        raise RuntimeError(f"Expected attn_mask dtype to be bool or float or to match query dtype, but got "
                           f"attn_mask.dtype: {dtype_cpp(attn_mask.dtype)} and  query.dtype: {dtype_cpp(query.dtype)} instead.")
    if query.dim() >= 2 and (math.prod(query.shape[:-1]) * value.shape[-1] == 0 or key.shape[-2] == 0):
        # An empty result or no keys: torch returns zeros before looking at the rest.
        return _C.zeros(*query.shape[:-1], value.shape[-1], dtype=query.dtype, device=query.device)
    if attn_mask is not None and attn_mask.dim() < 2:
        raise IndexError("Dimension specified as -2 but tensor has no dimensions" if attn_mask.dim() == 0 else
                         "Dimension out of range (expected to be in range of [-1, 0], but got -2)")
    L, S = query.shape[-2], key.shape[-2]
    scale_factor = (1 / math.sqrt(query.shape[-1]) if query.shape[-1] else 1.0) if scale is None else scale
    if enable_gqa and query.dim() >= 3 and key.shape[-3] != query.shape[-3]:
        rep = query.shape[-3] // key.shape[-3]
        key = key.repeat_interleave(rep, dim=-3)
        value = value.repeat_interleave(rep, dim=-3)
    if is_causal and attn_mask is not None:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True")
    if dropout_p == 0.0 and query.is_floating_point() and query.device.type != "meta" and query.dim() >= 2:
        return _sdpa_fused(query, key, value, attn_mask, is_causal, scale_factor)
    scores = query.matmul(key.transpose(-2, -1))
    scores *= scale_factor
    if is_causal:
        if attn_mask is not None:
            raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True")
        causal = _C.ones(L, S, dtype=_C.bool, device=query.device).tril()
        scores = scores.masked_fill(~causal, float("-inf"))
    if attn_mask is not None:
        if attn_mask.dtype == _C.bool:
            scores = scores.masked_fill(~attn_mask, float("-inf"))
        else:
            scores = scores + attn_mask
    attn = scores.softmax(-1)
    if is_causal or attn_mask is not None:
        dead = (scores == float("-inf")).all(-1, keepdim=True)
        if dead.any().item():
            attn = attn.masked_fill(dead, 0.0)
    if dropout_p > 0.0:
        attn = F.dropout(attn, dropout_p, True)
    return attn.matmul(value)
