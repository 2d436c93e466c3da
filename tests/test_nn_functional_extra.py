"""Parity with live torch for the less common nn.functional entries: margin/embedding losses, CTC, max unpooling,
fractional max pooling (with given samples), pdist, the deprecated upsample_* and multi_head_attention_forward."""

import pytest
import torch
import torch.nn.functional as TF

import candle_bind as cb
from conftest import assert_same, make, to_cb

F = cb.nn.functional


def _both(name, *args, **kwargs):
    conv = lambda v: to_cb(v) if isinstance(v, torch.Tensor) else v  # noqa: E731
    want = getattr(TF, name)(*args, **kwargs)
    got = getattr(F, name)(*[conv(a) for a in args], **{k: conv(v) for k, v in kwargs.items()})
    assert_same(got, want, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_pairwise_losses(reduction):
    x, y = make((4, 5), "float32"), make((4, 5), "float32", seed=1)
    sign = torch.tensor([1.0, -1.0, 1.0, -1.0])
    _both("margin_ranking_loss", x[:, 0], y[:, 0], sign, margin=0.3, reduction=reduction)
    _both("cosine_embedding_loss", x, y, sign, margin=0.2, reduction=reduction)
    _both("cosine_embedding_loss", x[0], y[0], torch.tensor(-1.0), reduction=reduction)
    _both("hinge_embedding_loss", x, torch.where(y > 0, 1.0, -1.0), margin=0.5, reduction=reduction)
    _both("soft_margin_loss", x, torch.where(y > 0, 1.0, -1.0), reduction=reduction)
    _both("multilabel_soft_margin_loss", x, (y > 0).float(), weight=torch.rand(5), reduction=reduction)
    _both("gaussian_nll_loss", x, y, x.abs() + 0.1, full=True, reduction=reduction)
    _both("gaussian_nll_loss", x, y, x[:, 0].abs(), reduction=reduction)
    _both("poisson_nll_loss", x, y.abs(), reduction=reduction)
    _both("poisson_nll_loss", x.abs(), y.abs() * 3, log_input=False, full=True, reduction=reduction)
    _both("triplet_margin_loss", x, y, x.flip(0), margin=0.7, p=1, swap=True, reduction=reduction)
    _both("triplet_margin_with_distance_loss", x, y, x.flip(0), swap=True, reduction=reduction)
    _both("multi_margin_loss", x, torch.tensor([0, 4, 2, 1]), reduction=reduction)
    _both("multi_margin_loss", x, torch.tensor([0, 4, 2, 1]), p=2, margin=0.5, weight=torch.rand(5), reduction=reduction)
    _both("multilabel_margin_loss", x, torch.tensor([[3, 0, -1, 1, 2], [1, 2, 3, 4, 0], [-1, 0, 0, 0, 0],
                                                     [4, 4, -1, 2, 2]]), reduction=reduction)
    _both("multilabel_margin_loss", x[0], torch.tensor([3, 0, -1, 1, 2]), reduction=reduction)


def test_custom_distance_and_legacy_args():
    x, y, z = (make((3, 4), "float32", seed=s) for s in range(3))
    dist = lambda a, b: 1 - TF.cosine_similarity(a, b)  # noqa: E731
    want = TF.triplet_margin_with_distance_loss(x, y, z, distance_function=dist)
    got = F.triplet_margin_with_distance_loss(to_cb(x), to_cb(y), to_cb(z),
                                              distance_function=lambda a, b: 1 - F.cosine_similarity(a, b))
    assert_same(got, want, atol=1e-5, rtol=1e-4)
    _both("soft_margin_loss", x, torch.sign(y), size_average=False)


@pytest.mark.parametrize("bias,k_dims", [(True, ()), (False, (2,))])
def test_linear_cross_entropy(bias, k_dims):
    x, w = make((4, 6), "float32"), make((5, *k_dims, 6), "float32", seed=1)
    b = make((5, *k_dims), "float32", seed=2) if bias else None
    target = torch.randint(0, 5, (4, *k_dims))
    want = TF.linear_cross_entropy(x, w, target, linear_bias=b, label_smoothing=0.1)
    got = F.linear_cross_entropy(to_cb(x), to_cb(w), to_cb(target), linear_bias=None if b is None else to_cb(b),
                                 label_smoothing=0.1)
    assert_same(got, want, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_ctc_loss(reduction):
    T, N, C = 12, 3, 5
    lp = make((T, N, C), "float64").log_softmax(2)
    targets = torch.tensor([[1, 2, 2, 3], [4, 1, 0, 0], [3, 3, 3, 1]])
    in_len, tg_len = torch.tensor([12, 9, 7]), torch.tensor([4, 2, 4])
    _both("ctc_loss", lp, targets, in_len, tg_len, reduction=reduction)
    flat = torch.cat([targets[i, :tg_len[i]] for i in range(N)])
    _both("ctc_loss", lp, flat, (12, 9, 7), (4, 2, 4), blank=0, reduction=reduction)
    # an impossible alignment: infinite, or zero with zero_infinity
    _both("ctc_loss", lp[:3], targets, torch.tensor([3, 3, 3]), tg_len, reduction=reduction, zero_infinity=True)
    _both("ctc_loss", lp[:, 0], targets[0], torch.tensor(12), torch.tensor(4), reduction=reduction)


@pytest.mark.parametrize("n", [1, 2, 3])
def test_max_unpool_inverts_max_pool(n):
    x = make((2, 3) + (6,) * n, "float32")
    pool, unpool = getattr(TF, f"max_pool{n}d"), f"max_unpool{n}d"
    out, idx = pool(x, 2, stride=2, return_indices=True)
    _both(unpool, out, idx, 2)
    _both(unpool, out, idx, 2, stride=2, output_size=(7,) * n)
    _both(unpool, out[0], idx[0], kernel_size=2)


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
def test_fractional_max_pool_with_samples(dtype):
    x = make((2, 3, 9, 11), dtype)
    s = torch.rand(2, 3, 2, dtype=x.dtype)
    _both("fractional_max_pool2d", x, 3, output_size=(4, 5), return_indices=True, _random_samples=s)
    _both("fractional_max_pool2d", x[0], (2, 3), output_ratio=(0.5, 0.5), _random_samples=s[:1])
    x3 = make((1, 2, 7, 8, 6), dtype)
    s3 = torch.rand(1, 2, 3, dtype=x.dtype)
    _both("fractional_max_pool3d", x3, 2, output_size=(3, 4, 2), return_indices=True, _random_samples=s3)
    # without samples: random windows, so shape, dtype and that every value comes from its window's input
    out, idx = F.fractional_max_pool2d(to_cb(x), 3, output_size=(4, 5), return_indices=True)
    assert tuple(out.shape) == (2, 3, 4, 5) and idx.dtype == cb.int64
    assert (to_cb(x).reshape(2, 3, -1).gather(2, idx.reshape(2, 3, -1)).reshape(2, 3, 4, 5) == out).all().item()


def test_pdist_and_upsample():
    x = make((5, 3), "float64")
    for p in (2, 1, 0, 3.5, float("inf")):
        _both("pdist", x, p)
    _both("pdist", make((1, 3), "float32"))
    img = make((1, 2, 3, 4), "float32")
    with pytest.warns(UserWarning):
        _both("upsample_nearest", img, scale_factor=2)
    with pytest.warns(UserWarning):
        _both("upsample_bilinear", img, size=(5, 7))


@pytest.mark.parametrize("batched", [True, False])
@pytest.mark.parametrize("need_weights", [True, False])
def test_multi_head_attention_forward(batched, need_weights):
    L, S, N, E, H = 3, 4, 2, 8, 2
    q = make((L, N, E) if batched else (L, E), "float32")
    k = make((S, N, E) if batched else (S, E), "float32", seed=1)
    w_in, b_in = make((3 * E, E), "float32", seed=2) * 0.3, make((3 * E,), "float32", seed=3)
    w_out, b_out = make((E, E), "float32", seed=4) * 0.3, make((E,), "float32", seed=5)
    bias_k, bias_v = make((1, 1, E), "float32", seed=6), make((1, 1, E), "float32", seed=7)
    kpm = torch.tensor([[False, True, False, False], [False] * 4]) if batched else torch.tensor([False, True, False, False])
    mask = torch.zeros(L, S).masked_fill(torch.tensor([[0, 0, 1, 0]] * L).bool(), float("-inf"))
    for extra in ({}, {"key_padding_mask": kpm, "attn_mask": mask}, {"add_zero_attn": True, "bias": True}):
        bias = extra.pop("bias", False)
        extra = dict(extra)
        args = (q, k, k, E, H, w_in, b_in, bias_k if bias else None, bias_v if bias else None,
                extra.pop("add_zero_attn", False), 0.0, w_out, b_out)
        want = TF.multi_head_attention_forward(*args, training=False, need_weights=need_weights, **extra)
        conv = lambda v: to_cb(v) if isinstance(v, torch.Tensor) else v  # noqa: E731
        got = F.multi_head_attention_forward(*[conv(a) for a in args], training=False, need_weights=need_weights,
                                             **{a: conv(b) for a, b in extra.items()})
        assert_same(got[0], want[0], atol=1e-4, rtol=1e-4)
        assert (got[1] is None) == (want[1] is None)
        if want[1] is not None:
            assert_same(got[1], want[1], atol=1e-5, rtol=1e-4)


def test_errors_match_torch_types():
    x, t = to_cb(make((3, 4), "float32")), cb.tensor([0, 1, 2])
    cases = [
        (ValueError, lambda: F.multi_margin_loss(x, t, p=3)),
        (RuntimeError, lambda: F.multi_margin_loss(x, cb.tensor([0, 1, 9]))),
        (RuntimeError, lambda: F.multilabel_margin_loss(x, t)),
        (RuntimeError, lambda: F.cosine_embedding_loss(x, x, cb.ones(3, 1))),
        (RuntimeError, lambda: F.margin_ranking_loss(x, x, cb.ones(3))),
        (ValueError, lambda: F.triplet_margin_loss(x, x, x, margin=0)),
        (ValueError, lambda: F.gaussian_nll_loss(x, x, cb.ones(2))),
        (ValueError, lambda: F.gaussian_nll_loss(x, x, -cb.ones(3, 4))),
        (ValueError, lambda: F.poisson_nll_loss(x, x, reduction="bad")),
        (RuntimeError, lambda: F.pdist(x[0])),
        (RuntimeError, lambda: F.max_unpool2d(x.reshape(1, 1, 3, 4), t.reshape(1, 1, 1, 3), 2)),
        (RuntimeError, lambda: F.max_unpool2d(x.reshape(1, 1, 3, 4), cb.zeros(1, 1, 3, 4, dtype=cb.int32), 2)),
        (ValueError, lambda: F.max_unpool2d(x.reshape(1, 1, 3, 4), cb.zeros(1, 1, 3, 4, dtype=cb.int64), 2,
                                            output_size=(1, 1))),
        (ValueError, lambda: F.fractional_max_pool2d(x.reshape(1, 1, 3, 4), 2)),
        (RuntimeError, lambda: F.fractional_max_pool2d(x.reshape(1, 1, 3, 4), 3, output_size=3)),
        (RuntimeError, lambda: F.linear_cross_entropy(x, cb.ones(5, 3), t)),
        (RuntimeError, lambda: F.ctc_loss(x.reshape(3, 1, 4), cb.tensor([[1]]), [3], [1], blank=7)),
    ]
    for exc, call in cases:
        with pytest.raises(exc):
            call()


def test_modules():
    x, y = make((4, 5), "float32"), make((4, 5), "float32", seed=1)
    sign = torch.where(y > 0, 1.0, -1.0)
    cases = [("MultiMarginLoss", (2, 0.5), (x, torch.tensor([0, 4, 2, 1]))),
             ("PoissonNLLLoss", (False, True), (x.abs(), y.abs())),
             ("TripletMarginLoss", (0.5, 1.0), (x, y, x.flip(0))),
             ("SoftMarginLoss", (), (x, sign)),
             ("HingeEmbeddingLoss", (0.3,), (x, sign)),
             ("MultiLabelSoftMarginLoss", (torch.rand(5),), (x, (y > 0).float()))]
    for name, args, inputs in cases:
        conv = lambda v: to_cb(v) if isinstance(v, torch.Tensor) else v  # noqa: E731
        want = getattr(torch.nn, name)(*args, reduction="sum")(*inputs)
        got = getattr(cb.nn, name)(*[conv(a) for a in args], reduction="sum")(*[conv(v) for v in inputs])
        assert_same(got, want, atol=1e-5, rtol=1e-4)
    img = make((1, 2, 6, 6), "float32")
    out, idx = TF.max_pool2d(img, 2, return_indices=True)
    assert_same(cb.nn.MaxUnpool2d(2)(to_cb(out), to_cb(idx)), torch.nn.MaxUnpool2d(2)(out, idx))
    s = torch.rand(1, 2, 2)
    assert_same(cb.nn.FractionalMaxPool2d(2, output_ratio=0.5, _random_samples=to_cb(s))(to_cb(img)),
                torch.nn.FractionalMaxPool2d(2, output_ratio=0.5, _random_samples=s)(img))


@pytest.mark.parametrize("name", ["silu", "mish", "hardsigmoid", "hardswish", "relu", "relu6", "hardtanh"])
@pytest.mark.parametrize("case", ["big", "small", "offset_view", "transposed", "float64", "bfloat16"])
def test_activation_inplace(name, case):
    """F.<act>(x, inplace=True) writes x's own memory and returns x (one pass over contiguous float32, split
    over the threads past 32K elements; other layouts and dtypes compute and copy back), with the values of
    the out-of-place call; a view at an offset writes its base's storage, as torch's."""
    shape = (8, 96, 70) if case != "small" else (3, 5)
    base = make(shape, seed=7) * 4
    if case == "float64":
        base = base.double()
    if case == "bfloat16":
        base = base.bfloat16()
    tb, cbase = base.clone(), to_cb(base)
    pick = {"offset_view": lambda t: t[1:], "transposed": lambda t: t.transpose(0, 2)}.get(case, lambda t: t)
    tx, cx = pick(tb), pick(cbase)
    want = getattr(TF, name)(tx.clone())
    got = getattr(cb.nn.functional, name)(cx, inplace=True)
    getattr(TF, name)(tx, inplace=True)
    assert got is cx
    assert_same(cx, tx)
    assert_same(cbase, tb)
    assert_same(got, want)


@pytest.mark.parametrize("bounds", [(-0.5, 0.5), (None, 0.25), (-1, None), (0.5, -0.5), (0, 6), (float("nan"), 1.0)])
@pytest.mark.parametrize("layout", ["big", "small", "offset_view", "transposed"])
def test_clamp_number_bounds(bounds, layout):
    """clamp/clamp_/clip_ of float32 by Python numbers (one pass; clamp_ in the tensor's own memory when it
    is contiguous): NaN stays, min > max gives max, an int bound keeps float32, a NaN bound as torch; views at an
    offset write their base."""
    x = make((8, 96, 70) if layout != "small" else (3, 5), seed=9) * 3
    x.view(-1)[:4] = torch.tensor([float("nan"), float("inf"), -float("inf"), 0.0])
    lo, hi = bounds
    tb, cbase = x.clone(), to_cb(x)
    pick = {"offset_view": lambda t: t[1:], "transposed": lambda t: t.transpose(0, -1)}.get(layout, lambda t: t)
    assert_same(pick(cbase).clamp(lo, hi), pick(tb).clamp(lo, hi))
    r = pick(cbase)
    assert r.clamp_(lo, hi) is r
    pick(tb).clamp_(lo, hi)
    assert_same(cbase, tb)
    assert_same(to_cb(x).clip_(lo, hi), x.clone().clip_(lo, hi))
