"""float16/bfloat16 composites computed as torch's CPU kernels do (float32 "opmath", rounded once), and
torch's result-dtype rules for uint8/int8/bool where a native method differs. Compared live against torch
with torch.testing's half tolerances (f16 rtol 1e-3, bf16 rtol 1.6e-2)."""

import math

import numpy as np
import pytest
import torch

import candle_bind as cb

TOL = {"float16": (1e-5, 1e-3), "bfloat16": (1e-5, 1.6e-2), "float32": (1e-5, 1.3e-6)}
HALF = ("float16", "bfloat16")


def _cb(x):
    return cb.from_torch(x) if isinstance(x, torch.Tensor) else x


def _same(got, want, dtype_name):
    assert isinstance(got, cb.Tensor), type(got)
    assert tuple(got.shape) == tuple(want.shape)
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    atol, rtol = TOL.get(dtype_name, (0.0, 0.0))
    g = cb.to_torch(got).double().numpy()
    w = want.double().numpy()
    assert np.array_equal(np.isnan(g), np.isnan(w))
    assert np.allclose(g, w, rtol=rtol, atol=atol, equal_nan=True), np.nanmax(np.abs(g - w))


def _inputs(dt, n=3):
    g = torch.Generator().manual_seed(0)
    return [(torch.randn(5, 10, 5, generator=g) * 4).to(dt) for _ in range(n)]


# (name, fn(m, a, b, c)): composites over tensor ops that torch computes in float32 for half inputs
HALF_OPS = [
    ("addcmul", lambda m, a, b, c: m.addcmul(a, b, c, value=0.7)),
    ("addcdiv", lambda m, a, b, c: m.addcdiv(a, b, c.abs() + 1)),
    ("addcmul_", lambda m, a, b, c: a.clone().addcmul_(b, c)),
    ("lerp", lambda m, a, b, c: m.lerp(a, b, 0.4)),
    ("lerp_tensor", lambda m, a, b, c: a.lerp(b, c.sigmoid())),
    ("lerp_", lambda m, a, b, c: a.clone().lerp_(b, 0.3)),
    ("logaddexp", lambda m, a, b, c: m.logaddexp(a, b)),
    ("logaddexp2", lambda m, a, b, c: a.logaddexp2(b)),
    ("fmod", lambda m, a, b, c: m.fmod(a, b.abs() + 0.5)),
    ("exp2", lambda m, a, b, c: m.exp2(a)),
    ("asinh", lambda m, a, b, c: m.asinh(a)),
    ("atan2", lambda m, a, b, c: m.atan2(a, b)),
    ("hypot", lambda m, a, b, c: m.hypot(a, b)),
    ("logcumsumexp", lambda m, a, b, c: m.logcumsumexp(a, 1)),
    ("log_softmax_last", lambda m, a, b, c: m.log_softmax(a, -1)),
    ("log_softmax_mid", lambda m, a, b, c: a.log_softmax(1)),
    ("F.log_softmax", lambda m, a, b, c: m.nn.functional.log_softmax(a, dim=2)),
    ("group_norm", lambda m, a, b, c: m.nn.functional.group_norm(a, 5)),
    ("interpolate_bilinear", lambda m, a, b, c: m.nn.functional.interpolate(
        a.unsqueeze(0), size=(7, 3), mode="bilinear", align_corners=True)),
    ("dist", lambda m, a, b, c: m.dist(a, b, 3)),
]


@pytest.mark.parametrize("dt", HALF)
@pytest.mark.parametrize("name,fn", HALF_OPS, ids=[n for n, _ in HALF_OPS])
def test_half_composites(name, fn, dt):
    a, b, c = _inputs(getattr(torch, dt))
    _same(fn(cb, _cb(a), _cb(b), _cb(c)), fn(torch, a, b, c), dt)


@pytest.mark.parametrize("dt", HALF)
def test_half_edges(dt):
    tdt = getattr(torch, dt)
    cases = [
        lambda m, x: m.log_softmax(x, 0),  # 0-dim
        lambda m, x: x.reshape(2, 3)[:, ::2].log_softmax(-1),  # non-contiguous
        lambda m, x: m.lerp(x, x * 0, 0.5),
        lambda m, x: m.addcmul(x, x, x[:1]),  # broadcast
        lambda m, x: m.logaddexp(x, m.tensor(float("-inf")).to(x.dtype)),
    ]
    for i, f in enumerate(cases):
        x = torch.tensor([1.5, -2.25, 3.0, float("inf"), -0.5, 0.0], dtype=tdt)
        x = x[0] if i == 0 else x
        _same(f(cb, _cb(x)), f(torch, x), dt)


def test_half_mixed_with_float32_promotes():
    # a float32 tensor with dims sets the result dtype: no rounding back to half
    a = torch.randn(4, dtype=torch.float16)
    b = torch.randn(4)
    _same(cb.addcmul(_cb(a), _cb(b), _cb(b)), torch.addcmul(a, b, b), "float32")
    # a 0-dim float32 does not promote a half tensor with dims
    s = torch.tensor(0.25)
    _same(cb.atan2(_cb(a), _cb(s)), torch.atan2(a, s), "float16")


