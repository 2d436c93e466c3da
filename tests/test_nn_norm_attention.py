"""Normalisation layers and scaled dot-product attention against torch."""

import pytest
import torch

import candle_bind as cb
from candle_bind import nn
import candle_bind.nn.functional as F
from conftest import assert_same, check_layer, make, to_cb

tnn = torch.nn


def pair(name, *args, **kwargs):
    torch.manual_seed(0)
    return getattr(tnn, name)(*args, **kwargs), getattr(nn, name)(*args, **kwargs)


def randomize(layer):
    """Non-trivial affine parameters and running statistics (as a trained model has)."""
    g = torch.Generator().manual_seed(5)
    with torch.no_grad():
        for name, t in list(layer.named_parameters()) + list(layer.named_buffers()):
            if t.is_floating_point():
                t.copy_(torch.rand(t.shape, generator=g) + 0.5 if "var" in name else torch.randn(t.shape, generator=g))
    return layer


@pytest.mark.parametrize("shape,normalized", [((2, 5, 8), 8), ((3, 4, 6), (4, 6)), ((7,), 7), ((2, 3, 1024), 1024)])
@pytest.mark.parametrize("kw", [{}, {"elementwise_affine": False}, {"bias": False}, {"eps": 1e-3}])
def test_layer_norm(shape, normalized, kw):
    t, c = pair("LayerNorm", normalized, **kw)
    check_layer(randomize(t), c, make(shape, seed=1), atol=1e-5)


@pytest.mark.parametrize("kw", [{}, {"eps": 1e-6}, {"elementwise_affine": False}])
def test_rms_norm(kw):
    t, c = pair("RMSNorm", (4, 6), **kw)
    check_layer(randomize(t), c, make((2, 3, 4, 6), seed=2), atol=1e-5)
    x = make((3, 16), "float64", seed=3)
    assert_same(F.rms_norm(to_cb(x), 16), torch.nn.functional.rms_norm(x, (16,)), atol=1e-10)


@pytest.mark.parametrize("name,shape", [("BatchNorm1d", (4, 6)), ("BatchNorm1d", (4, 6, 5)), ("BatchNorm2d", (2, 6, 5, 4)),
                                        ("BatchNorm3d", (2, 6, 3, 4, 2))])
def test_batch_norm_eval_and_train(name, shape):
    t, c = pair(name, 6)
    check_layer(randomize(t).eval(), c, make(shape, seed=4), atol=1e-5)
    x = make(shape, seed=5)
    for _ in range(2):  # train mode: batch statistics, running stats updated with momentum
        check_layer(t, c, x, atol=1e-5, train=True)
    assert_same(c.running_mean, t.running_mean, atol=1e-5)
    assert_same(c.running_var, t.running_var, atol=1e-5)
    assert_same(c.num_batches_tracked, t.num_batches_tracked)
    t2, c2 = pair(name, 6, momentum=None)
    for _ in range(3):
        check_layer(t2, c2, x, atol=1e-5, train=True)
    t3, c3 = pair(name, 6, track_running_stats=False, affine=False)
    check_layer(t3, c3, x, atol=1e-5)


@pytest.mark.parametrize("groups,channels,shape", [(2, 6, (3, 6, 5)), (3, 6, (2, 6, 4, 4)), (6, 6, (1, 6, 7)), (1, 4, (2, 4, 3, 3))])
def test_group_norm(groups, channels, shape):
    t, c = pair("GroupNorm", groups, channels)
    check_layer(randomize(t), c, make(shape, seed=6), atol=1e-5)


@pytest.mark.parametrize("name,shape", [("InstanceNorm1d", (2, 3, 8)), ("InstanceNorm2d", (2, 3, 5, 4)), ("InstanceNorm3d", (1, 3, 2, 3, 4))])
def test_instance_norm(name, shape):
    check_layer(*pair(name, 3), make(shape, seed=7), atol=1e-5)
    t, c = pair(name, 3, affine=True, track_running_stats=True)
    check_layer(randomize(t), c, make(shape, seed=8), atol=1e-5, train=True)
    check_layer(t, c, make(shape, seed=9), atol=1e-5)


def test_local_response_norm():
    check_layer(*pair("LocalResponseNorm", 3), make((2, 6, 4, 4), seed=10), atol=1e-6)
    check_layer(*pair("LocalResponseNorm", 2), make((2, 5, 7), seed=11), atol=1e-6)


def test_norm_errors():
    with pytest.raises(RuntimeError, match="normalized_shape"):
        nn.LayerNorm(5)(cb.zeros(2, 4))
    with pytest.raises(ValueError, match="expected 4D input"):
        nn.BatchNorm2d(3)(cb.zeros(2, 3))
    with pytest.raises(RuntimeError, match="divisible by num_groups"):
        F.group_norm(cb.zeros(2, 5, 3), 2)


