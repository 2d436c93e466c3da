"""Elementwise results keep their inputs' memory layout as torch's do (TensorIterator's order: a
permuted or transposed input's result has its strides, computed along memory), and reductions over
permuted inputs read memory in order: values, shapes, dtypes and strides against torch."""
import operator
import os

import pytest
import torch

import candle_bind as cb
from conftest import TEST_DEVICE, assert_same, make, to_cb

# The same view on both sides: dense permutations, a transposed matrix, gapped and broadcast views.
VIEWS = {
    "perm0231": ((2, 5, 4, 3), lambda x: x.permute(0, 2, 3, 1)),
    "T": ((7, 33), lambda x: x.T),
    "transpose12": ((2, 3, 5, 4), lambda x: x.transpose(1, 2)),
    "perm_sliced": ((3, 8, 5), lambda x: x.permute(2, 0, 1)[:, :, ::2]),
    "T_step": ((6, 8), lambda x: x.T[::2]),
    "expanded": ((3, 1, 4), lambda x: x.expand(3, 5, 4).transpose(0, 2)),
    "size1_perm": ((2, 1, 4, 5), lambda x: x.permute(0, 2, 3, 1)),
    "empty_perm": ((2, 0, 3), lambda x: x.permute(2, 0, 1)),
    "big_perm": ((2, 16, 40, 48), lambda x: x.permute(0, 2, 3, 1)),  # past the parallel threshold
}


def pair(view, dtype="float32", seed=0, low=-3.0, high=3.0):
    shape, f = VIEWS[view]
    t = make(shape, dtype, seed=seed, low=low, high=high)
    return f(t), f(to_cb(t))


# Strides are torch's on our CPU kernels; the generic Candle paths and other devices give
# contiguous results.
KERNELS = TEST_DEVICE == "cpu" and not os.environ.get("CANDLE_BIND_GENERIC")


def assert_layout(ours, ref):
    """Values as assert_same, and (KERNELS) the strides of every dim longer than 1 as torch's."""
    assert_same(ours, ref)
    if KERNELS and ref.numel() > 0:
        mine = [s for s, n in zip(ours.stride(), ours.shape) if n > 1]
        theirs = [s for s, n in zip(ref.stride(), ref.shape) if n > 1]
        assert mine == theirs, (ours.stride(), ref.stride(), tuple(ref.shape))


UNARY = ["exp", "sin", "cos", "tanh", "sigmoid", "abs", "neg", "floor", "relu", "sqrt", "log", "erf", "isnan"]


@pytest.mark.parametrize("view", VIEWS)
@pytest.mark.parametrize("name", UNARY)
def test_unary_keeps_layout(view, name):
    ref, ours = pair(view, low=0.1 if name in ("sqrt", "log") else -3.0)
    assert_layout(getattr(cb, name)(ours), getattr(torch, name)(ref))


@pytest.mark.parametrize("dtype", ["float64", "float16", "bfloat16", "int64", "int32", "uint8", "bool"])
@pytest.mark.parametrize("view", ["perm0231", "T", "perm_sliced"])
def test_unary_dtypes_keep_layout(view, dtype):
    ref, ours = pair(view, dtype)
    if dtype == "bool":
        assert_layout(~ours, ~ref)
        return
    assert_layout(ours.abs() if dtype != "uint8" else ours.square(), ref.abs() if dtype != "uint8" else ref.square())
    if dtype in ("float64", "float16", "bfloat16"):
        assert_layout(ours.exp(), ref.exp())


@pytest.mark.parametrize("view", ["perm0231", "T", "transpose12", "perm_sliced", "big_perm"])
@pytest.mark.parametrize("name", ["gelu", "silu", "hardswish", "mish", "softplus", "leaky_relu", "elu"])
def test_activations_keep_layout(view, name):
    ref, ours = pair(view)
    assert_layout(getattr(cb.nn.functional, name)(ours), getattr(torch.nn.functional, name)(ref))


OPS = [operator.add, operator.sub, operator.mul, operator.truediv, operator.lt, operator.eq, torch.maximum]


@pytest.mark.parametrize("view", VIEWS)
@pytest.mark.parametrize("op", OPS, ids=lambda o: o.__name__)
def test_binary_both_views(view, op):
    (ra, ca), (rb, cbb) = pair(view, seed=1), pair(view, seed=2)
    ref, ours = op(ra, rb), (op if op is not torch.maximum else cb.maximum)(ca, cbb)
    assert_layout(ours, ref)


