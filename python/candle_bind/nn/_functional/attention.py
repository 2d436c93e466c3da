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
    if dropout_p == 0.0 and query.dim() == 4 and query.device.type == "cuda" and \
            (enable_gqa or key.dim() != 4 or key.shape[1] == query.shape[1]):
        # The fused GPU kernel (bf16/f16, common head dims; GQA without repeating k and v).
        out = _C.flash_attention(query, key, value, attn_mask, bool(is_causal), float(scale_factor))
        if out is not None:
            return out
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


def _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads) -> bool:
    """True for batched (L, N, E) inputs, False for unbatched (L, E) ones; torch's AssertionErrors otherwise."""
    if query.dim() == 3:
        if key.dim() != 3 or value.dim() != 3:
            raise AssertionError(f"For batched (3-D) `query`, expected `key` and `value` to be 3-D but found "
                                 f"{key.dim()}-D and {value.dim()}-D tensors respectively")
        if key_padding_mask is not None and key_padding_mask.dim() != 2:
            raise AssertionError(f"For batched (3-D) `query`, expected `key_padding_mask` to be `None` or 2-D but "
                                 f"found {key_padding_mask.dim()}-D tensor instead")
        if attn_mask is not None and attn_mask.dim() not in (2, 3):
            raise AssertionError(f"For batched (3-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D but "
                                 f"found {attn_mask.dim()}-D tensor instead")
        return True
    if query.dim() == 2:
        if key.dim() != 2 or value.dim() != 2:
            raise AssertionError(f"For unbatched (2-D) `query`, expected `key` and `value` to be 2-D but found "
                                 f"{key.dim()}-D and {value.dim()}-D tensors respectively")
        if key_padding_mask is not None and key_padding_mask.dim() != 1:
            raise AssertionError(f"For unbatched (2-D) `query`, expected `key_padding_mask` to be `None` or 1-D but "
                                 f"found {key_padding_mask.dim()}-D tensor instead")
        if attn_mask is not None:
            if attn_mask.dim() not in (2, 3):
                raise AssertionError(f"For unbatched (2-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D "
                                     f"but found {attn_mask.dim()}-D tensor instead")
            if attn_mask.dim() == 3 and tuple(attn_mask.shape) != (num_heads, query.shape[0], key.shape[0]):
                raise AssertionError(f"Expected `attn_mask` shape to be {(num_heads, query.shape[0], key.shape[0])} "
                                     f"but got {tuple(attn_mask.shape)}")
        return False
    raise AssertionError(f"query should be unbatched 2D or batched 3D tensor but received {query.dim()}-D query tensor")


