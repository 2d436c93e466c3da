"""The fused GPU attention kernel (src/cuda/attention.cu) against torch's scaled_dot_product_attention:
16-bit floats, the head dims it is compiled for, causal and masked, GQA, decoding one query against
a long cache, queries longer than keys, strided (transposed) inputs, rows with nothing to attend to.
torch computes the reference in float32 on the CPU from the same rounded inputs. Runs where a GPU is."""

import os

import numpy as np
import pytest
import torch

import candle_bind as cb

pytestmark = pytest.mark.skipif(not cb.cuda.is_available(), reason="no CUDA device")

TOL = {"bfloat16": 3e-2, "float16": 5e-3}


def _inputs(b, hq, hkv, lq, lk, d, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(b, h, n, d, generator=g).to(getattr(torch, dtype)) for h, n in ((hq, lq), (hkv, lk), (hkv, lk)))
    return q, k, v


def _cb(t):
    return cb.from_numpy(t.float().numpy()).to(getattr(cb, str(t.dtype).split(".")[1])).cuda()


def _check(q, k, v, dtype, **kw):
    mask = kw.pop("attn_mask", None)
    gqa = k.shape[1] != q.shape[1]
    ref_mask = mask.float() if mask is not None and mask.is_floating_point() else mask
    want = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float(), attn_mask=ref_mask,
                                                            enable_gqa=gqa, **kw)
    cmask = None if mask is None else (_cb(mask) if mask.dtype != torch.bool else
                                       cb.from_numpy(mask.numpy()).cuda())
    got = cb.nn.functional.scaled_dot_product_attention(_cb(q), _cb(k), _cb(v), attn_mask=cmask, enable_gqa=gqa, **kw)
    assert got.device.type == "cuda" and got.dtype == getattr(cb, dtype) and tuple(got.shape) == tuple(want.shape)
    np.testing.assert_allclose(got.float().cpu().numpy(), want.numpy(), atol=TOL[dtype], rtol=TOL[dtype])
    return got


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("d", [64, 80, 96, 128])
@pytest.mark.parametrize("causal", [False, True])
def test_head_dims_and_causal(dtype, d, causal):
    q, k, v = _inputs(2, 4, 4, 100, 100, d, dtype)
    _check(q, k, v, dtype, is_causal=causal)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("lq,lk,causal", [(1, 300, False), (1, 1000, False), (1, 5000, False), (7, 300, True),
                                          (300, 70, True), (65, 129, False), (200, 200, True)])
def test_lengths_decode_and_gqa(dtype, lq, lk, causal):
    q, k, v = _inputs(2, 14, 2, lq, lk, 64, dtype)  # Qwen2-0.5B's heads: 7 query heads per key/value head
    _check(q, k, v, dtype, is_causal=causal)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_masks(dtype):
    q, k, v = _inputs(2, 4, 4, 33, 50, 128, dtype)
    pad = torch.ones(2, 1, 1, 50, dtype=torch.bool)
    pad[1, ..., 40:] = False
    _check(q, k, v, dtype, attn_mask=pad)
    full = torch.rand(2, 4, 33, 50) > 0.3
    full[0, 1, 5] = False  # a row with nothing to attend to: zeros, as torch
    _check(q, k, v, dtype, attn_mask=full)
    add = (torch.randn(1, 4, 33, 50) * 2).to(getattr(torch, dtype))
    _check(q, k, v, dtype, attn_mask=add)
    _check(q, k, v, dtype, attn_mask=torch.ones(33, 50, dtype=torch.bool).tril())
    _check(q, k, v, dtype, scale=0.3)


def test_strided_inputs_and_fallbacks():
    # (B, L, H, D) projections viewed as (B, H, L, D), as attention modules hand them over.
    g = torch.Generator().manual_seed(1)
    x = torch.randn(2, 40, 4, 64, generator=g).to(torch.bfloat16)
    q = k = v = x.transpose(1, 2)
    _check(q, k, v, "bfloat16", is_causal=True)
    # head dim 32 and float32 take the unfused path, with the same results
    q, k, v = _inputs(1, 2, 2, 20, 20, 32, "bfloat16")
    _check(q, k, v, "bfloat16")
    qf, kf, vf = (t.float() for t in _inputs(1, 2, 2, 20, 20, 64, "bfloat16"))
    got = cb.nn.functional.scaled_dot_product_attention(*(cb.from_numpy(t.numpy()).cuda() for t in (qf, kf, vf)))
    np.testing.assert_allclose(got.cpu().numpy(), torch.nn.functional.scaled_dot_product_attention(qf, kf, vf).numpy(),
                               atol=1e-4)


def test_same_as_the_unfused_path():
    q, k, v = _inputs(1, 8, 2, 257, 257, 128, "bfloat16")
    args = (_cb(q), _cb(k), _cb(v))
    fused = cb.nn.functional.scaled_dot_product_attention(*args, is_causal=True, enable_gqa=True)
    os.environ["CANDLE_BIND_FLASH"] = "0"
    try:
        plain = cb.nn.functional.scaled_dot_product_attention(*args, is_causal=True, enable_gqa=True)
    finally:
        del os.environ["CANDLE_BIND_FLASH"]
    np.testing.assert_allclose(fused.float().cpu().numpy(), plain.float().cpu().numpy(), atol=3e-2)
