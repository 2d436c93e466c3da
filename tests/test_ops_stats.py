"""Statistics, calculus, integer/float-bit and random in-place ops (candle_bind/_stats_ops.py, _calculus_ops.py,
_numeric_ops.py, _random_ops.py): each case runs the same call on torch and candle_bind and compares shape,
dtype and values; bad calls must raise torch's exception type."""

import math

import pytest
import torch

import candle_bind as cb
from conftest import assert_same, make, to_cb


def run(fn, *inputs, atol=None, rtol=None):
    ref = fn(torch, *inputs)
    ours = fn(cb, *[to_cb(t) if isinstance(t, torch.Tensor) else t for t in inputs])
    assert_same(ours, ref, atol, rtol)


NAN = float("nan")
X = make((4, 6))
# (an all-NaN row has an arbitrary nanmedian index in torch: values only, in test_return_types_and_edges)
XN = torch.tensor([[1.0, NAN, 3.0, 2.0], [NAN, 4.0, NAN, NAN], [5.0, 1.0, 1.0, NAN]])
I = make((3, 7), "int64")
TIES = torch.tensor([[3, 1, 3, 2, 1, 3], [0, 0, 4, 4, 2, 2]])
CASES = {
    "cov": (lambda L, x: (L.cov(x), x.cov(correction=0)), X),
    "cov weights": (lambda L, x, f, a: L.cov(x, fweights=f, aweights=a), X, torch.tensor([1, 2, 0, 3, 1, 1]),
                    torch.rand(6, dtype=torch.float32)),
    "cov 1-d int": (lambda L, x: L.cov(x), make((5,), "int64")),
    "corrcoef": (lambda L, x: (L.corrcoef(x), x.corrcoef(), L.corrcoef(x[0])), X),
    "cummax cummin": (lambda L, x: (L.cummax(x, 1), x.cummin(0), L.cummax(x, -1).indices), TIES),
    "cummax nan bool 0-d": (lambda L, x, b, s: (L.cummax(x, 1), L.cummin(b, 0), L.cummax(s, 0)), XN,
                            make((5,), "bool"), torch.tensor(2.5)),
    "cummax non-contiguous": (lambda L, x: L.cummax(x.t(), 0), X),
    "cumsum_ cumprod_": (lambda L, x: (x.clone().cumsum_(1), x.clone().cumprod_(-1)), X),
    "mode": (lambda L, x: (L.mode(x), x.mode(0, keepdim=True), L.mode(x.float(), 1)), TIES),
    "nanmedian": (lambda L, x: (L.nanmedian(x), x.nanmedian(1), L.nanmedian(x, 0, keepdim=True)), XN),
    "nanmedian int": (lambda L, x: (L.nanmedian(x), L.nanmedian(x, -1)), I),
    "nanquantile all-NaN row": (lambda L, x: L.nanquantile(x, 0.5, dim=1), torch.tensor([[NAN, NAN], [1.0, 2.0]])),
    "nanquantile": (lambda L, x, q: (L.nanquantile(x, 0.3, dim=1), x.nanquantile(q, dim=0, keepdim=True),
                                     L.nanquantile(x, 0.5, interpolation="midpoint"),
                                     L.nanquantile(x, q, dim=1, interpolation="nearest")), XN,
                    torch.tensor([0.0, 0.25, 1.0])),
    "histogram": (lambda L, x: (L.histogram(x, 5), x.histogram(3, range=(-1.0, 1.0), density=True)), X),
    "histogram edges weight": (lambda L, x, e, w: L.histogram(x, e, weight=w), make((6,)),
                               torch.tensor([-3.0, -1.0, 0.5, 3.0]), torch.rand(6)),
    "histogram constant": (lambda L, x: L.histogram(x, 4), torch.ones(5)),
    "histogramdd": (lambda L, x, w: (L.histogramdd(x, [2, 3]), L.histogramdd(x, 2, weight=w, density=True)),
                    make((10, 2)), torch.rand(10)),
    "trapezoid": (lambda L, y, x: (L.trapezoid(y), L.trapezoid(y, x), L.trapezoid(y, dx=0.5, dim=0),
                                   L.trapz(y, x), L.trapz(y, dx=2.0)), X, torch.arange(6.0) ** 2),
    "trapezoid int empty": (lambda L, y, e: (L.trapezoid(y), L.trapezoid(e)), I, torch.zeros(3, 0)),
    "cumulative_trapezoid": (lambda L, y, x: (L.cumulative_trapezoid(y), L.cumulative_trapezoid(y, x),
                                              L.cumulative_trapezoid(y, dx=0.25, dim=0)), X, torch.arange(6.0) ** 2),
    "gradient": (lambda L, y: (L.gradient(y), L.gradient(y, spacing=2.0, dim=1),
                               L.gradient(y, spacing=[1.5, 0.5], edge_order=2)), X),
    "gradient coordinates": (lambda L, y, c0, c1: (L.gradient(y, spacing=[c0, c1], dim=[0, -1]),
                                                   L.gradient(y, spacing=[c0], dim=0, edge_order=2)),
                             X, torch.tensor([0.0, 1.0, 1.5, 3.5]), torch.arange(6.0) ** 1.5),
    "gradient int": (lambda L, y: L.gradient(y, dim=1), I),
    "renorm": (lambda L, x: (L.renorm(x, 2, 0, 1.0), x.renorm(1, 1, 2.0), x.clone().renorm_(3, -1, 0.5)), X),
    "dist": (lambda L, a, b: (a.dist(b), a.dist(b, 1), L.dist(a, b, float("inf"))), X, make((6,), seed=3)),
    "gcd lcm": (lambda L, a, b: (L.gcd(a, b), a.lcm(b), a.clone().gcd_(b)), torch.tensor([0, 4, -6, 9, 0, 12]),
                torch.tensor([0, 6, 4, -3, 5, -18])),
    "gcd int8 broadcast": (lambda L, a, b: L.gcd(a, b), torch.tensor([[12], [-8]], dtype=torch.int8),
                           torch.tensor([18, 6, 0], dtype=torch.int8)),
    "shifts": (lambda L, a, b: (L.bitwise_left_shift(a, b), a.bitwise_right_shift(b), a << 3, a >> 1, 3 << b,
                                a.clone().bitwise_left_shift_(b)),
               torch.tensor([5, -3, 7, 1, -9, 1 << 40]), torch.tensor([1, 64, -1, 63, 2, 20])),
    "shifts small ints": (lambda L, a, b: (L.bitwise_left_shift(a, b), L.bitwise_right_shift(a, b)),
                          torch.tensor([-100, 100, 3], dtype=torch.int8), torch.tensor([9, 1, -1], dtype=torch.int8)),
    "shifts uint8": (lambda L, a, b: (a << b, a >> b), torch.tensor([200, 3, 255], dtype=torch.uint8),
                     torch.tensor([1, 9, 7], dtype=torch.uint8)),
    "frexp": (lambda L, x: (L.frexp(x), x.frexp(), L.frexp(x[0, 0])), X * 100),
    "frexp specials": (lambda L, x: L.frexp(x), torch.tensor([0.0, -0.0, 1.0, -0.75, 1e-40, 3e38])),
    "ldexp": (lambda L, x, e: (L.ldexp(x, e), x.ldexp(e.double()), x.clone().ldexp_(e)), X, make((6,), "int64")),
    "ldexp int half": (lambda L, a, e, h: (L.ldexp(a, e), L.ldexp(h, e)), make((3,), "int64"),
                       torch.tensor([1, 2, 3], dtype=torch.int32), torch.ones(3, dtype=torch.float16)),
    "nextafter": (lambda L, a, b: (L.nextafter(a, b), a.double().nextafter(b.double()), L.nextafter(a[0], b[0])),
                  torch.tensor([0.0, 1.0, -1.0, 2.0, 0.0, NAN, 3.0]), torch.tensor([1.0, 2.0, -2.0, 2.0, -1.0, 0.0, -5.0])),
    "nextafter half": (lambda L, a, b: (L.nextafter(a.half(), b.half()), L.nextafter(a.bfloat16(), b.bfloat16())),
                       torch.tensor([0.0, 1.0, -1.0, 2.0, 0.0, 65504.0]), torch.tensor([1.0, 2.0, -2.0, 2.0, -1.0, 0.0])),
    "heaviside_ addr_": (lambda L, x, v, a, b: (x.clone().heaviside_(v), x.clone().addr_(a, b)),
                         torch.tensor([[-1.0, 0.0, 2.0, 0.0, 1.0, -3.0]] * 4), torch.tensor([0.5]), make((4,)),
                         make((6,))),
    "arange fractional into ints": (lambda L: (L.arange(-0.9, 2.1, 2.0, dtype=L.int64),
                                               L.arange(0, 4, 0.5, dtype=L.int32),
                                               L.arange(0.0, -8.0, -4.0, dtype=L.uint8),
                                               L.arange(5, 0, -0.5, dtype=L.int16), L.arange(3.5, dtype=L.int64)),),
}


