"""F.interpolate / Upsample and both weight-norm APIs against torch."""

import pytest
import torch

import candle_bind as cb
from candle_bind import nn
import candle_bind.nn.functional as F
from conftest import assert_same, check_layer, make, to_cb

SIZES = [dict(size=(9, 4)), dict(scale_factor=2), dict(scale_factor=1.7), dict(scale_factor=(0.6, 1.5)),
         dict(scale_factor=1.7, recompute_scale_factor=True)]


@pytest.mark.parametrize("mode", ["nearest", "nearest-exact", "bilinear", "bicubic", "area"])
@pytest.mark.parametrize("kw", SIZES, ids=[str(i) for i in range(len(SIZES))])
def test_interpolate_2d(mode, kw):
    x = make((2, 3, 5, 7), seed=1)
    for ac in ([None] if mode in ("nearest", "nearest-exact", "area") else [False, True]):
        assert_same(F.interpolate(to_cb(x), mode=mode, align_corners=ac, **kw),
                    torch.nn.functional.interpolate(x, mode=mode, align_corners=ac, **kw), atol=1e-5)


@pytest.mark.parametrize("mode,shape", [("linear", (2, 3, 9)), ("nearest", (2, 3, 9)), ("trilinear", (1, 2, 3, 4, 5)),
                                        ("nearest", (1, 2, 3, 4, 5)), ("area", (1, 2, 6, 4, 5))])
def test_interpolate_1d_3d(mode, shape):
    x = make(shape, seed=2)
    n = len(shape) - 2
    for kw in [dict(scale_factor=2), dict(size=[5] * n)]:
        for ac in ([None] if mode in ("nearest", "area") else [False, True]):
            assert_same(F.interpolate(to_cb(x), mode=mode, align_corners=ac, **kw),
                        torch.nn.functional.interpolate(x, mode=mode, align_corners=ac, **kw), atol=1e-5)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.uint8])
@pytest.mark.parametrize("shape,kw", [((2, 3, 9), dict(scale_factor=2)), ((2, 3, 6, 7), dict(size=(6, 11))),
                                      ((1, 2, 5, 4), dict(scale_factor=(0.6, 2.5))), ((1, 2, 3, 4, 5), dict(size=(6, 4, 3))),
                                      ((4, 8, 16, 16), dict(scale_factor=2))])
def test_interpolate_nearest_one_pass(dtype, shape, kw):
    """Nearest modes gather every dim in one pass, in the input's dtype: each dtype torch takes, a dim
    left as it is, down- and upscaling, a non-contiguous input, enough planes for the pool."""
    x = (torch.rand(shape, generator=torch.Generator().manual_seed(7)) * 200).to(dtype)
    for mode in ["nearest", "nearest-exact"]:
        strided = to_cb(x.transpose(-1, -2).contiguous()).transpose(-1, -2)
        for c in [to_cb(x), strided]:
            assert_same(F.interpolate(c, mode=mode, **kw), torch.nn.functional.interpolate(x, mode=mode, **kw))


def test_upsample_modules():
    x = make((1, 2, 4, 5), seed=3)
    for t, c in [(torch.nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True), nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True)),
                 (torch.nn.UpsamplingNearest2d(scale_factor=3), nn.UpsamplingNearest2d(scale_factor=3)),
                 (torch.nn.UpsamplingBilinear2d(size=(7, 3)), nn.UpsamplingBilinear2d(size=(7, 3)))]:
        check_layer(t, c, x, atol=1e-5)
        assert repr(c) == repr(t)
    with pytest.raises(ValueError, match="only one of size or scale_factor"):
        F.interpolate(cb.zeros(1, 1, 4, 4))
    with pytest.raises(ValueError, match="align_corners"):
        F.interpolate(cb.zeros(1, 1, 4, 4), scale_factor=2, align_corners=True)


@pytest.mark.filterwarnings("ignore:.*weight_norm.* is deprecated")
@pytest.mark.parametrize("dim", [0, 1, None])
def test_weight_norm_both_apis(dim):
    torch.manual_seed(0)
    t = torch.nn.utils.weight_norm(torch.nn.Conv1d(3, 4, 3), dim=dim)
    c = nn.utils.weight_norm(nn.Conv1d(3, 4, 3), dim=dim)
    assert list(c.state_dict()) == list(t.state_dict())
    x = make((2, 3, 8), seed=4)
    check_layer(t, c, x, atol=1e-5)
    t2 = torch.nn.utils.parametrizations.weight_norm(torch.nn.ConvTranspose1d(3, 4, 3), dim=0 if dim is None else dim)
    c2 = nn.utils.parametrizations.weight_norm(nn.ConvTranspose1d(3, 4, 3), dim=0 if dim is None else dim)
    assert list(c2.state_dict()) == list(t2.state_dict())
    check_layer(t2, c2, x, atol=1e-5)
    nn.utils.remove_weight_norm(c)
    assert list(c.state_dict()) == ["bias", "weight"]
    with torch.no_grad():
        ref = t(x)
    assert_same(c(to_cb(x)), ref, atol=1e-5)