def test_half_out_and_explicit_dtype():
    a = torch.randn(3, 4, dtype=torch.float16)
    out = torch.empty(3, 4, dtype=torch.float16)
    cout = cb.empty(3, 4, dtype=cb.float16)
    r = cb.addcmul(_cb(a), _cb(a), _cb(a), out=cout)
    torch.addcmul(a, a, a, out=out)
    assert r is cout
    _same(cout, out, "float16")
    _same(cb.log_softmax(_cb(a), 1, dtype=cb.float32), torch.log_softmax(a, 1, dtype=torch.float32), "float32")


def test_float32_path_untouched():
    a = torch.randn(3, 4)
    _same(cb.lerp(_cb(a), _cb(a * 2), 0.25), torch.lerp(a, a * 2, 0.25), "float32")
    _same(cb.log_softmax(_cb(a), 1), torch.log_softmax(a, 1), "float32")


def test_logit_eps_over_half():
    # torch's kernel: x < eps -> eps, else x > 1 - eps -> 1 - eps (a clamp with min > max would differ)
    x = torch.tensor([0.1, 0.45, 0.5, 0.55, 0.9])
    for eps in (0.6, 0.2, None):
        _same(cb.logit(_cb(x), eps), torch.logit(x, eps), "float32")
    xi = torch.tensor([0, 1, 2])
    _same(cb.logit(_cb(xi), 0.6), torch.logit(xi, 0.6), "float32")
    xh = x.half()
    _same(cb.logit(_cb(xh), 0.3), torch.logit(xh, 0.3), "float16")


# ---- small ints, uint8 and bool ----


@pytest.mark.parametrize("fn", ["all", "any"])
def test_all_any_uint8_is_uint8(fn):
    x = torch.tensor([[1, 0, 3], [2, 2, 0]], dtype=torch.uint8)
    for args in ((), (1,), (0, True)):
        _same(getattr(cb, fn)(_cb(x), *args), getattr(torch, fn)(x, *args), "uint8")
        _same(getattr(_cb(x), fn)(*args), getattr(x, fn)(*args), "uint8")
    b = x.bool()
    _same(getattr(cb, fn)(_cb(b)), getattr(torch, fn)(b), "bool")
    i = x.long()
    _same(getattr(cb, fn)(_cb(i), 1), getattr(torch, fn)(i, 1), "bool")
    e = torch.zeros(0, dtype=torch.uint8)
    _same(getattr(cb, fn)(_cb(e)), getattr(torch, fn)(e), "uint8")


@pytest.mark.parametrize("dt", ["int8", "int16", "int32", "uint8", "int64"])
def test_bincount_int_dtypes(dt):
    x = torch.tensor([1, 2, 2, 5, 0], dtype=getattr(torch, dt))
    _same(cb.bincount(_cb(x)), torch.bincount(x), "int64")
    _same(_cb(x).bincount(minlength=8), x.bincount(minlength=8), "int64")
    w = torch.tensor([0.5, 1.0, 2.0, 0.25, 3.0])
    _same(cb.bincount(_cb(x), _cb(w)), torch.bincount(x, w), "float32")
    with pytest.raises(RuntimeError):
        cb.bincount(cb.tensor([1.0, 2.0]))


def test_bincount_negative_int8_raises():
    with pytest.raises(RuntimeError):
        cb.bincount(cb.tensor([1, -1], dtype=cb.int8))


def test_square_bool():
    x = torch.tensor([True, False, True])
    _same(cb.square(_cb(x)), torch.square(x), "int64")
    _same(_cb(x).square(), x.square(), "int64")
    with pytest.raises(RuntimeError):
        _cb(x).clone().square_()
    y = torch.tensor([-3, 4], dtype=torch.int8)
    _same(_cb(y).square(), y.square(), "int8")
    t = _cb(y).clone()
    t.square_()
    _same(t, y.clone().square_(), "int8")


def test_nan_and_inf_in_half():
    x = torch.tensor([math.inf, -math.inf, math.nan, 60000.0], dtype=torch.float16)
    y = torch.tensor([1.0, 2.0, 3.0, 60000.0], dtype=torch.float16)
    for f in (lambda m, a, b: m.logaddexp(a, b), lambda m, a, b: m.hypot(a, b),
              lambda m, a, b: m.addcmul(a, b, b), lambda m, a, b: m.lerp(a, b, 0.5)):
        _same(f(cb, _cb(x), _cb(y)), f(torch, x, y), "float16")


