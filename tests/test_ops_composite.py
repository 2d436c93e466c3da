"""torch functions built from other ops (candle_bind/_ops.py): each case runs the same call on torch
and candle_bind (same inputs) and compares shape, dtype and values."""

import math

import pytest
import torch

import candle_bind as cb
from conftest import assert_same, make, to_cb


def run(fn, *inputs, atol=None, rtol=None):
    ref = fn(torch, *inputs)
    ours = fn(cb, *[to_cb(t) if isinstance(t, torch.Tensor) else t for t in inputs])
    if isinstance(ref, bool):
        assert ours is ref or ours == ref
        return
    assert_same(ours, ref, atol, rtol)


A, B = make((3, 4)), make((4, 5), seed=1)
V3 = make((2, 3), seed=2)
CASES = {
    "addmm": (lambda L, i, a, b: L.addmm(i, a, b), make((5,)), A, B),
    "addmm beta alpha": (lambda L, i, a, b: L.addmm(i, a, b, beta=0.5, alpha=-2), make((3, 5)), A, B),
    "addmm beta 0 ignores nan": (lambda L, i, a, b: L.addmm(i * float("nan"), a, b, beta=0), make((3, 5)), A, B),
    "Tensor.addmm": (lambda L, i, a, b: i.addmm(a, b, alpha=3), make((3, 5)), A, B),
    "baddbmm": (lambda L, i, a, b: L.baddbmm(i, a, b, beta=0.0, alpha=0.125), make((2, 3, 5)), make((2, 3, 4)), make((2, 4, 5))),
    "addbmm": (lambda L, i, a, b: L.addbmm(i, a, b), make((3, 5)), make((2, 3, 4)), make((2, 4, 5))),
    "addcmul addcdiv": (lambda L, i, a, b: L.addcdiv(L.addcmul(i, a, b, value=0.5), a, b.abs() + 1, value=-2), make((4,)), make((3, 4)), make((4,))),
    "tensordot int": (lambda L, a, b: L.tensordot(a, b, dims=1), make((2, 3, 4)), make((4, 5))),
    "tensordot lists": (lambda L, a, b: L.tensordot(a, b, dims=([0, 2], [1, 0])), make((2, 3, 4)), make((4, 2, 5))),
    "inner": (lambda L, a, b: L.inner(a, b), make((2, 3)), make((4, 3))),
    "kron": (lambda L, a, b: L.kron(a, b), make((2, 3)), make((3, 2))),
    "cross": (lambda L, a, b: L.cross(a, b, dim=1), V3, make((1, 3), seed=5)),
    "broadcast_tensors": (lambda L, a, b: L.broadcast_tensors(a, b), make((3, 1)), make((4,))),
    "tile": (lambda L, a: a.tile((2,)), make((2, 3))),
    "tile more dims": (lambda L, a: L.tile(a, (2, 1, 2)), make((2, 3))),
    "movedim": (lambda L, a: L.movedim(a, (0, -1), (2, 0)), make((2, 3, 4, 5))),
    "moveaxis": (lambda L, a: a.moveaxis(1, -1), make((2, 3, 4))),
    "select": (lambda L, a: L.select(a, 1, -2), make((2, 3, 4))),
    "tensor_split sections": (lambda L, a: L.tensor_split(a, 3, dim=1), make((2, 7))),
    "tensor_split indices": (lambda L, a: a.tensor_split([1, 5, 9], dim=1), make((2, 7))),
    "column_stack dstack": (lambda L, a, b: (L.column_stack([a, b]), L.dstack([a, b])), make((3,)), make((3,))),
    "meshgrid ij": (lambda L, a, b: L.meshgrid(a, b, indexing="ij"), make((3,)), make((4,))),
    "meshgrid xy": (lambda L, a, b, c: L.meshgrid([a, b, c], indexing="xy"), make((3,)), make((4,)), make((2,))),
    "rot90": (lambda L, a: [L.rot90(a, k, (0, 1)) for k in range(-1, 4)], make((2, 3, 4))),
    "diag of vector": (lambda L, a: [L.diag(a, k) for k in (-2, 0, 1)], make((3,))),
    "diag of matrix": (lambda L, a: [L.diag(a, k) for k in (-1, 0, 2, 5)], make((3, 4))),
    "diagonal": (lambda L, a: [a.diagonal(), a.diagonal(1, 0, 2), L.diagonal(a, -1, -1, 0)], make((3, 4, 5))),
    "diag_embed": (lambda L, a: [L.diag_embed(a), L.diag_embed(a, 1, 0, 2)], make((2, 3))),
    "trace": (lambda L, a: L.trace(a), make((3, 4))),
    "block_diag": (lambda L, a, b: L.block_diag(a, b, a[0]), make((2, 2)), make((1, 3))),
    "cartesian_prod": (lambda L, a, b: L.cartesian_prod(a, b), torch.tensor([1, 2]), torch.tensor([3, 4, 5])),
    "tril/triu_indices": (lambda L: [L.tril_indices(3, 4), L.tril_indices(4, 3, -1), L.triu_indices(3, 4, 1), L.triu_indices(0, 3)],),
    "take": (lambda L, a, i: L.take(a, i), make((3, 4)), torch.tensor([[0, 11], [5, -1]])),
    "as_strided": (lambda L, a: L.as_strided(a, (2, 2), (1, 3), 1), make((3, 4))),
    "diff": (lambda L, a: [L.diff(a), a.diff(n=2, dim=0), L.diff(a, prepend=a[:, :1], append=a[:, -2:])], make((4, 5))),
    "diff bool": (lambda L, a: L.diff(a), make((6,), "bool")),
    "atan2": (lambda L, a, b: L.atan2(a, b), torch.tensor([1.0, -1.0, 1.0, -1.0, 0.0, 2.0, -2.0]), torch.tensor([1.0, 1.0, -1.0, -1.0, 1.0, 0.0, 0.0])),
    "atan2 ints": (lambda L, a, b: L.atan2(a, b), make((5,), "int64"), make((5,), "int64", seed=3)),
    "hypot": (lambda L, a, b: L.hypot(a, b), make((4,)), make((4,), seed=3)),
    "logaddexp": (lambda L, a, b: (L.logaddexp(a, b), L.logaddexp2(a, b)),
                  torch.tensor([0.0, 1.0, -math.inf, math.inf, 50.0, 3.0]), torch.tensor([0.0, -2.0, -math.inf, math.inf, -50.0, 700.0])),
    "exp2 frac sgn": (lambda L, a: (L.exp2(a), L.frac(a), L.sgn(a)), make((6,))),
    "asinh acosh atanh": (lambda L, a, b, c: (L.asinh(a), L.acosh(b), L.atanh(c)), make((6,)), make((6,), low=1, high=9), make((6,), low=-0.99, high=0.99)),
    "float_power": (lambda L, a: (L.float_power(a, 2), a.float_power(0.5)), make((4,), low=0.1)),
    "fmax fmin": (lambda L, a, b: (L.fmax(a, b), L.fmin(a, b)), torch.tensor([1.0, math.nan, 3.0, math.nan]), torch.tensor([2.0, 1.0, math.nan, math.nan])),
    "bitwise_not": (lambda L, a, b: (L.bitwise_not(a), L.bitwise_not(b)), make((4,), "int64"), make((4,), "bool")),
    "logcumsumexp": (lambda L, a: L.logcumsumexp(a, 1), make((3, 5))),
    "equal": (lambda L, a: (L.equal(a, a.clone()), L.equal(a, a + 1), L.equal(a, a[:1])), make((2, 3))),
    "isin": (lambda L, a, b: (L.isin(a, b), L.isin(a, b, invert=True), L.isin(a, 3)), make((3, 4), "int64"), torch.tensor([3, -1, 4, 4])),
    "isin float empty": (lambda L, a, b: L.isin(a, b), make((3,)), torch.zeros(0)),
    "is_nonzero": (lambda L, a: L.is_nonzero(a), torch.tensor([2.0])),
    "can_cast": (lambda L: [L.can_cast(a, b) for a in (L.float32, L.int64, L.bool) for b in (L.float16, L.int32, L.bool)],),
    "cdist": (lambda L, a, b: [L.cdist(a, b, p) for p in (0, 1, 2, 3.5, math.inf)], make((2, 4, 3)), make((2, 5, 3), seed=4)),
    "dist": (lambda L, a, b: [L.dist(a, b, p) for p in (1, 2, math.inf)], make((3, 4)), make((3, 4), seed=4)),
    "aminmax": (lambda L, a: (L.aminmax(a), L.aminmax(a, dim=1, keepdim=True), a.aminmax(dim=0)), make((3, 4))),
    "std_mean var_mean": (lambda L, a: (L.std_mean(a), L.std_mean(a, 1, keepdim=True), L.var_mean(a, (0,), correction=0)), make((3, 4))),
    "nanmean": (lambda L, a: (L.nanmean(a), a.nanmean(1)), torch.tensor([[1.0, math.nan, 3.0], [math.nan, math.nan, 2.0]])),
    "median": (lambda L, a: (L.median(a), a.median(1), a.median(0, keepdim=True)), torch.tensor([[3.0, 1.0, 2.0, 5.0], [4.0, 9.0, 0.0, 1.5], [7.0, 6.0, 8.0, 2.5]])),
    "quantile": (lambda L, a: [L.quantile(a, 0.3), a.quantile(L.tensor([0.0, 0.25, 1.0]), dim=1, keepdim=True)] +
                 [L.quantile(a, 0.4, 0, interpolation=m) for m in ("linear", "lower", "higher", "midpoint", "nearest")], make((5, 6))),
    "unique_consecutive": (lambda L, a: L.unique_consecutive(a, return_inverse=True, return_counts=True), torch.tensor([1, 1, 2, 2, 3, 1, 1, 2])),
    "index_put accumulate": (lambda L, a, i, j: L.index_put(a, (i, j), L.ones(3), accumulate=True), make((3, 4)), torch.tensor([0, 0, 2]), torch.tensor([1, 1, 3])),
    "index_put_": (lambda L, a, i: a.clone().index_put_((i,), a[0] * 0), make((3, 4)), torch.tensor([2])),
    "type": (lambda L, a: (a.type(L.float64), a.type("torch.LongTensor"), a.type(), a.long().type()), make((3,))),
    "in-place forms": (lambda L, a, b: (a.clone().addcmul_(a, b, value=2), a.clone().atan2_(b), a.clone().hypot_(b), a.clone().frac_()), make((3,)), make((3,), seed=7)),
    # torch's alternative names and short elementwise compositions (candle_bind/_pointwise.py)
    "comparison aliases": (lambda L, a, b: [L.greater(a, b), a.greater_equal(b), L.less(a, 0.5), a.less_equal(b),
                                            L.not_equal(a, a.round())], make((3, 4)), make((4,))),
    "absolute arccos arcsin arctan": (lambda L, a: [L.absolute(a), (a / 3).arccos(), L.arcsin(a / 3), L.arctan(a)],
                                      make((3, 4))),
    "fmod float": (lambda L, a, b: [L.fmod(a, b), a.fmod(1.5), L.fmod(-a, 2)], make((3, 4)), make((4,), low=0.5)),
    "fmod int": (lambda L, a: [L.fmod(a, 3), a.fmod(-2)], make((3, 4), "int64", low=-9, high=9)),
    "xlogy": (lambda L, a, b: [L.xlogy(a, b), L.xlogy(a * 0, b), L.xlogy(a, 2.0)], make((3, 4)), make((4,), low=0.1)),
    "logit": (lambda L, a: [L.logit(a), a.logit(eps=1e-3)], make((3, 4), low=0.0, high=1.0)),
    "i0": (lambda L, a: [L.i0(a * 10), a.i0(), L.i0(L.arange(4)), L.i0(a.double())], make((3, 4))),
    "rsub": (lambda L, a, b: [L.rsub(a, b), L.rsub(a, b, alpha=2), L.rsub(a, 1.5)], make((3, 4)), make((4,))),
    "deg2rad rad2deg": (lambda L, a: [L.deg2rad(a), a.rad2deg(), L.deg2rad(a.long())], make((3, 4))),
    "signbit copysign": (lambda L, a, b: [L.signbit(a), L.signbit(a * 0 - 0.0), L.copysign(a, b), a.copysign(-1.0)],
                         make((3, 4)), make((4,))),
    "heaviside": (lambda L, a, v: L.heaviside(a.round(), v), make((3, 4)), make((4,))),
    "addr": (lambda L, i, a, b: [L.addr(i, a, b), i.addr(a, b, beta=0.5, alpha=2)], make((3, 4)), make((3,)),
             make((4,))),
    "histc": (lambda L, a: [L.histc(a, bins=7), L.histc(a, bins=4, min=-1, max=1), a.histc(3, 0, 2)], make((5, 6))),
    "unfold": (lambda L, a: [a.unfold(1, 3, 1), a.unfold(-1, 2, 2), a.unfold(0, 4, 1)], make((4, 7, 5))),
    "to_dense": (lambda L, a: [a.to_dense(), a.to_dense(L.float64)], make((2, 3))),
    "grouped_mm (MoE layout)": (lambda L, x, w: L.nn.functional.grouped_mm(x, w, offs=L.tensor([3, 3, 6], dtype=L.int32))[:6],
                                make((7, 4)), make((3, 4, 4))),
    "out= on mm bmm matmul cat": (lambda L, a, b: _out_cases(L, a, b), make((3, 4)), make((4, 5))),
    # OpInfo samples that failed before (issue 25)
    "unique_consecutive dim": (lambda L, x: [L.unique_consecutive(x, dim=d, return_inverse=True, return_counts=True)
                                             for d in (0, 1, -1)] + [x.bool().unique_consecutive(dim=0)],
                               torch.tensor([[1, 1, 2], [1, 1, 2], [3, 3, 3], [1, 1, 2]])),
    "unique_consecutive dim NaN rows, empty": (lambda L, x: [L.unique_consecutive(x, dim=0, return_counts=True),
                                                             L.unique_consecutive(x[:0], dim=0, return_inverse=True)],
                                               torch.tensor([[float("nan"), 1.0]] * 2 + [[2.0, 1.0]])),
    "conv int64": (lambda L, x, w, b: [L.nn.functional.conv2d(x, w, b, padding=1), L.nn.functional.conv1d(x[0, :, 0], w[..., 0]),
                                      L.nn.functional.conv_transpose2d(x, w.transpose(0, 1), stride=2)],
                   make((1, 2, 4, 5), "int64"), make((3, 2, 3, 3), "int64", seed=1), make((3,), "int64", seed=2)),
    "avg_pool int64 truncates": (lambda L, x: [L.nn.functional.avg_pool1d(x[0], 2), L.nn.functional.avg_pool2d(x, 3, 2, 1),
                                               L.nn.functional.avg_pool3d(x.unsqueeze(0), (1, 2, 2))],
                                 make((1, 2, 4, 5), "int64")),
    "fused adds int: scalars truncated": (lambda L, i, a, b: [L.addmm(i[0], a[0], b[0], beta=0.6, alpha=2.2),
                                                              L.baddbmm(i, a, b, beta=2, alpha=0.2),
                                                              L.addbmm(i[0].int(), a.int(), b.int()),
                                                              L.addmv(i[0, :, 0], a[0], b[0, :, 0], beta=0.2, alpha=3.7)],
                                          make((2, 3, 4), "int64"), make((2, 3, 5), "int64", seed=1), make((2, 5, 4), "int64", seed=2)),
    "addr bool and addr_": (lambda L, i, a, b: [L.addr(i, a, b, beta=3, alpha=2), L.addr(i, a, b, beta=0),
                                               i.float().addr_(a.float(), b.float(), alpha=2)],
                            make((3, 4), "bool"), make((3,), "bool", seed=1), make((4,), "bool", seed=2)),
    "std_mean var_mean forms": (lambda L, x: [L.std_mean(x, None, correction=0, keepdim=True), L.var_mean(x, False),
                                              L.var_mean(x[0], True), L.std_mean(x, (0, 2), keepdim=True)],
                                make((3, 4, 5))),
    "median quantile 0-d with dim": (lambda L, x: [L.median(x, 0, keepdim=True), L.median(x, -1),
                                                   L.quantile(x, 0.5, dim=0), L.quantile(x, 0.3, dim=0, keepdim=True)],
                                     make(())),
    "histc narrow range (input-dtype bin math)": (lambda L, x: [L.histc(x, bins=1000, min=0.0, max=1e-5), x.double().histc(7)],
                                                  torch.tensor([0.0, 3.3e-6, 5e-6, 1e-5, 2e-5, -1.0])),
    "as_strided_ in place": (lambda L, a: (lambda c: [c.as_strided_((2, 3), (1, 2), 1), c])(a.clone()), make((3, 4))),
    "diff n=0 ignores prepend": (lambda L, a: L.diff(a, 0, 0, a[:1], a[:2]), make((4, 5))),
    "tensordot size-1 dims": (lambda L, a, b: [L.tensordot(a, b, dims=[[0, 1], [2, 0]]), L.tensordot(a.int(), b.int(), dims=1)],
                              make((1, 1, 2), "int64"), make((2, 1, 2), "int64", seed=1)),
    "hypot inf nan overflow": (lambda L, a, b: [L.hypot(a, b), a.double().hypot(b.double()), a.clone().hypot_(b)],
                               torch.tensor([-math.inf, 1e30, 0.0, math.nan, 3.0, 1e-30, math.nan]),
                               torch.tensor([1.0, 1e30, 0.0, 1.0, -4.0, 1e-30, math.inf])),
    "index_put accumulate leading dims": (lambda L, x, v: [L.index_put(x, [L.tensor([1, 1, 3])], v, accumulate=True),
                                                           L.index_put(x, [L.tensor([0, 0]), L.tensor([2, 2])], v[0, 0], accumulate=True),
                                                           L.index_put(x.long(), [L.tensor([True, False, True, False])],
                                                                       v[:2].long(), accumulate=True)],
                                          make((4, 5)), make((3, 5), seed=1)),
    "hardtanh relu6 threshold int": (lambda L, x: [L.nn.functional.hardtanh(x, -1.5, 2.5), L.nn.functional.relu6(x * 2),
                                                   L.nn.functional.threshold(x.int(), 1.5, 20.7)],
                                     make((10,), "int64")),
    "prelu 0-d, empty norms": (lambda L, x: [L.nn.functional.prelu(x[0, 0], L.tensor([0.25])),
                                             L.nn.functional.local_response_norm(L.zeros(0, 1, 2, dtype=L.int64), 1),
                                             L.nn.functional.batch_norm(x[0, :0], x[0, :0], x[0, :0], training=True)],
                               make((2, 3)) - 5),
}


