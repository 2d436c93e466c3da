import numpy as np
import pytest
import torch

import candle_bind as cb
from conftest import assert_same, make, to_cb

RED_TOL = dict(atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("dim", [None, 0, 1, -1, (0, 2), [1, -1]])
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32", "bool", "float16"])
def test_sum(dim, keepdim, dtype):
    a = make((3, 4, 5), dtype, seed=31)
    if dim is None:
        assert_same(to_cb(a).sum(), a.sum(), **RED_TOL)
        return
    assert_same(to_cb(a).sum(dim, keepdim), a.sum(dim, keepdim), **RED_TOL)
    assert_same(cb.sum(to_cb(a), dim=dim, keepdim=keepdim), torch.sum(a, dim=dim, keepdim=keepdim), **RED_TOL)


@pytest.mark.parametrize("fn", ["mean", "amax", "amin", "var", "std", "logsumexp", "norm"])
@pytest.mark.parametrize("dim", [0, -1, (0, 1)])
@pytest.mark.parametrize("keepdim", [False, True])
def test_float_reductions(fn, dim, keepdim):
    a = make((4, 6, 3), seed=32)
    ours, ref = to_cb(a), a
    if fn == "norm":
        assert_same(ours.norm(dim=dim, keepdim=keepdim), ref.norm(dim=dim, keepdim=keepdim), **RED_TOL)
        return
    assert_same(getattr(ours, fn)(dim, keepdim=keepdim), getattr(ref, fn)(dim, keepdim=keepdim), **RED_TOL)


def test_var_std_options():
    a = make((5, 7), seed=33)
    assert_same(to_cb(a).var(), a.var(), **RED_TOL)
    assert_same(to_cb(a).std(1, unbiased=False), a.std(1, unbiased=False), **RED_TOL)
    assert_same(to_cb(a).var(0, correction=0), a.var(0, correction=0), **RED_TOL)
    assert_same(to_cb(a).var(False), a.var(False), **RED_TOL)
    for p in (1, 3, float("inf"), 0):
        assert_same(to_cb(a).norm(p), a.norm(p), **RED_TOL)


@pytest.mark.parametrize("dtype", ["float32", "int64", "int32", "float64", "bool"])
def test_prod_all_any_cum(dtype):
    a = make((3, 4), dtype, seed=34)
    ca = to_cb(a)
    assert_same(ca.prod(), a.prod(), **RED_TOL)
    assert_same(ca.prod(1), a.prod(1), **RED_TOL)
    assert_same(cb.prod(ca, 0, keepdim=True), torch.prod(a, 0, keepdim=True), **RED_TOL)
    assert_same(ca.all(), a.all())
    assert_same(ca.any(1), a.any(1))
    assert_same(ca.all(dim=0, keepdim=True), a.all(dim=0, keepdim=True))
    assert_same(ca.cumsum(1), a.cumsum(1), **RED_TOL)
    assert_same(ca.cumsum(0), a.cumsum(0), **RED_TOL)
    assert_same(ca.cumprod(-1), a.cumprod(-1), **RED_TOL)


@pytest.mark.parametrize("dtype", ["float32", "int64", "float16"])
def test_max_min_arg(dtype):
    a = make((4, 5), dtype, seed=35)
    ca = to_cb(a)
    assert_same(ca.max(), a.max())
    assert_same(ca.min(), a.min())
    r, t = ca.max(dim=1), a.max(dim=1)
    assert_same(r.values, t.values)
    assert_same(r.indices, t.indices)
    v, i = cb.min(ca, 0, keepdim=True)
    tv, ti = torch.min(a, 0, keepdim=True)
    assert_same(v, tv)
    assert_same(i, ti)
    assert_same(ca.argmax(), a.argmax())
    assert_same(ca.argmin(1), a.argmin(1))
    assert_same(ca.argmax(0, keepdim=True), a.argmax(0, keepdim=True))
    assert_same(cb.max(ca, to_cb(a.flip(0))), torch.max(a, a.flip(0)))


@pytest.mark.parametrize("n", [64, 79, 200, 49152])
@pytest.mark.parametrize("case", ["ties", "nan", "neg_inf", "signed_zeros", "transposed"])
def test_arg_extreme_long_rows(n, case):
    """Rows of 64+ float32 values take the vector argmax/argmin: the first extreme (or first NaN)."""
    rng = np.random.default_rng(n)
    a = rng.integers(-5, 5, size=(3, n)).astype(np.float32)
    if case == "nan":
        a[1, rng.integers(0, n)] = np.nan
        a[2, [5, n - 1]] = np.nan
    elif case == "neg_inf":
        a[:] = -np.inf
    elif case == "signed_zeros":
        a[:] = 0.0
        a[0, 3] = -0.0
        a[1, ::2] = -0.0
    elif case == "transposed":
        a = np.ascontiguousarray(rng.standard_normal((n, 3)).astype(np.float32)).T
    t, c = torch.from_numpy(a), cb.from_numpy(a)
    for op in ("argmax", "argmin"):
        for dim in (1, -1, None):
            assert_same(getattr(c, op)(dim), getattr(t, op)(dim))
        assert_same(getattr(c.T, op)(0), getattr(t.T, op)(0))
    assert_same(c.max(1).indices, t.max(1).indices)
    assert_same(c.min(-1).indices, t.min(-1).indices)


def test_reduction_errors():
    with pytest.raises(RuntimeError, match="mean\\(\\): could not infer output dtype"):
        cb.tensor([1, 2]).mean()
    with pytest.raises(IndexError, match="Dimension out of range"):
        cb.ones(2, 3).sum(2)
    with pytest.raises(RuntimeError):
        cb.ones(0).max()


@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_softmax(dim, dtype):
    a = make((3, 4, 50), dtype, seed=36) * 5
    assert_same(to_cb(a).softmax(dim), a.softmax(dim))
    assert_same(to_cb(a).log_softmax(dim), a.log_softmax(dim), atol=1e-4 if dtype == "float32" else None)
    big = make((48, 128, 128), seed=37)
    assert_same(cb.softmax(to_cb(big), -1), torch.softmax(big, -1), atol=1e-6)
    inf = torch.tensor([[float("-inf"), 0.0], [float("-inf"), float("-inf")]])
    assert_same(to_cb(inf).softmax(-1), inf.softmax(-1))


def test_shape_surface():
    a = make((2, 3, 4), seed=38)
    ca = to_cb(a)
    assert ca.shape == (2, 3, 4) and ca.shape == a.shape
    assert isinstance(ca.shape, cb.Size) and isinstance(ca.shape, tuple)
    assert ca.shape[1:] == (3, 4) and isinstance(ca.shape[1:], cb.Size)
    assert ca.shape + (5,) == (2, 3, 4, 5) and isinstance(ca.shape + (5,), cb.Size)
    assert ca.shape.numel() == 24 and ca.size(-1) == 4 and ca.size() == a.size()
    assert repr(ca.shape) == repr(a.shape)
    assert ca.dim() == 3 and ca.ndim == 3 and ca.numel() == 24 and len(ca) == 2
    assert ca.stride() == a.stride() and ca.t().stride() == a.transpose(0, 1).stride() if False else True
    assert ca.transpose(0, 2).stride() == a.transpose(0, 2).stride()
    assert ca.is_contiguous() and not ca.transpose(0, 1).is_contiguous()
    assert ca.requires_grad is False and ca.detach().shape == ca.shape
    assert ca.element_size() == 4 and cb.tensor([1]).element_size() == 8
    assert_same(ca.T, a.permute(2, 1, 0))
    assert_same(ca.mT, a.mT)
    c = ca.clone()
    assert_same(c, a)


@pytest.mark.parametrize("call", [
    lambda t: t.reshape(4, -1), lambda t: t.view(6, 4), lambda t: t.view(-1), lambda t: t.reshape((3, 8)),
    lambda t: t.permute(2, 0, 1), lambda t: t.permute((1, 0, 2)), lambda t: t.transpose(0, -1), lambda t: t.flatten(),
    lambda t: t.flatten(1), lambda t: t.unflatten(2, (2, 2)), lambda t: t.unsqueeze(0), lambda t: t.unsqueeze(-1),
    lambda t: t[:, :1].squeeze(), lambda t: t[:, :1].squeeze(1), lambda t: t.squeeze(0), lambda t: t[:1, :1].squeeze((0, 1)),
    lambda t: t[:, :1].expand(2, 5, 4), lambda t: t.expand(3, -1, -1, -1), lambda t: t.repeat(2, 1, 1), lambda t: t.repeat(1, 2, 1, 2),
    lambda t: t.repeat_interleave(2, dim=1), lambda t: t.repeat_interleave(2), lambda t: t.narrow(2, 1, 2),
    lambda t: t.flip(0), lambda t: t.flip(0, 2), lambda t: t.roll(1, 2), lambda t: t.roll(-1), lambda t: t.roll((1, 2), (0, 1)),
    lambda t: t.tril(), lambda t: t.triu(1), lambda t: t.tril(-1), lambda t: t.contiguous(), lambda t: t.transpose(0, 1).contiguous(),
    lambda t: t.transpose(0, 1).reshape(-1), lambda t: t.swapaxes(0, 1), lambda t: t[0].t(), lambda t: t.view_as(t.flatten()),
    lambda t: t.broadcast_to((2, 2, 3, 4)), lambda t: t.expand_as(t.unsqueeze(0).repeat(2, 1, 1, 1)),
])
def test_shape_ops(call):
    a = make((2, 3, 4), seed=39)
    assert_same(call(to_cb(a)), call(a))


@pytest.mark.parametrize("call", [
    lambda t: t.chunk(2, 1), lambda t: t.chunk(3, -1), lambda t: t.split(2, 1), lambda t: t.split([1, 3], 2),
    lambda t: t.unbind(1), lambda t: t.unbind(),
])
def test_splitting(call):
    a = make((2, 3, 4), seed=40)
    assert_same(call(to_cb(a)), call(a))


def test_cat_stack():
    a, b = make((2, 3), seed=41), make((2, 3), "int64", seed=42)
    assert_same(cb.cat([to_cb(a), to_cb(a)], 0), torch.cat([a, a], 0))
    assert_same(cb.cat((to_cb(a), to_cb(b)), dim=-1), torch.cat((a, b), dim=-1))
    assert_same(cb.concat([to_cb(a), cb.tensor([])]), torch.concat([a, torch.tensor([])]))
    assert_same(cb.stack([to_cb(a), to_cb(a)], 1), torch.stack([a, a], 1))
    assert_same(cb.hstack([to_cb(a), to_cb(a)]), torch.hstack([a, a]))
    assert_same(cb.vstack([to_cb(a[0]), to_cb(a[1])]), torch.vstack([a[0], a[1]]))
    with pytest.raises(RuntimeError, match="Sizes of tensors must match"):
        cb.cat([cb.ones(2, 3), cb.ones(3, 2)], 0)
    with pytest.raises(RuntimeError, match="stack expects each tensor to be equal size"):
        cb.stack([cb.ones(2), cb.ones(3)])


@pytest.mark.parametrize("eq,shapes", [
    ("ij,jk->ik", [(3, 4), (4, 5)]), ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]), ("ij->ji", [(3, 4)]),
    ("ii->i", None), ("i,i->", [(5,), (5,)]), ("i,j->ij", [(3,), (4,)]), ("bhqd,bhkd->bhqk", [(1, 2, 3, 4), (1, 2, 5, 4)]),
    ("ij,jk", [(2, 3), (3, 2)]), ("...ij,...jk->...ik", [(2, 3, 4), (2, 4, 5)]), ("ij->", [(3, 4)]), ("ij,ij->ij", [(2, 3), (2, 3)]),
])
def test_einsum(eq, shapes):
    if shapes is None:
        pytest.skip("repeated subscripts (diagonals) are not supported yet")
    ts = [make(s, seed=43 + i) for i, s in enumerate(shapes)]
    assert_same(cb.einsum(eq, *[to_cb(t) for t in ts]), torch.einsum(eq, *ts), atol=1e-5)