@pytest.mark.parametrize("dt", ["uint8", "int8", "int16", "int32", "int64"])
def test_index_add_alpha_wraps(dt):
    tdt = getattr(torch, dt)
    x = torch.tensor([3, 4, 5], dtype=tdt)
    src = torch.tensor([5, 6], dtype=tdt)
    idx = torch.tensor([0, 2])
    for alpha in (-1, -2, 2, 40):
        _same(cb.index_add(_cb(x), 0, _cb(idx), _cb(src), alpha=alpha), torch.index_add(x, 0, idx, src, alpha=alpha), dt)
        t = _cb(x).clone()
        r = t.index_add_(0, _cb(idx), _cb(src), alpha=alpha)
        assert r is t
        _same(t, x.clone().index_add_(0, idx, src, alpha=alpha), dt)
    if dt == "uint8":
        with pytest.raises(RuntimeError):
            cb.index_add(_cb(x), 0, _cb(idx), _cb(src), alpha=300)


@pytest.mark.parametrize("dt", HALF)
def test_linspace_logspace_half(dt):
    # torch rounds the ends to the dtype and steps in float32, rounding each value once
    m = getattr(torch, dt)
    for args in [(4.3, -3, 50), (0, 10, 7), (-5.5, 8.25, 101), (0.1, 0.7, 3), (2, 2, 1), (1, 5, 0)]:
        _same(cb.linspace(*args, dtype=getattr(cb, dt)), torch.linspace(*args, dtype=m), dt)
        for base in (10.0, 2.0):
            _same(cb.logspace(*args, base=base, dtype=getattr(cb, dt)), torch.logspace(*args, base=base, dtype=m), dt)


# torch's half interpolation kernels: linear/trilinear/bicubic keep their weights in the input's dtype,
# bilinear keeps float32 ones; area mode and adaptive_avg_pool3d sum in the input's dtype.
RESIZE = [
    ("linear", (2, 3, 7), dict(size=[11], mode="linear", align_corners=False)),
    ("linear_scale", (2, 3, 4), dict(scale_factor=1.7, mode="linear", align_corners=True)),
    ("bilinear", (1, 2, 5, 6), dict(size=[7, 4], mode="bilinear", align_corners=False)),
    ("bicubic", (1, 2, 5, 6), dict(size=[7, 9], mode="bicubic", align_corners=True)),
    ("trilinear", (1, 2, 4, 3, 5), dict(size=[5, 4, 6], mode="trilinear", align_corners=False)),
    ("area3d", (1, 2, 4, 4, 5), dict(size=[3, 3, 3], mode="area")),
]


@pytest.mark.parametrize("dt", HALF)
@pytest.mark.parametrize("name,shape,kw", RESIZE, ids=[r[0] for r in RESIZE])
def test_half_interpolate(name, shape, kw, dt):
    g = torch.Generator().manual_seed(1)
    x = (torch.randn(*shape, generator=g) * 5).to(getattr(torch, dt))
    _same(cb.nn.functional.interpolate(_cb(x), **kw), torch.nn.functional.interpolate(x, **kw), dt)


@pytest.mark.parametrize("dt", HALF)
def test_half_adaptive_avg_pool3d(dt):
    g = torch.Generator().manual_seed(2)
    x = (torch.randn(2, 6, 8, 7, generator=g) * 3).to(getattr(torch, dt))
    for size in ([5, 7, 4], [3, 2, 3], [6, 8, 7]):
        _same(cb.nn.functional.adaptive_avg_pool3d(_cb(x), size), torch.nn.functional.adaptive_avg_pool3d(x, size), dt)
    xs = x[:, ::2]  # non-contiguous
    _same(cb.nn.functional.adaptive_avg_pool3d(_cb(xs), 2), torch.nn.functional.adaptive_avg_pool3d(xs, 2), dt)


@pytest.mark.parametrize("dt", ["float32", "float16", "bfloat16"])
def test_bce_with_logits_torch_composite(dt):
    # torch's composite (1 - t) x - w_pos log σ(x), each step rounded in half (no float32 opmath there)
    g = torch.Generator().manual_seed(3)
    m = getattr(torch, dt)
    x = (torch.randn(6, 7, generator=g) * 4).to(m)
    x[0, 0], x[0, 1] = 30.0, -30.0
    t = torch.rand(6, 7, generator=g).to(m)
    w = torch.rand(6, 7, generator=g).to(m)
    pw = torch.rand(7, generator=g).to(m)
    F, G = torch.nn.functional, cb.nn.functional
    for kw in (dict(reduction="none"), dict(weight=w, reduction="none"), dict(pos_weight=pw, reduction="none"),
               dict(reduction="mean"), dict(pos_weight=pw, weight=w, reduction="sum")):
        ckw = {k: _cb(v) for k, v in kw.items()}
        _same(G.binary_cross_entropy_with_logits(_cb(x), _cb(t), **ckw), F.binary_cross_entropy_with_logits(x, t, **kw), dt)


@pytest.mark.parametrize("dt", HALF)
def test_half_log_softmax_nonfinite_rows(dt):
    inf, nan = math.inf, math.nan
    x = torch.tensor([[0.0, -inf], [-inf, -inf], [inf, 1.0], [3.0, nan], [2.0, 2.0]], dtype=getattr(torch, dt))
    for d in (1, 0, -1):
        _same(_cb(x).log_softmax(d), x.log_softmax(d), dt)
