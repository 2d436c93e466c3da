"""MultiheadAttention and the Transformer family against torch (eval mode, state_dict transfer)."""

import pytest
import torch

import candle_bind as cb
from candle_bind import nn
from conftest import assert_same, check_layer, make, to_cb


def pair(name, *args, **kwargs):
    torch.manual_seed(0)
    return getattr(torch.nn, name)(*args, **kwargs), getattr(nn, name)(*args, **kwargs)


def randomize(m):
    g = torch.Generator().manual_seed(3)
    with torch.no_grad():
        for _, p in m.named_parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.2)
    return m


@pytest.mark.parametrize("kw", [{}, {"batch_first": True}, {"bias": False}, {"add_bias_kv": True}, {"add_zero_attn": True},
                                {"kdim": 6, "vdim": 5}])
def test_multihead_attention(kw):
    t, c = pair("MultiheadAttention", 8, 2, **kw)
    randomize(t)
    assert list(c.state_dict()) == list(t.state_dict())
    c.load_state_dict(t.state_dict())
    t.eval(), c.eval()
    L, S, N = 4, 6, 3
    bf = kw.get("batch_first", False)
    shape = lambda l, d: (N, l, d) if bf else (l, N, d)  # noqa: E731
    q, k, v = make(shape(L, 8), seed=1), make(shape(S, kw.get("kdim", 8)), seed=2), make(shape(S, kw.get("vdim", 8)), seed=3)
    masks = [dict(), dict(attn_mask=torch.rand(L, S, generator=torch.Generator().manual_seed(4)) > 0.7),
             dict(attn_mask=torch.randn(L, S, generator=torch.Generator().manual_seed(5))),
             dict(key_padding_mask=torch.tensor([[False] * S, [False] * (S - 2) + [True] * 2, [False] * S])),
             dict(average_attn_weights=False)]
    for m in masks:
        with torch.no_grad():
            ro, rw = t(q, k, v, **m)
        co, cw = c(to_cb(q), to_cb(k), to_cb(v), **{n: to_cb(x) if isinstance(x, torch.Tensor) else x for n, x in m.items()})
        assert_same(co, ro, atol=1e-5)
        assert_same(cw, rw, atol=1e-5)


def test_multihead_attention_unbatched_and_no_weights():
    t, c = pair("MultiheadAttention", 8, 4)
    randomize(t)
    c.load_state_dict(t.state_dict())
    x = make((5, 8), seed=6)
    with torch.no_grad():
        ro, rw = t(x, x, x)
    co, cw = c(to_cb(x), to_cb(x), to_cb(x))
    assert_same(co, ro, atol=1e-5)
    assert_same(cw, rw, atol=1e-5)
    assert c(to_cb(x), to_cb(x), to_cb(x), need_weights=False)[1] is None


@pytest.mark.parametrize("kw", [{}, {"batch_first": True}, {"bias": False, "batch_first": True}])
def test_multihead_self_attention_without_weights(kw):
    # ViT's call (x, x, x, need_weights=False): one q/k/v product and the fused SDPA, as torch's fast path
    t, c = pair("MultiheadAttention", 16, 4, **kw)
    randomize(t)
    c.load_state_dict(t.state_dict())
    t.eval(), c.eval()
    for shape in [(3, 7, 16), (1, 1, 16), (2, 33, 16)]:
        x = make(shape, seed=9)
        with torch.no_grad():
            ro, _ = t(x, x, x, need_weights=False)
        cx = to_cb(x)
        co, cw = c(cx, cx, cx, need_weights=False)
        assert cw is None
        assert_same(co, ro, atol=1e-5)
        # a transposed (non-contiguous) input
        xt = make(shape[::-1][:1] + shape[:2], seed=10).permute(1, 2, 0)
        with torch.no_grad():
            ro, _ = t(xt, xt, xt, need_weights=False)
        cxt = to_cb(xt.permute(2, 0, 1)).permute(1, 2, 0)
        assert_same(c(cxt, cxt, cxt, need_weights=False)[0], ro, atol=1e-5)
    with pytest.raises(RuntimeError, match="passed-in embed_dim 16 didn't match last dim of query 8"):
        bad = cb.zeros(2, 3, 8)
        c(bad, bad, bad, need_weights=False)


@pytest.mark.parametrize("kw", [{}, {"norm_first": True}, {"activation": "gelu", "batch_first": True}, {"bias": False}])
def test_encoder_decoder_layers(kw):
    te, ce = pair("TransformerEncoderLayer", 8, 2, dim_feedforward=16, dropout=0.1, **kw)
    randomize(te)
    bf = kw.get("batch_first", False)
    src = make((3, 5, 8) if bf else (5, 3, 8), seed=7)
    mask = torch.nn.Transformer.generate_square_subsequent_mask(5)
    check_layer(te, ce, src, mask, atol=1e-5)
    td, cd = pair("TransformerDecoderLayer", 8, 2, dim_feedforward=16, **kw)
    randomize(td)
    tgt = make((3, 4, 8) if bf else (4, 3, 8), seed=8)
    check_layer(td, cd, tgt, src, atol=1e-5)


@pytest.mark.filterwarnings("ignore:enable_nested_tensor is True")
def test_full_transformer_and_stack():
    t, c = pair("Transformer", d_model=8, nhead=2, num_encoder_layers=2, num_decoder_layers=2, dim_feedforward=16)
    randomize(t)
    assert list(c.state_dict()) == list(t.state_dict())
    src, tgt = make((6, 2, 8), seed=9), make((4, 2, 8), seed=10)
    tm = torch.nn.Transformer.generate_square_subsequent_mask(4)
    assert_same(nn.Transformer.generate_square_subsequent_mask(4), tm)
    check_layer(t, c, src, tgt, None, tm, atol=1e-4)
    layer_t = torch.nn.TransformerEncoderLayer(8, 2, 16)
    torch.manual_seed(0)
    enc_t = torch.nn.TransformerEncoder(layer_t, 3, norm=torch.nn.LayerNorm(8), enable_nested_tensor=False)
    enc_c = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16), 3, norm=nn.LayerNorm(8))
    randomize(enc_t)
    check_layer(enc_t, enc_c, src, atol=1e-4)