@pytest.mark.parametrize("name", list(CASES))
def test_matches_torch(name):
    fn, *inputs = CASES[name]
    run(fn, *inputs)


def test_return_types_and_edges():
    r = cb.cummax(cb.tensor([1.0, 3.0, 3.0]), 0)
    assert type(r).__name__ == "cummax" and r.indices.tolist() == [0, 1, 2]
    h = cb.histogram(cb.tensor([1.0, 2.0]), 2)
    assert (h.hist.tolist(), h.bin_edges.tolist()) == ([1.0, 1.0], [1.0, 1.5, 2.0])
    m = cb.mode(cb.tensor([2, 2, 1, 1]))
    assert (m.values.item(), m.indices.item()) == (1, 3)  # the smaller of equally frequent values, its last index
    assert cb.frexp(cb.tensor([8.0])).exponent.dtype == cb.int32
    assert math.isnan(cb.nanmedian(cb.tensor([NAN, NAN])).item())


ERRORS = {
    "cov 3-d": lambda L: L.cov(L.zeros(2, 2, 2)),
    "cov bool": lambda L: L.cov(L.zeros(2, 3, dtype=L.bool)),
    "cov float fweights": lambda L: L.cov(L.ones(2, 3), fweights=L.ones(3)),
    "cov negative aweights": lambda L: L.cov(L.ones(2, 3), aweights=-L.ones(3)),
    "cummax bad dim": lambda L: L.cummax(L.ones(2, 3), 2),
    "nanquantile int": lambda L: L.nanquantile(L.ones(3, dtype=L.int64), 0.5),
    "nanquantile q range": lambda L: L.nanquantile(L.ones(3), 1.5),
    "histogram int": lambda L: L.histogram(L.ones(3, dtype=L.int64), 3),
    "histogram bins dtype": lambda L: L.histogram(L.ones(3), L.ones(3, dtype=L.float64)),
    "trapezoid bool": lambda L: L.trapezoid(L.ones(3, dtype=L.bool)),
    "trapezoid x length": lambda L: L.trapezoid(L.ones(3), L.ones(4)),
    "gradient uint8": lambda L: L.gradient(L.ones(3, dtype=L.uint8)),
    "gradient edge_order": lambda L: L.gradient(L.ones(5), edge_order=3),
    "gradient too short": lambda L: L.gradient(L.ones(2), edge_order=2),
    "gradient spacing length": lambda L: L.gradient(L.ones(3, 3), spacing=[1.0]),
    "renorm 1-d": lambda L: L.renorm(L.ones(3), 2, 0, 1.0),
    "renorm int": lambda L: L.renorm(L.ones(3, 3, dtype=L.int64), 2, 0, 1.0),
    "gcd float": lambda L: L.gcd(L.ones(3), L.ones(3)),
    "gcd scalar": lambda L: L.gcd(L.ones(3, dtype=L.int64), 2),
    "shift float": lambda L: L.ones(3) << 1,
    "shift two numbers": lambda L: L.bitwise_left_shift(2, 3),
    "frexp int": lambda L: L.frexp(L.ones(3, dtype=L.int64)),
    "ldexp scalar": lambda L: L.ldexp(L.ones(3), 2),
    "ldexp_ int": lambda L: L.ones(3, dtype=L.int64).ldexp_(L.ones(3, dtype=L.int64)),
    "nextafter int": lambda L: L.nextafter(L.ones(3, dtype=L.int64), L.ones(3, dtype=L.int64)),
    "exponential_ int": lambda L: L.ones(3, dtype=L.int64).exponential_(),
    "exponential_ lambda": lambda L: L.ones(3).exponential_(-1.0),
    "geometric_ p": lambda L: L.ones(3).geometric_(1.5),
    "log_normal_ std": lambda L: L.ones(3).log_normal_(0.0, -1.0),
    "cauchy_ int": lambda L: L.ones(3, dtype=L.int32).cauchy_(),
    "normal_ std": lambda L: L.ones(3).normal_(0.0, -1.0),
    "arange int step zero": lambda L: L.arange(0, 3, 0.0, dtype=L.int64),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_errors_match_torch(name):
    fn = ERRORS[name]
    with pytest.raises(Exception) as ref:
        fn(torch)
    with pytest.raises(Exception) as ours:
        fn(cb)
    assert isinstance(ours.value, type(ref.value)), (type(ours.value), type(ref.value), str(ours.value))


@pytest.mark.parametrize("name,args,check", [
    ("exponential_", (2.0,), lambda v: (v >= 0).all() and abs(v.mean() - 0.5) < 0.05),
    ("cauchy_", (1.0, 0.5), lambda v: abs(v.median() - 1.0) < 0.05),
    ("log_normal_", (0.0, 0.5), lambda v: (v > 0).all() and abs(v.log().mean()) < 0.05),
    ("geometric_", (0.25,), lambda v: (v >= 1).all() and (v == v.round()).all() and abs(v.mean() - 4.0) < 0.2),
])
@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
def test_random_in_place(name, args, check, dtype):
    """Right distribution, in place, dtype kept; a seeded Generator gives the same numbers twice."""
    t = cb.empty(20000, dtype=getattr(cb, dtype))
    out = getattr(t, name)(*args)
    assert out is t and t.dtype == getattr(cb, dtype)
    assert check(t.double())
    a = getattr(cb.empty(50, dtype=getattr(cb, dtype)), name)(*args, generator=cb.Generator().manual_seed(3))
    b = getattr(cb.empty(50, dtype=getattr(cb, dtype)), name)(*args, generator=cb.Generator().manual_seed(3))
    assert a.tolist() == b.tolist()


def test_geometric_into_ints():
    t = cb.zeros(1000, dtype=cb.int64).geometric_(0.5)
    assert t.dtype == cb.int64 and t.min().item() >= 1