@pytest.mark.parametrize("view", ["perm0231", "T", "transpose12", "perm_sliced", "expanded", "big_perm"])
def test_binary_mixed_layouts(view):
    ra, ca = pair(view, seed=3)
    rc = make(tuple(ra.shape), seed=4)
    cc = to_cb(rc)
    # The left operand's order decides (torch's): view + contiguous keeps the view's strides,
    # contiguous + view comes back contiguous.
    assert_layout(ca + cc, ra + rc)
    assert_layout(cc - ca, rc - ra)
    # A broadcast bias over the last dim, numbers on either side, reflected operators.
    rbias = make(tuple(ra.shape[-1:]), seed=5)
    assert_layout(ca * to_cb(rbias), ra * rbias)
    assert_layout(to_cb(rbias) - ca, rbias - ra)
    assert_layout(ca * 2.5, ra * 2.5)
    assert_layout(2 - ca, 2 - ra)
    assert_layout(ca ** 2, ra ** 2)
    assert_layout(ca > 0, ra > 0)


@pytest.mark.parametrize("view", ["perm0231", "T", "perm_sliced", "big_perm"])
def test_where_clamp_cast_keep_layout(view):
    ra, ca = pair(view, seed=6)
    rb, cbb = pair(view, seed=7)
    assert_layout(cb.where(ca > 0, ca, cbb), torch.where(ra > 0, ra, rb))
    assert_layout(cb.where(ca > 0, ca, 0.0), torch.where(ra > 0, ra, 0.0))
    assert_layout(ca.clamp(-1, 1), ra.clamp(-1, 1))
    assert_layout(ca.clamp(min=0.5), ra.clamp(min=0.5))
    for dt in ("float64", "float16", "bfloat16", "int64"):
        assert_layout(ca.to(getattr(cb, dt)), ra.to(getattr(torch, dt)))
    # Tensor bounds keep their own alignment.
    rlo = make(tuple(ra.shape), seed=8) - 1
    assert_same(ca.clamp(min=to_cb(rlo)), ra.clamp(min=rlo))


@pytest.mark.parametrize("view", ["perm0231", "T", "transpose12", "perm_sliced", "big_perm", "size1_perm"])
@pytest.mark.parametrize("keepdim", [False, True])
def test_reductions_over_views(view, keepdim):
    ref, ours = pair(view, "float32", seed=9)
    for dim in range(ref.dim()):
        for name in ("sum", "mean", "amax", "prod"):
            r, o = getattr(ref, name)(dim, keepdim=keepdim), getattr(ours, name)(dim, keepdim=keepdim)
            assert_same(o, r, atol=1e-4, rtol=1e-4)
            assert o.is_contiguous()
        assert_same(ours.var(dim, keepdim=keepdim), ref.var(dim, keepdim=keepdim), atol=1e-4, rtol=1e-4)
    dims = (0, ref.dim() - 1)
    assert_same(ours.sum(dims, keepdim=keepdim), ref.sum(dims, keepdim=keepdim), atol=1e-4, rtol=1e-4)
    assert_same(ours.sum(), ref.sum(), atol=1e-3, rtol=1e-4)
    ri, ci = pair(view, "int64", seed=10)
    assert_same(ci.sum(-1, keepdim=keepdim), ri.sum(-1, keepdim=keepdim))
    rd, cd = pair(view, "float64", seed=11)
    assert_same(cd.mean(0, keepdim=keepdim), rd.mean(0, keepdim=keepdim))


def test_results_of_views_compose():
    # A permuted result flows on: view ops, matmul, in-place updates and reshapes agree with torch.
    t = make((2, 6, 4, 5), seed=12)
    ref, ours = t.permute(0, 2, 3, 1), to_cb(t).permute(0, 2, 3, 1)
    r, o = torch.exp(ref) + 1, cb.exp(ours) + 1
    w = make((6, 3), seed=13)
    assert_same(o @ to_cb(w), r @ w, atol=1e-4, rtol=1e-4)
    assert_same(o.reshape(2, -1), r.reshape(2, -1))
    assert_same(o.permute(0, 3, 1, 2), r.permute(0, 3, 1, 2))
    if KERNELS:
        assert o.permute(0, 3, 1, 2).is_contiguous() == r.permute(0, 3, 1, 2).is_contiguous()
    o.mul_(2)
    r.mul_(2)
    assert_same(o, r)
    assert_same(o.contiguous(), r.contiguous())
    assert_same(o[:, 1:3], r[:, 1:3])
    assert_same(cb.cat([o, o], 1), torch.cat([r, r], 1))
    assert_same(o.flatten(1), r.flatten(1))
    with pytest.raises(RuntimeError):
        r.view(2, -1)
    if KERNELS:
        with pytest.raises(RuntimeError):
            o.view(2, -1)