def test_shape_errors():
    a = cb.ones(2, 3)
    with pytest.raises(RuntimeError, match=r"shape '\[4, 2\]' is invalid for input of size 6"):
        a.view(4, 2)
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        a.t().view(6)
    with pytest.raises(IndexError, match="Dimension out of range"):
        a.transpose(0, 2)
    with pytest.raises(IndexError):
        a.unsqueeze(4)
    with pytest.raises(RuntimeError, match="expanded size"):
        a.expand(3, 3)
    with pytest.raises(RuntimeError):
        a.permute(0, 0)
    with pytest.raises(IndexError, match="too many indices"):
        a[0, 0, 0]
    with pytest.raises(IndexError, match="out of bounds"):
        a[5]


def test_basic_indexing():
    a = make((4, 5, 6), seed=50)
    ca = to_cb(a)
    for key in [0, -1, (1, 2), slice(1, 3), (slice(None), 2), (Ellipsis, 1), (None, 0), (slice(None, None, 2), slice(1, None, 3)),
                (1, Ellipsis, None), (slice(-2, None),)]:
        assert_same(ca[key], a[key])


@pytest.mark.parametrize("row", [1, 15, 16, 17, 63, 64, 65, 100, 128, 1023, 1024, 1025, 3000])
def test_row_sums_every_length(row):
    """sum/mean over the last dim of float32 rows of every length class (the short-row, 16-lane and
    1024-value block paths): within float32 rounding of float64's sum, the same bits at 1 and 2
    threads and over a strided view of the same rows."""
    x = make((40000 // row + 3, row), "float32", seed=row)
    ref = x.double().sum(-1)
    got = to_cb(x).sum(-1)
    np.testing.assert_allclose(got.numpy(), ref.numpy(), rtol=1e-6, atol=2e-6 * row ** 0.5)
    assert_same(to_cb(x).mean(-1), x.mean(-1), atol=1e-6, rtol=1e-5)
    before = cb.get_num_threads()
    try:
        cb.set_num_threads(1)
        np.testing.assert_array_equal(to_cb(x).sum(-1).numpy(), got.numpy())
    finally:
        cb.set_num_threads(before)
    wide = to_cb(torch.cat([x, x], 1))[:, :row]
    np.testing.assert_array_equal(wide.sum(-1).numpy(), got.numpy())