@pytest.mark.parametrize("L,S", [(5, 5), (3, 7), (7, 3)])
@pytest.mark.parametrize("mask", [None, "causal", "bool", "float", "bool_bcast"])
def test_sdpa(L, S, mask):
    q, k, v = make((2, 3, L, 8), seed=12), make((2, 3, S, 8), seed=13), make((2, 3, S, 8), seed=14)
    kw = {}
    if mask == "causal":
        kw["is_causal"] = True
    elif mask == "bool":
        kw["attn_mask"] = torch.rand(L, S, generator=torch.Generator().manual_seed(1)) > 0.3
    elif mask == "float":
        kw["attn_mask"] = torch.randn(2, 1, L, S, generator=torch.Generator().manual_seed(2))
    elif mask == "bool_bcast":
        kw["attn_mask"] = torch.rand(2, 1, 1, S, generator=torch.Generator().manual_seed(3)) > 0.2
    ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, **kw)
    ours = F.scaled_dot_product_attention(to_cb(q), to_cb(k), to_cb(v),
                                          **{n: to_cb(x) if isinstance(x, torch.Tensor) else x for n, x in kw.items()})
    assert_same(ours, ref, atol=1e-5)


def test_sdpa_scale_gqa_and_masked_rows():
    q, k, v = make((1, 4, 3, 8), seed=15), make((1, 2, 5, 8), seed=16), make((1, 2, 5, 8), seed=17)
    ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, scale=0.3, enable_gqa=True)
    assert_same(F.scaled_dot_product_attention(to_cb(q), to_cb(k), to_cb(v), scale=0.3, enable_gqa=True), ref, atol=1e-5)
    mask = torch.ones(3, 5, dtype=torch.bool)
    mask[1] = False  # a fully masked row: zeros, as torch
    q2, k2, v2 = q[:, :2], k, v
    ref = torch.nn.functional.scaled_dot_product_attention(q2, k2, v2, attn_mask=mask)
    assert_same(F.scaled_dot_product_attention(to_cb(q2), to_cb(k2), to_cb(v2), attn_mask=to_cb(mask)), ref, atol=1e-5)


@pytest.mark.parametrize("mshape", [(2, 1, 5, 7), (2, 3, 5, 7), (1, 3, 5, 7), (5, 7), (3, 1, 7), (2, 1, 1, 7), (1, 7)])
@pytest.mark.parametrize("kind", ["bool", "float"])
def test_sdpa_mask_broadcasts(mshape, kind):
    """Masks broadcast over heads are read per batch row (not expanded); every broadcast shape."""
    g = torch.Generator().manual_seed(1)
    q, k, v = torch.randn(2, 3, 5, 8, generator=g), torch.randn(2, 3, 7, 8, generator=g), torch.randn(2, 3, 7, 4, generator=g)
    m = torch.rand(*mshape, generator=g) > 0.3 if kind == "bool" else torch.randn(*mshape, generator=g)
    ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=m)
    assert_same(F.scaled_dot_product_attention(to_cb(q), to_cb(k), to_cb(v), attn_mask=to_cb(m)), ref, atol=1e-5)


@pytest.mark.parametrize("L,S", [(128, 128), (100, 37), (30, 100), (0, 5), (3, 0), (33, 33)])
def test_sdpa_causal_blocks_and_empty(L, S):
    """Causal attention runs in blocks of query rows against the visible keys only."""
    g = torch.Generator().manual_seed(2)
    q, k, v = torch.randn(1, 2, L, 8, generator=g), torch.randn(1, 2, S, 8, generator=g), torch.randn(1, 2, S, 6, generator=g)
    for causal in (True, False):
        ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
        assert_same(F.scaled_dot_product_attention(to_cb(q), to_cb(k), to_cb(v), is_causal=causal), ref, atol=1e-5)


@pytest.mark.parametrize("L,S", [(700, 1000), (1100, 300), (5, 70000)])
def test_sdpa_long_rows_run_in_blocks(L, S):
    """Without a causal mask, query rows run in blocks whose scores fit in cache (several blocks here,
    a block of one row for the longest keys), with and without a mask crossing the block edges."""
    g = torch.Generator().manual_seed(4)
    q, k, v = torch.randn(1, 2, L, 8, generator=g), torch.randn(1, 2, S, 8, generator=g), torch.randn(1, 2, S, 4, generator=g)
    m = torch.rand(L, S, generator=g) > 0.3
    for kw in ({}, {"attn_mask": m}):
        ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, **kw)
        ours = F.scaled_dot_product_attention(to_cb(q), to_cb(k), to_cb(v), **{n: to_cb(x) for n, x in kw.items()})
        assert_same(ours, ref, atol=1e-5)