def _out_cases(L, a, b):
    out = L.zeros(5, 5)
    r1 = L.mm(a, b, out=out[1:4])
    buf = L.zeros(2, 3, 5)
    L.bmm(L.stack([a, a]), L.stack([b, b]), out=buf)
    cat_out = L.zeros(6, 4)
    L.cat([a, a], 0, out=cat_out)
    return [out, r1, buf, L.matmul(a, b, out=L.empty(3, 5)), cat_out]


@pytest.mark.parametrize("name", list(CASES))
def test_matches_torch(name):
    fn, *inputs = CASES[name]
    run(fn, *inputs, atol=1e-4, rtol=1e-4)


def test_contains_h_and_errors():
    x = cb.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert 3.0 in x and 5 not in x
    assert x.H.tolist() == [[1.0, 3.0], [2.0, 4.0]] and x.is_sparse is False
    with pytest.raises(IndexError, match="out of range"):
        cb.select(x, 0, 2)
    with pytest.raises(RuntimeError, match="mat1 must be a matrix"):
        cb.addmm(x, x[0], x)
    with pytest.raises(RuntimeError, match="contracted dimensions need to match"):
        cb.tensordot(x, cb.ones(3, 2), dims=1)
    with pytest.raises(RuntimeError, match="quantile\\(\\) q values"):
        cb.quantile(x, 1.5)
    with pytest.raises(RuntimeError, match="ambiguous"):
        cb.is_nonzero(x)
    assert cb.normal(2.0, 3.0, size=(1000,)).mean().item() == pytest.approx(2.0, abs=0.4)
    assert tuple(cb.normal(cb.zeros(2, 1), cb.ones(3)).shape) == (2, 3)
    assert cb.randint_like(x, 5).dtype == cb.float32 and tuple(cb.randint_like(x, 5).shape) == (2, 2)