def _canonical_mask(mask, name, dtype):
    """Bool masks (True = not allowed) become additive float masks of the query's dtype."""
    if mask is None:
        return None
    if mask.dtype == _C.bool:
        return _C.zeros(*mask.shape, dtype=dtype).masked_fill(mask, float("-inf"))
    if not mask.dtype.is_floating_point:
        raise AssertionError(f"only bool and floating types of {name} are supported")
    return mask


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias,
                                 bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias,
                                 training=True, key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None, k_proj_weight=None,
                                 v_proj_weight=None, static_k=None, static_v=None, average_attn_weights=True,
                                 is_causal=False):
    """torch's functional multi-head attention on (L, N, E) inputs (or unbatched (L, E)), step for step."""
    batched = _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    src_len = key.shape[0]
    key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask", query.dtype)
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the Transformer module "
                           "method `generate_square_subsequent_mask` to create this mask.")
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask = None  # the hint goes to SDPA as is_causal
    else:
        attn_mask = _canonical_mask(attn_mask, "attn_mask", query.dtype)
        if key_padding_mask is not None:
            is_causal = False
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if use_separate_proj_weight:
        if tuple(key.shape[:2]) != tuple(value.shape[:2]):
            raise AssertionError(f"key's sequence and batch dims {tuple(key.shape[:2])} do not match value's "
                                 f"{tuple(value.shape[:2])}")
        if q_proj_weight is None or k_proj_weight is None or v_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is True but q_proj_weight, k_proj_weight or "
                                 "v_proj_weight is None")
        wq, wk, wv = q_proj_weight, k_proj_weight, v_proj_weight
    else:
        if tuple(key.shape) != tuple(value.shape):
            raise AssertionError(f"key shape {tuple(key.shape)} does not match value shape {tuple(value.shape)}")
        if in_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is False but in_proj_weight is None")
        wq, wk, wv = in_proj_weight.chunk(3)
    bq, bk, bv = (None, None, None) if in_proj_bias is None else in_proj_bias.chunk(3)
    q, k, v = F.linear(query, wq, bq), F.linear(key, wk, bk), F.linear(value, wv, bv)
    if attn_mask is not None:
        if attn_mask.dim() == 2:
            if tuple(attn_mask.shape) != (tgt_len, src_len):
                raise RuntimeError(f"The shape of the 2D attn_mask is {tuple(attn_mask.shape)}, but should be "
                                   f"{(tgt_len, src_len)}.")
            attn_mask = attn_mask.unsqueeze(0)
        elif attn_mask.dim() == 3:
            if tuple(attn_mask.shape) != (bsz * num_heads, tgt_len, src_len):
                raise RuntimeError(f"The shape of the 3D attn_mask is {tuple(attn_mask.shape)}, but should be "
                                   f"{(bsz * num_heads, tgt_len, src_len)}.")
        else:
            raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported")
    if bias_k is not None and bias_v is not None:
        if static_k is not None or static_v is not None:
            raise AssertionError("bias cannot be added to static key.")
        k = _C.cat([k, bias_k.repeat(1, bsz, 1)])
        v = _C.cat([v, bias_v.repeat(1, bsz, 1)])
        attn_mask = F.pad(attn_mask, (0, 1)) if attn_mask is not None else None
        key_padding_mask = F.pad(key_padding_mask, (0, 1)) if key_padding_mask is not None else None
    elif bias_k is not None or bias_v is not None:
        raise AssertionError("bias_k is set but bias_v is None" if bias_k is not None else "bias_v is set but bias_k is None")
    q = q.reshape(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    k = k.reshape(k.shape[0], bsz * num_heads, head_dim).transpose(0, 1) if static_k is None else static_k
    v = v.reshape(v.shape[0], bsz * num_heads, head_dim).transpose(0, 1) if static_v is None else static_v
    if add_zero_attn:
        k = _C.cat([k, _C.zeros(bsz * num_heads, 1, head_dim, dtype=k.dtype)], 1)
        v = _C.cat([v, _C.zeros(bsz * num_heads, 1, head_dim, dtype=v.dtype)], 1)
        attn_mask = F.pad(attn_mask, (0, 1)) if attn_mask is not None else None
        key_padding_mask = F.pad(key_padding_mask, (0, 1)) if key_padding_mask is not None else None
    src_len = k.shape[1]
    if key_padding_mask is not None:
        if tuple(key_padding_mask.shape) != (bsz, src_len):
            raise AssertionError(f"expecting key_padding_mask shape of {(bsz, src_len)}, but got "
                                 f"{tuple(key_padding_mask.shape)}")
        key_padding_mask = key_padding_mask.reshape(bsz, 1, 1, src_len).expand(bsz, num_heads, 1, src_len) \
            .reshape(bsz * num_heads, 1, src_len)
        attn_mask = key_padding_mask if attn_mask is None else attn_mask + key_padding_mask
    if not training:
        dropout_p = 0.0
    if need_weights:
        scores = (q * math.sqrt(1.0 / float(q.shape[-1]))).matmul(k.transpose(-2, -1))
        if attn_mask is not None:
            scores = scores + attn_mask
        weights = scores.softmax(-1)
        if dropout_p > 0.0:
            weights = F.dropout(weights, p=dropout_p)
        out = weights.matmul(v).transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
        out = F.linear(out, out_proj_weight, out_proj_bias).reshape(tgt_len, bsz, -1)
        weights = weights.reshape(bsz, num_heads, tgt_len, src_len)
        if average_attn_weights:
            weights = weights.mean(1)
        if not batched:
            out, weights = out.squeeze(1), weights.squeeze(0)
        return out, weights
    if attn_mask is not None:
        attn_mask = attn_mask.unsqueeze(0) if attn_mask.shape[0] == 1 and attn_mask.dim() == 3 \
            else attn_mask.reshape(bsz, num_heads, -1, src_len)
    q = q.reshape(bsz, num_heads, tgt_len, head_dim)
    k = k.reshape(bsz, num_heads, src_len, head_dim)
    v = v.reshape(bsz, num_heads, src_len, head_dim)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal)
    out = out.permute(2, 0, 1, 3).reshape(bsz * tgt_len, embed_dim)
    out = F.linear(out, out_proj_weight, out_proj_bias).reshape(tgt_len, bsz, -1)
    return (out if batched else out.squeeze(1)), None