def test_pack_pad_sequences():
    seqs = [make((5, 3), seed=5), make((2, 3), seed=6), make((4, 3), seed=7)]
    tp = torch.nn.utils.rnn.pad_sequence(seqs, batch_first=True)
    cp = nn.utils.rnn.pad_sequence([to_cb(s) for s in seqs], batch_first=True)
    assert_same(cp, tp)
    lengths = [5, 2, 4]
    tpk = torch.nn.utils.rnn.pack_padded_sequence(tp, lengths, batch_first=True, enforce_sorted=False)
    cpk = nn.utils.rnn.pack_padded_sequence(cp, lengths, batch_first=True, enforce_sorted=False)
    assert_same(cpk.data, tpk.data)
    assert_same(cpk.batch_sizes, tpk.batch_sizes)
    out, lens = nn.utils.rnn.pad_packed_sequence(cpk, batch_first=True)
    tout, tlens = torch.nn.utils.rnn.pad_packed_sequence(tpk, batch_first=True)
    assert_same(out, tout)
    assert_same(lens, tlens)


@pytest.mark.parametrize("align_corners", [False, True])
def test_affine_grid_and_grid_sample(align_corners):
    theta = torch.tensor([[[0.9, -0.3, 0.1], [0.2, 1.1, -0.2]], [[1.3, 0.0, 0.4], [0.0, 0.7, 0.3]]])
    size = (2, 3, 5, 6)
    g = torch.nn.functional.affine_grid(theta, size, align_corners=align_corners)
    cg = F.affine_grid(to_cb(theta), size, align_corners=align_corners)
    assert_same(cg, g, atol=1e-6)
    x = make(size, seed=9)
    for mode in ["bilinear", "nearest"]:
        for pad in ["zeros", "border", "reflection"]:
            ref = torch.nn.functional.grid_sample(x, g, mode=mode, padding_mode=pad, align_corners=align_corners)
            ours = F.grid_sample(to_cb(x), cg, mode=mode, padding_mode=pad, align_corners=align_corners)
            assert_same(ours, ref, atol=1e-5)
    t3 = torch.randn(1, 3, 4, generator=torch.Generator().manual_seed(0))
    assert_same(F.affine_grid(to_cb(t3), (1, 1, 2, 3, 4), align_corners=align_corners),
                torch.nn.functional.affine_grid(t3, (1, 1, 2, 3, 4), align_corners=align_corners), atol=1e-6)


@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
def test_grid_sample_volume(mode, align_corners):
    """5-D input: trilinear, nearest and torch's tricubic, points inside and outside the volume."""
    x = make((2, 3, 3, 4, 5), seed=3)
    g = torch.rand(2, 2, 3, 4, 3, generator=torch.Generator().manual_seed(4)) * 2.6 - 1.3
    for pad in ["zeros", "border", "reflection"]:
        ref = torch.nn.functional.grid_sample(x, g, mode=mode, padding_mode=pad, align_corners=align_corners)
        ours = F.grid_sample(to_cb(x), to_cb(g), mode=mode, padding_mode=pad, align_corners=align_corners)
        assert_same(ours, ref, atol=1e-5)


def test_pad_circular_negative_and_embedding_bag_negative_padding_idx():
    x = make((1, 3, 4, 5))
    for pad in ([-1, 1, -2, 1], [1, -2, 0, 0], [-1, -1, 2, -1]):
        assert_same(F.pad(to_cb(x), pad, mode="circular"), torch.nn.functional.pad(x, pad, mode="circular"))
    w, idx, offsets = make((5, 4), seed=1), torch.tensor([0, 4, 2, 4, 1, 3]), torch.tensor([0, 3])
    for mode in ("sum", "mean", "max"):
        ref = torch.nn.functional.embedding_bag(idx, w, offsets, mode=mode, padding_idx=-1)
        assert_same(F.embedding_bag(to_cb(idx), to_cb(w), to_cb(offsets), mode=mode, padding_idx=-1), ref, atol=1e-6)


def test_resample_nearest_rejects_bad_arguments():
    """The native one-pass gather checks its arguments: a Python exception, never a crash."""
    from candle_bind import _C
    x = cb.ones(1, 1, 3)
    for index in ([], [[0], [0]], [[3]], [[0, 5, 1]]):
        with pytest.raises(RuntimeError, match="resample_nearest"):
            _C.resample_nearest(x, index)
    assert tuple(_C.resample_nearest(x, [[]]).shape) == (1, 1, 0)
    assert tuple(_C.resample_nearest(cb.ones(0, 1, 3), [[0, 1]]).shape) == (0, 1, 2)