def test_errors_of_the_added_functions_match_torch():
    """Each bad call raises where torch raises, with the same exception type."""
    x, i = make((3, 5)), make((3, 5), "int64")
    bad_calls = [
        lambda L, x, i: x.unfold(1, 6, 1),                      # window larger than the dim
        lambda L, x, i: x.unfold(1, 2, 0),                      # step 0
        lambda L, x, i: L.histc(i, bins=3),                     # integer input
        lambda L, x, i: L.histc(x, bins=3, min=2, max=1),       # max < min
        lambda L, x, i: L.mm(x, x.t(), out=L.zeros(3, 3, dtype=L.float64)),  # out= of the wrong dtype
        lambda L, x, i: L.set_default_dtype(L.int64),           # not a float dtype
    ]
    for call in bad_calls:
        with pytest.raises(Exception) as ref:
            call(torch, x, i)
        with pytest.raises(Exception) as ours:
            call(cb, to_cb(x), to_cb(i))
        assert isinstance(ours.value, type(ref.value)) or issubclass(type(ref.value), type(ours.value)) \
            or isinstance(ours.value, RuntimeError) and isinstance(ref.value, RuntimeError), (ours.value, ref.value)
    assert cb.get_default_dtype() == cb.float32
    # torch resizes an out= tensor of another shape; candle_bind says it does not (README)
    for call in (lambda: cb.mm(to_cb(x), to_cb(x).t(), out=cb.zeros(2, 2)),
                 lambda: cb.cat([to_cb(x)] * 2, out=cb.zeros(5, 5)),
                 lambda: cb.addmm(to_cb(x)[:, :3], to_cb(x), to_cb(x).t()[:, :3], out=cb.zeros(1))):
        with pytest.raises(RuntimeError, match="does not resize out= tensors"):
            call()
    with pytest.raises(NotImplementedError, match="grouped_mm"):
        cb.nn.functional.grouped_mm(cb.ones(2, 3), cb.ones(3, 4))
    with pytest.raises(RuntimeError, match="56 bytes"):
        cb.set_rng_state(cb.zeros(3, dtype=cb.uint8))