@pytest.mark.parametrize("dtype", ["float32", "int32", "float16", "int64", "uint8", "bool", "float64"])
@pytest.mark.parametrize("shape,view", [
    ((37, 45), lambda x: x.T),
    ((3, 70, 9), lambda x: x.transpose(1, 2)),
    ((2, 48, 33, 35), lambda x: x.permute(0, 2, 3, 1)),  # past the parallel threshold, tails both ways
    ((5, 40, 41), lambda x: x[1:, 3:, 2:].permute(0, 2, 1)),  # an offset view
    ((64, 9, 130), lambda x: x.permute(2, 0, 1)[:, ::2]),  # a strided outer dim
])
def test_transposing_copies(shape, view, dtype):
    # contiguous(), numpy(), clone and casts of transposed views: the tiled transpose copies.
    t = make(shape, dtype, seed=14)
    ref, ours = view(t), view(to_cb(t))
    assert_same(ours.contiguous(), ref.contiguous())
    assert ours.contiguous().is_contiguous()
    assert_same(ours.clone(), ref.clone())
    assert (ours.cpu().numpy() == (ref.float() if dtype == "bfloat16" else ref).numpy()).all()
    assert_same(ours.reshape(-1), ref.reshape(-1))
    if dtype != "bool":
        assert_same(ours.to(cb.float32), ref.to(torch.float32))


@pytest.mark.parametrize("view", ["perm0231", "T", "transpose12", "big_perm", "perm_sliced"])
def test_in_place_updates_of_views(view):
    # x op= y on a permuted x writes in x's memory order (one pass), into the tensor it views.
    shape, f = VIEWS[view]
    base = make(shape, seed=15)
    cbase = to_cb(base)
    ref, ours = f(base), f(cbase)
    other = make(tuple(ref.shape), seed=16)
    bias = make(tuple(ref.shape[-1:]), seed=17)
    ref += other
    ours += to_cb(other)
    ref *= bias
    ours *= to_cb(bias)
    ref -= 0.5
    ours -= 0.5
    ref /= f(make(shape, seed=18, low=1.0, high=2.0))
    ours /= f(to_cb(make(shape, seed=18, low=1.0, high=2.0)))
    ref += ref
    ours += ours
    assert_same(ours, ref)
    assert_same(cbase, base)


@pytest.mark.parametrize("dtype", ["float32", "int64", "float16", "int32", "uint8"])
def test_binary_one_operand_transposed(dtype):
    # Past the parallel threshold, a contiguous operand with a permuted one (either side): the
    # permuted one goes through the tiled transposing copy first; odd sizes leave tile edges.
    t = make((3, 37, 19, 23), dtype, seed=18)
    c = make((3, 19, 23, 37), dtype, seed=19)
    ref, ours = t.permute(0, 2, 3, 1), to_cb(t).permute(0, 2, 3, 1)
    assert_layout(ours + to_cb(c), ref + c)
    assert_layout(to_cb(c) * ours, c * ref)
    assert_layout(to_cb(c) > ours, c > ref)
    back, cback = c.permute(0, 3, 1, 2), to_cb(c).permute(0, 3, 1, 2)
    assert_layout(to_cb(t) - cback, t - back)
    # In place: a channels-last x updated by a contiguous operand (the operand transposed to x's
    # memory order first), seen through x's base too.
    if dtype in ("float32", "int64", "float16"):
        xb, cxb = c.clone(), to_cb(c.clone())
        x, cx = xb.permute(0, 3, 1, 2), cxb.permute(0, 3, 1, 2)
        x += t
        cx += to_cb(t)
        assert_same(cx, x)
        assert_same(cxb, xb)