def _same_outcome(fn, *inputs):
    """Runs fn on torch and on candle_bind: both raise (the same exception type, torch's message
    start) or both return the same result."""
    try:
        ref = fn(torch, *inputs)
    except Exception as e:  # noqa: BLE001 - any torch error
        with pytest.raises(type(e)) as ours:
            fn(cb, *[to_cb(t) if isinstance(t, torch.Tensor) else t for t in inputs])
        head = str(e).split("\n")[0][:40]
        assert str(ours.value).startswith(head), (str(ours.value), str(e))
        return
    ours = fn(cb, *[to_cb(t) if isinstance(t, torch.Tensor) else t for t in inputs])
    if isinstance(ref, (bool, int)):
        assert ours == ref
    else:
        assert_same(ours, ref, 1e-5, 1e-5)


def _setitem(L, x, key, value):
    x = x.clone()
    x[key] = value
    return x


I3 = torch.tensor([0, 2])
CHECKS = {
    "scatter src dtype": (lambda L, x, i: x.scatter(0, i, x.double()), make((3,)), torch.tensor([0, 1, 2])),
    "scatter_add src dtype": (lambda L, x, i: L.scatter_add(x, 0, i, x.int()), make((3,)), torch.tensor([0, 1, 2])),
    "index_add source dtype": (lambda L, x, i: x.byte().index_add(0, i, x[:2]), make((3,)), I3),
    "index_copy source dtype": (lambda L, x, i: x.double().index_copy(0, i, x[:2]), make((3,)), I3),
    "index_put dtype": (lambda L, x, i: L.index_put(x, (i,), x[:2].double()), make((3,)), I3),
    "index_put accumulate dtype": (lambda L, x, i: x.index_put((i,), x[:2].double(), accumulate=True), make((3,)), I3),
    "setitem index tensor dtype": (lambda L, x, i: _setitem(L, x, i, L.ones((), dtype=L.float64)), make((3,)), I3),
    "setitem bool mask one value": (lambda L, x: _setitem(L, x, x > 0, L.ones(1, dtype=L.float64)), make((3,))),
    "setitem slice other dtype": (lambda L, x: _setitem(L, x, slice(1, None), L.ones(2, dtype=L.float64)), make((3,))),
    "masked_fill overflow": (lambda L, x: x.half().masked_fill(x > 0, 1e30), make((3,))),
    "masked_fill inf in half": (lambda L, x: x.half().masked_fill(x > 0, -math.inf), make((3,))),
    "masked_fill int nan": (lambda L, x: x.long().masked_fill(x > 0, math.nan), make((3,))),
    "new_full overflow": (lambda L, x: x.byte().new_full((2,), 300), make((3,))),
    "new_full negative uint8": (lambda L, x: x.byte().new_full((2,), -1), make((3,))),
    "sub bool alpha": (lambda L, x: x.sub(x, alpha=True), make((3,))),
    "add float alpha on ints": (lambda L, x: x.long().add(x.long(), alpha=0.5), make((3,))),
    "where float condition": (lambda L, x: L.where(x, x, 0.0), make((3,))),
    "Tensor.where float condition": (lambda L, x: x.where(x, 0.0), make((3,))),
    "abs bool": (lambda L, x: L.abs(x > 0), make((3,))),
    "argmax bool": (lambda L, x: (x > 0).argmax(), make((3,))),
    "topk bool": (lambda L, x: (x > 0).topk(1), make((3,))),
    "squeeze repeated dims": (lambda L, x: L.squeeze(x, (1, -1)), make((3, 1))),
    "count_nonzero dim": (lambda L, x: [L.count_nonzero(x.round(), 1), x.round().count_nonzero((0, 1))], make((3, 4))),
    "msort": (lambda L, x: [L.msort(x), x.msort()], make((4, 3))),
    "tensordot negative dims": (lambda L, x: L.tensordot(x, x, dims=-1), make((3,))),
    "rot90 same dims": (lambda L, x: x.rot90(1, [0, -3]), make((2, 3, 4))),
    "rot90 1-D": (lambda L, x: L.rot90(x, 1, [0, 0]), make((3,))),
    "rot90 dims types": (lambda L, x: L.rot90(x, 1, ["0", 1]), make((2, 3))),
    "diff negative n": (lambda L, x: x.diff(n=-1), make((2, 3))),
    "diagonal dim out of range": (lambda L, x: x.diagonal(0, 2, -1), make((2, 3))),
    "diagonal same dims": (lambda L, x: x.diagonal(0, 0, -2), make((2, 3))),
    "addcdiv integers": (lambda L, x: L.addcdiv(x, x.long(), x.long()), make((3,))),
    "addr float alpha on ints": (lambda L, a, b: L.addr(a.long(), b.long(), b.long(), alpha=0.5), make((3, 3)), make((3,))),
    "addmv size mismatch": (lambda L, a, b: L.addmv(b, a, b[:2]), make((3, 2)), make((3,))),
    "addmm input does not broadcast": (lambda L, a, b: a.addmm(b, b.t()[:, :1]), make((3, 3)), make((3, 2))),
    "quantile integer input": (lambda L, x: L.quantile(x.int(), 0.5), make((4,))),
    "logcumsumexp integer": (lambda L, x: L.logcumsumexp(x.short(), 0), make((4,))),
    "cdist bfloat16": (lambda L, x: L.cdist(x.bfloat16(), x.bfloat16()), make((3, 2))),
    "meshgrid dtypes": (lambda L, x: L.meshgrid(x, x.double(), indexing="ij"), make((3,))),
    "cartesian_prod dtypes": (lambda L, x: L.cartesian_prod(x, x.double()), make((3,))),
    "block_diag no args": (lambda L: L.block_diag(),),
    "unique dim": (lambda L, x: L.unique(x.round(), dim=0, return_inverse=True, return_counts=True),
                   torch.tensor([[1.0, 2.0], [0.0, 5.0], [1.0, 2.0], [1.0, 1.0]])),
    "Tensor.unique dim 1": (lambda L, x: x.unique(dim=1, return_counts=True), torch.tensor([[1, 1, 0], [2, 2, 0]])),
    "einsum diagonal": (lambda L, x: [L.einsum("ii->i", x[0]), L.einsum("bii->b", x), L.einsum("ii", x[1])], make((2, 3, 3))),
    "take_along_dim broadcast": (lambda L, x: L.take_along_dim(x, L.zeros(2, 3, dtype=L.int64), dim=0), make((4, 1))),
    "linspace bool": (lambda L: L.linspace(0, 1, 5, dtype=L.bool),),
    "linspace float steps": (lambda L: L.linspace(0, 1, 2.5),),
    "atan2 number": (lambda L, x: L.atan2(x, 0.5), make((3,))),
    "heaviside number": (lambda L, x: L.heaviside(x, 2), make((3,))),
    "allclose number": (lambda L, x: L.allclose(x, 1), make((3,))),
    "permute spread dims": (lambda L, x: L.permute(x, 1, 0), make((2, 3))),
    "permute dims": (lambda L, x: L.permute(x, (1, 0)), make((2, 3))),
    "clamp number and tensor": (lambda L, x: x.clamp(0, x), make((3,))),
    "unique_consecutive positional": (lambda L, x: x.unique_consecutive(0), make((3,))),
    "tile int": (lambda L, x: x.tile(3), make((2, 3))),
    "copy_ number": (lambda L, x: x.clone().copy_(0.5), make((2, 3))),
    "unique_consecutive dim of 0-d": (lambda L, x: L.unique_consecutive(x, dim=0), make(())),
    "unique_consecutive dim, other dim empty": (lambda L, x: L.unique_consecutive(x, dim=0), make((3, 0))),
    "cfloat memory_format": (lambda L, x: x.cfloat(memory_format=L.contiguous_format).shape, make((2, 3))),
}


@pytest.mark.parametrize("name", list(CHECKS))
def test_raises_like_torch(name):
    fn, *inputs = CHECKS[name]
    _same_outcome(fn, *inputs)
