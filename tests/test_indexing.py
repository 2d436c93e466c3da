"""Indexing, assignment and in-place ops against live torch: every key form, view semantics, errors."""

import math

import numpy as np
import pytest
import torch

import candle_bind as cb
from conftest import DTYPES, assert_same, make, to_cb

X = torch.arange(120.0).reshape(2, 3, 4, 5)


def key_for_cb(key):
    """The same key with torch tensors replaced by candle_bind tensors."""
    conv = lambda k: to_cb(k) if isinstance(k, torch.Tensor) else k  # noqa: E731
    return tuple(conv(k) for k in key) if isinstance(key, tuple) else conv(key)


GET_KEYS = [
    0, -1, (1, 2), (0, -1, 3, -5), slice(None), slice(1, None), (slice(None), -1), (Ellipsis, 1), (None, 0, Ellipsis, None),
    (slice(None, None, 2), slice(1, None, 2)), (slice(5, 10),), (slice(-100, 100),), (Ellipsis,), (1, Ellipsis, 2),
    [0, 1], [1, 0, 1], (slice(None), [0, 2]), (0, slice(None), [1, 2]), ([0, 1], slice(None), 0), ([[0], [1]], [0, 2]),
    (slice(None), [0, 1], None, [1, 2]), (Ellipsis, [0, -1]), ([1, 0], [2, 1], [3, 0], [4, 1]), (True,), (False,),
    (slice(None), slice(None), [True, False, True, False]), torch.tensor([1, 0]), torch.tensor(1), torch.tensor([[1], [0]]),
    (torch.tensor([0, 1], dtype=torch.int32), 2), X > 60, (X[..., 0] > 50), (0, X[0, :, :, 0] > 30), ([], ),
    (slice(None), torch.tensor([], dtype=torch.long)),
]


@pytest.mark.parametrize("key", GET_KEYS, ids=[str(i) for i in range(len(GET_KEYS))])
def test_getitem_forms(key):
    assert_same(to_cb(X)[key_for_cb(key)], X[key])


@pytest.mark.parametrize("dtype", list(DTYPES))
def test_getitem_dtypes_and_noncontiguous(dtype):
    x = make((4, 6, 5), dtype)
    xt = x.transpose(0, 2)
    cx = to_cb(x).transpose(0, 2)
    for key in [(1, slice(None, None, 2)), ([0, 4], 1), (slice(None), [2, 0]), (xt.float() > 0.5 if dtype != "bool" else xt)]:
        assert_same(cx[key_for_cb(key)], xt[key])


def test_basic_indexing_returns_views():
    x = torch.zeros(3, 4)
    cx = to_cb(x)
    for key in [0, (slice(None), 1), (slice(1, 3), slice(None)), (None, Ellipsis, 2)]:
        v, cv = x[key], cx[key]
        v.fill_(float(v.numel()))
        cv.fill_(float(cv.numel()))
        assert_same(cx, x)
    row = cx[1]
    row += 1
    x[1] += 1
    assert_same(cx, x)
    emb = to_cb(torch.randn(5, 3))
    emb[2].fill_(0)  # nn.Embedding's padding_idx idiom
    assert (emb[2] == 0).all()


@pytest.mark.parametrize("key", [
    slice(None, None, 2), (slice(None), slice(1, None, 3)), (Ellipsis, slice(None, None, 4)), (slice(1, 3), slice(None, 5, 2)),
    (slice(None, None, 2), slice(None, None, 2), 1), (0, slice(3, 3, 2)), (slice(None), slice(10, None, 2)), (slice(None, None, 5),),
])
def test_step_slices_are_views(key):
    """A slice with a step is a view as in torch: the same values and strides, writes through it reach
    the base, and the view reads the base's later writes."""
    x = torch.arange(4 * 9 * 6, dtype=torch.float32).reshape(4, 9, 6)
    cx = to_cb(x)
    v, cv = x[key], cx[key]
    assert_same(cv, v)
    assert tuple(cv.stride()) == v.stride()
    if v.numel():  # (an empty view's contiguity follows Candle's layout rule, not torch's)
        assert cv.is_contiguous() == v.is_contiguous()
    v.mul_(-1)
    cv.mul_(-1)
    assert_same(cx, x)
    x.add_(1)
    cx.add_(1)
    assert_same(cv, v)
    # ops read the strided view; a step of a step composes the strides
    assert_same(cv.sum(-1), v.sum(-1))
    assert_same(cv.contiguous(), v.contiguous())
    if v.dim() >= 1 and v.shape[0] > 1:
        assert_same(cv[::2], v[::2])
        assert tuple(cv[::2].stride()) == v[::2].stride()


def set_both(x, key, value):
    cx = to_cb(x)
    cv = key_for_cb(value) if isinstance(value, torch.Tensor) else value
    x = x.clone()
    x[key] = value
    cx[key_for_cb(key)] = cv
    assert_same(cx, x)


SET_CASES = [
    ((slice(1, 4), slice(3, 5)), torch.arange(6.0).reshape(3, 2)),
    ((slice(1, 4), slice(3, 5)), 7.5),
    ((Ellipsis, -1), torch.tensor([1.0, 2, 3, 4, 5, 6])),
    ((slice(None), [0, 2]), torch.zeros(6, 2)),
    ((slice(None), [0, 2]), torch.tensor([9.0, 8.0])),
    ([1, 3], torch.ones(1, 6)),
    ((slice(None, None, 2), slice(1, None, 3)), -1),
    (0, torch.arange(6.0)),
    ((2, 3), torch.tensor(4.0)),
    (([0, 1, 2], [5, 4, 3]), torch.tensor([1.0, 2.0, 3.0])),
    ((None, 1), 3),
    (Ellipsis, 0),
    ((slice(None), slice(None)), torch.ones(1, 1, 6)),
]


@pytest.mark.parametrize("key,value", SET_CASES, ids=[str(i) for i in range(len(SET_CASES))])
def test_setitem_forms(key, value):
    set_both(make((6, 6), seed=3), key, value)


def test_setitem_masks_and_sampling_idioms():
    logits = make((4, 10), seed=5)
    set_both(logits, logits > 1, float("-inf"))
    v, _ = torch.topk(logits, 3)
    set_both(logits, logits < v[:, [-1]], -float("inf"))
    set_both(logits, logits < 0, torch.tensor(0.5))
    mask = logits[:, 0] > 0
    set_both(logits, mask, torch.zeros(10))
    ints = make((3, 4), "int64")
    set_both(ints, ints > 0, 100)
    set_both(ints, ints > 0, 2.7)  # floats are truncated into int tensors, as torch


@pytest.mark.parametrize("dtype", list(DTYPES))
def test_setitem_every_dtype(dtype):
    x = make((3, 4), dtype, seed=7)
    set_both(x, (slice(None), 1), make((3,), dtype, seed=8))
    set_both(x, (1, [0, 3]), 1)


def test_setitem_aliasing_source():
    x = torch.arange(10.0)
    cx = to_cb(x)
    x[1:] = x[:-1].clone()
    cx[1:] = cx[:-1]
    assert_same(cx, x)


def test_setitem_on_transposed_and_kv_cache():
    cache, ccache = torch.zeros(2, 8, 4), cb.zeros(2, 8, 4)
    for pos in range(3):
        k = make((2, 1, 4), seed=pos)
        cache[:, pos : pos + 1] = k
        ccache[:, pos : pos + 1] = to_cb(k)
    assert_same(ccache, cache)
    x = make((4, 5), seed=9)
    xt, cxt = x.clone().t(), to_cb(x).t()
    xt[1:3, ::2] = 0
    cxt[1:3, ::2] = 0
    assert_same(cxt, xt)


INDEX_ERRORS = [
    (lambda x: x[5], IndexError, "out of bounds"),
    (lambda x: x[0, 0, 0], IndexError, "too many indices"),
    (lambda x: x[..., ...], IndexError, "single ellipsis"),
    (lambda x: x[cb.tensor([0.5])], IndexError, "must be long, int, byte or bool"),
    (lambda x: x[cb.tensor([7])], IndexError, "out of bounds for dimension 0 with size 3"),
    (lambda x: x[cb.ones(2, dtype=cb.bool)], IndexError, "shape of the mask"),
    (lambda x: x[cb.tensor([0, 1]), cb.tensor([0, 1, 2])], IndexError, "shape mismatch"),
    (lambda x: x["a"], IndexError, "valid indices"),
    (lambda x: x[::-1], ValueError, "step must be greater than zero"),
]


@pytest.mark.parametrize("fn,exc,msg", INDEX_ERRORS, ids=[str(i) for i in range(len(INDEX_ERRORS))])
def test_index_errors(fn, exc, msg):
    with pytest.raises(exc, match=msg):
        fn(cb.zeros(3, 4))


def test_setitem_errors():
    x = cb.zeros(3, 4)
    with pytest.raises(RuntimeError, match="shape mismatch|must match"):
        x[0] = cb.ones(3)
    with pytest.raises(TypeError):
        x[0] = "a"
    with pytest.raises(RuntimeError, match="single memory location"):
        cb.zeros(1, 4).expand(3, 4)[0, 0] = 1.0
    with pytest.raises(IndexError):
        x[3] = 1.0


def both(fn, x, *args, **kwargs):
    cx = to_cb(x)
    x = x.clone()
    r, cr = fn(x, *args, **kwargs), fn(cx, *[to_cb(a) if isinstance(a, torch.Tensor) else a for a in args], **kwargs)
    assert cr is cx
    assert_same(cx, x)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32"])
def test_inplace_arithmetic(dtype):
    x, y = make((3, 4), dtype, seed=1), make((4,), dtype, seed=2)
    both(lambda a, b: a.add_(b), x, y)
    both(lambda a, b: a.add_(b, alpha=2), x, y)
    both(lambda a, b: a.sub_(b), x, y)
    both(lambda a, b: a.mul_(b), x, y)
    both(lambda a: a.mul_(3), x)
    both(lambda a: a.clamp_(-1, 1), x)
    both(lambda a: a.fill_(2), x)
    both(lambda a: a.zero_(), x)
    both(lambda a, b: a.copy_(b), x, y)
    both(lambda a, b: a.copy_(b), x, y.double())
    if dtype.startswith("float"):
        both(lambda a, b: a.div_(b), x, y)
        for name in ["exp_", "tanh_", "sigmoid_", "neg_", "abs_", "sqrt_", "relu_", "floor_"]:
            both(lambda a: getattr(a, name)(), x.abs() if name == "sqrt_" else x)
        both(lambda a: a.pow_(2), x)
        both(lambda a, m: a.masked_fill_(m, -1.5), x, x > 0)


def test_augmented_assignment():
    for op in ["+=", "-=", "*=", "/=", "//=", "%="]:
        x, cx = make((3, 4), seed=4), None
        cx = to_cb(x)
        ref, alias = x.clone(), cx
        exec(f"ref {op} 1.5; cx {op} 1.5")
        assert cx is alias
        assert_same(cx, ref)
    b = torch.tensor([True, False])
    cbb = to_cb(b)
    b |= torch.tensor([False, True])
    cbb |= cb.tensor([False, True])
    assert_same(cbb, b)


def test_inplace_errors():
    x = cb.ones(3, dtype=cb.int64)
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        x += 1.5
    with pytest.raises(RuntimeError, match="result type Float can't be cast"):
        x.mul_(cb.ones(3))
    with pytest.raises(RuntimeError):
        cb.ones(3).add_(cb.ones(2, 3))
    with pytest.raises(RuntimeError, match="0-dimension"):
        cb.ones(3).fill_(cb.ones(2))


def test_random_inplace_is_seeded():
    cb.manual_seed(3)
    a = cb.empty(1000).uniform_(-2, 2)
    cb.manual_seed(3)
    b = cb.empty(1000).uniform_(-2, 2)
    assert (a == b).all() and a.min() >= -2 and a.max() <= 2
    n = cb.empty(20000).normal_(1.0, 2.0)
    assert abs(n.mean().item() - 1.0) < 0.1 and abs(n.std().item() - 2.0) < 0.1
    p = cb.full((20000,), 0.3).bernoulli()
    assert abs(p.mean().item() - 0.3) < 0.02
    q = cb.empty(20000).bernoulli_(0.7)
    assert abs(q.mean().item() - 0.7) < 0.02 and set(q.unique().tolist()) <= {0.0, 1.0}


@pytest.mark.filterwarnings("ignore:The reduce argument")
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_gather_scatter(dim):
    x = make((4, 5), seed=11)
    idx = torch.randint(0, x.shape[dim], (3, 4) if dim == 0 else (4, 3), generator=torch.Generator().manual_seed(1))
    assert_same(to_cb(x).gather(dim, to_cb(idx)), x.gather(dim, idx))
    assert_same(cb.gather(to_cb(x), dim, to_cb(idx)), torch.gather(x, dim, idx))
    src = make(idx.shape, seed=12)
    perm = torch.stack([torch.randperm(x.shape[dim], generator=torch.Generator().manual_seed(i))[: idx.shape[dim]]
                        for i in range(idx.shape[1 - (dim % 2)])], dim=1 - (dim % 2))
    assert_same(to_cb(x).scatter(dim, to_cb(perm), to_cb(src)), x.scatter(dim, perm, src))
    assert_same(to_cb(x).scatter(dim, to_cb(perm), 2.5), x.scatter(dim, perm, 2.5))
    assert_same(to_cb(x).scatter_add(dim, to_cb(idx), to_cb(src)), x.scatter_add(dim, idx, src), atol=1e-5)
    assert_same(to_cb(x).scatter(dim, to_cb(idx), to_cb(src), reduce="add"), x.scatter(dim, idx, src, reduce="add"), atol=1e-5)
    both(lambda a, i, s: a.scatter_(dim, i, s), x, perm, src)
    both(lambda a, i, s: a.scatter_add_(dim, i, s), x, idx, src)
    assert_same(cb.take_along_dim(to_cb(x), to_cb(x.argsort(dim)), dim), torch.take_along_dim(x, x.argsort(dim), dim))
    assert_same(cb.take_along_dim(to_cb(x), to_cb(idx.flatten())), torch.take_along_dim(x, idx.flatten()))


def test_gather_errors():
    x = cb.zeros(3, 4)
    with pytest.raises(RuntimeError, match="out of bounds"):
        x.gather(1, cb.tensor([[5]]))
    with pytest.raises(RuntimeError, match="same number of dimensions"):
        x.gather(1, cb.tensor([1]))
    with pytest.raises(RuntimeError, match="int64"):
        x.gather(1, cb.tensor([[0.0]]))


# Which index-taking ops count negative indices from the end, and which raise (and with what).
NEGATIVE_INDEX_CALLS = [
    "x.gather(0, i)", "x.scatter(0, i, s)", "x.scatter_add(0, i, s)",
    "x.index_select(0, i)", "x.index_add(0, i, s)", "x.index_copy(0, i, s)", "x.index_fill(0, i, 1.0)",
    "x.take(i)", "x[i]", "x.index_put((i,), s)", "m.embedding(i, x.reshape(3, 1))", "m.take_along_dim(x, i)",
]


@pytest.mark.parametrize("call", NEGATIVE_INDEX_CALLS)
@pytest.mark.parametrize("value", [-1, -4, 3])
def test_negative_and_out_of_range_indices(call, value):
    def run(m, f):
        env = {"x": m.arange(3.0), "i": m.tensor([value]), "s": m.ones(1), "m": m, "F": f}
        if call.startswith("m.embedding"):
            env["m"] = f
        try:
            return eval(call, env), None
        except Exception as e:  # noqa: BLE001 - the type is what is compared
            return None, e
    want, want_err = run(torch, torch.nn.functional)
    got, got_err = run(cb, cb.nn.functional)
    if want_err is not None:
        assert got_err is not None, f"{call} with {value}: torch raised {want_err!r}, candle_bind returned {got}"
        assert isinstance(got_err, type(want_err)), f"{call}: {got_err!r} is not a {type(want_err).__name__}"
    else:
        assert got_err is None, f"{call} with {value}: {got_err!r}"
        assert_same(got, want)


def test_take_along_dim_counts_negative_indices_from_the_end():
    # torch reads out-of-range indices here unchecked; only the in-range negative ones are compared.
    x = torch.arange(6.0).reshape(2, 3)
    i = torch.tensor([[-1, 0], [-3, 2]])
    assert_same(cb.take_along_dim(to_cb(x), to_cb(i), 1), torch.take_along_dim(x, i, 1))


@pytest.mark.parametrize("dtype", ["float32", "int64", "bool", "float16"])
def test_index_ops(dtype):
    x = make((5, 3), dtype, seed=13)
    i = torch.tensor([4, 0, 2])
    for d in [0, 1, -1]:
        j = i[: x.shape[d]] % x.shape[d]
        assert_same(to_cb(x).index_select(d, to_cb(j)), x.index_select(d, j))
    src = make((3, 3), dtype, seed=14)
    assert_same(to_cb(x).index_copy(0, to_cb(i), to_cb(src)), x.index_copy(0, i, src))
    assert_same(to_cb(x).index_fill(1, to_cb(torch.tensor([0, 2])), 1), x.index_fill(1, torch.tensor([0, 2]), 1))
    if dtype != "bool":
        assert_same(to_cb(x).index_add(0, to_cb(i), to_cb(src)), x.index_add(0, i, src), atol=1e-2)
        both(lambda a, ii, s: a.index_add_(0, ii, s, alpha=2), x, i, src)
    mask = make((5, 3), "bool", seed=15)
    assert_same(to_cb(x).masked_select(to_cb(mask)), x.masked_select(mask))
    assert_same(to_cb(x).masked_fill(to_cb(mask), 1), x.masked_fill(mask, 1))
    assert_same(to_cb(x).masked_fill(to_cb(mask[0]), 0), x.masked_fill(mask[0], 0))
    assert_same(cb.nonzero(to_cb(x)), torch.nonzero(x))
    assert_same(cb.argwhere(to_cb(x)), torch.argwhere(x))
    for a, b in zip(cb.nonzero(to_cb(x), as_tuple=True), torch.nonzero(x, as_tuple=True)):
        assert_same(a, b)
    for a, b in zip(cb.where(to_cb(mask)), torch.where(mask)):
        assert_same(a, b)


def test_masked_fill_errors():
    with pytest.raises(RuntimeError, match="boolean masks"):
        cb.zeros(3).masked_fill(cb.ones(3), 1.0)
    with pytest.raises(RuntimeError, match="0-dimensional"):
        cb.zeros(3).masked_fill(cb.ones(3, dtype=cb.bool), cb.ones(2))


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32", "uint8", "float16", "bfloat16"])
@pytest.mark.parametrize("dim", [0, -1])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_argsort(dtype, dim, descending):
    x = torch.randperm(60, generator=torch.Generator().manual_seed(2)).reshape(6, 10).to(DTYPES[dtype][0])
    v, i = to_cb(x).sort(dim, descending)
    tv, ti = x.sort(dim, descending)
    assert_same(v, tv)
    assert_same(i, ti)
    assert_same(to_cb(x).argsort(dim, descending=descending), x.argsort(dim, descending=descending))
    assert_same(cb.sort(to_cb(x), dim=dim, descending=descending, stable=True).values, torch.sort(x, dim=dim, descending=descending, stable=True).values)


def test_sort_nan_and_ties():
    x = torch.tensor([3.0, float("nan"), 1.0, 3.0, -float("inf"), 1.0])
    for desc in [False, True]:
        assert_same(to_cb(x).sort(descending=desc, stable=True).values, x.sort(descending=desc, stable=True).values)
        assert_same(to_cb(x).sort(descending=desc, stable=True).indices, x.sort(descending=desc, stable=True).indices)


@pytest.mark.parametrize("n", [513, 1000, 4096, 4097, 4098, 4099, 4100, 32001])
@pytest.mark.parametrize("kind", ["random", "ties", "masked", "nan", "half_masked", "both_ends", "f16_masked"])
def test_sort_long_rows_stable(n, kind):
    """Rows past 4096 take the radix sort (four quarters' cursors side by side), shorter ones the comparison
    sort: every length mod 4 past it, repeated keys, logits masked to -inf, NaN; values and positions as
    torch's stable sort. Keys equal to a row's first or last one, an eighth of it or more, are partitioned
    off first: masked rows (what is left short or past 4096), -inf and +inf at both ends, NaN (the last
    key), half precision."""
    x = torch.randn(3, n, generator=torch.Generator().manual_seed(n))
    drop = torch.rand(3, n, generator=torch.Generator().manual_seed(n + 1))
    if kind == "ties":
        x = (x * 2).round() / 2
    elif kind in ("masked", "f16_masked"):
        x[drop > 0.01] = -float("inf")
        x = x.half() if kind == "f16_masked" else x
    elif kind == "nan":
        x[drop > 0.7] = float("nan")
    elif kind == "half_masked":
        x[drop > 0.5] = -float("inf")
    elif kind == "both_ends":
        x[drop > 0.8] = -float("inf")
        x[drop < 0.15] = float("inf")
    for desc in [False, True]:
        v, i = to_cb(x).sort(descending=desc)
        tv, ti = x.sort(descending=desc, stable=True)
        assert_same(v, tv)
        assert_same(i, ti)


@pytest.mark.parametrize("k", [1, 5, 32000])
@pytest.mark.parametrize("largest", [True, False])
def test_topk(k, largest):
    x = torch.randn(3, 32000, generator=torch.Generator().manual_seed(k))
    r, tr = to_cb(x).topk(k, largest=largest), x.topk(k, largest=largest)
    assert type(r).__name__ == "topk" and r._fields == ("values", "indices")
    assert_same(r.values, tr.values)
    # Equal values (ties) may come in either order; the indices must point at the values.
    assert_same(to_cb(x).gather(-1, r.indices), tr.values)
    if k <= 5:
        assert_same(r.indices, tr.indices)
    assert_same(cb.topk(to_cb(x.t()), 2, dim=0).values, torch.topk(x.t(), 2, dim=0).values)
    with pytest.raises(RuntimeError, match="out of range"):
        to_cb(x).topk(32001)


@pytest.mark.parametrize("n", [17, 1000, 32003])
@pytest.mark.parametrize("kind", ["random", "ties", "nan", "masked", "ascending", "int32", "f16"])
def test_topk_long_rows(n, kind):
    """Once a row's buffer of candidates is full, top-k skips whole chunks of 16 that cannot enter it:
    rows with a tail past the last chunk, ties (the earlier position wins), NaN (largest, as in torch),
    rows masked to -inf, a rising row (every chunk passes), integer and half keys."""
    g = torch.Generator().manual_seed(n)
    x = torch.randn(3, n, generator=g)
    if kind == "ties":
        x = (x * 2).round() / 2
    elif kind == "nan":
        x[torch.rand(3, n, generator=g) > 0.99] = float("nan")
    elif kind == "masked":
        x[torch.rand(3, n, generator=g) > 0.02] = -float("inf")
    elif kind == "ascending":
        x = torch.arange(3 * n, dtype=torch.float32).reshape(3, n)
    elif kind == "int32":
        x = torch.randint(-50, 50, (3, n), generator=g, dtype=torch.int32)
    elif kind == "f16":
        x = x.half()
    for k in {1, 7, min(50, n)}:
        for largest in (True, False):
            r, tr = to_cb(x).topk(k, largest=largest), x.topk(k, largest=largest)
            assert_same(r.values, tr.values)
            assert_same(to_cb(x).gather(-1, r.indices), tr.values)
            # Among equal values the first positions are taken, in order (torch's CPU kernel here).
            expect = x.sort(descending=largest, stable=True).indices[:, :k]
            assert_same(r.indices, expect)


def test_topk_edge_shapes():
    """0-d tensors (k 0 or 1 gives the element, as torch), empty rows and one-element dims."""
    for x in [torch.tensor(3.0), torch.empty(0, 5), torch.empty(4, 0), torch.randn(1, 1)]:
        for k in (0, 1):
            for dim in (0, -1):
                try:
                    expect = x.topk(k, dim)
                except RuntimeError:
                    with pytest.raises(RuntimeError, match="out of range"):
                        to_cb(x).topk(k, dim)
                    continue
                r = to_cb(x).topk(k, dim)
                assert_same(r.values, expect.values)
                assert_same(r.indices, expect.indices)


def test_kthvalue():
    x = torch.randperm(40, generator=torch.Generator().manual_seed(5)).reshape(5, 8).float()
    for k, dim, keep in [(1, -1, False), (3, 0, True), (8, 1, False)]:
        assert_same(to_cb(x).kthvalue(k, dim, keep), x.kthvalue(k, dim, keep))


def test_multinomial():
    probs = torch.softmax(torch.randn(4, 50, generator=torch.Generator().manual_seed(0)), -1)
    cp = to_cb(probs)
    cb.manual_seed(7)
    a = cb.multinomial(cp, 5)
    cb.manual_seed(7)
    b = cp.multinomial(5)
    assert a.shape == (4, 5) and a.dtype == cb.int64 and (a == b).all()
    for row in a.tolist():  # without replacement: distinct
        assert len(set(row)) == 5
    one = cb.tensor([0.0, 0.0, 1.0, 0.0])
    assert cb.multinomial(one, 3, replacement=True).tolist() == [2, 2, 2]
    freq = cb.multinomial(cb.tensor([0.2, 0.8]), 20000, replacement=True).float().mean().item()
    assert abs(freq - 0.8) < 0.02
    with pytest.raises(RuntimeError, match="sum of probabilities"):
        cb.multinomial(cb.zeros(2, 3), 1)
    with pytest.raises(RuntimeError, match="without replacement"):
        cb.multinomial(cb.ones(3), 4)
    with pytest.raises(RuntimeError, match="not enough non-negative category"):
        cb.multinomial(cb.tensor([0.0, 1.0, 1.0]), 3)
    with pytest.raises(RuntimeError, match="inf"):
        cb.multinomial(cb.tensor([-1.0, 1.0]), 1)
    # Edge shapes as torch takes them: no rows, one-element rows; no samples and empty rows raise.
    for shape, k, repl in [((0, 5), 2, False), ((1, 1), 1, False), ((1, 1), 3, True)]:
        got = cb.multinomial(cb.ones(*shape), k, replacement=repl)
        assert tuple(got.shape) == tuple(torch.multinomial(torch.ones(*shape), k, replacement=repl).shape)
        assert got.dtype == cb.int64
    for shape, k, repl in [((5,), 0, False), ((2, 3), 0, True), ((3, 0), 1, True)]:
        with pytest.raises(RuntimeError):
            torch.multinomial(torch.ones(*shape), k, replacement=repl)
        with pytest.raises(RuntimeError):
            cb.multinomial(cb.ones(*shape), k, replacement=repl)
    with pytest.raises(RuntimeError):
        cb.multinomial(cb.tensor(0.5), 1)


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
def test_multinomial_long_rows(dtype):
    """Rows past the parallel threshold (sampled over the pool, each draw found by block totals): the
    same picks at every thread count, frequencies as the probabilities, distinct picks without
    replacement, zero weights never picked, and the first bad row's error."""
    g = torch.Generator().manual_seed(3)
    probs = torch.softmax(torch.randn(6, 5000, generator=g) * 2, -1)
    probs[:, 100:200] = 0  # whole blocks and parts of blocks of zeros
    probs[2, 4999] = 0
    cp = to_cb(probs).to(getattr(cb, dtype))
    picks, before = [], cb.get_num_threads()
    try:
        for threads in (1, 2):
            cb.set_num_threads(threads)
            cb.manual_seed(11)
            picks.append(cb.multinomial(cp, 40).tolist())
    finally:
        cb.set_num_threads(before)
    assert picks[0] == picks[1]
    for row in picks[0]:
        assert len(set(row)) == 40 and not any(100 <= j < 200 for j in row)
    # With replacement: a skewed two-block row, frequencies within sampling error.
    w = torch.zeros(3000)
    w[10], w[2900] = 1.0, 3.0
    s = cb.multinomial(to_cb(w).expand(4, 3000), 5000, replacement=True)
    assert set(s.flatten().tolist()) == {10, 2900}
    assert abs((s == 2900).float().mean().item() - 0.75) < 0.02
    bad = probs.clone()
    bad[4, 7] = float("nan")
    bad[1, 9] = -1.0
    with pytest.raises(RuntimeError, match="inf"):
        cb.multinomial(to_cb(bad), 1)
    empty = probs.clone()
    empty[3] = 0
    with pytest.raises(RuntimeError, match="sum of probabilities"):
        cb.multinomial(to_cb(empty), 1)


@pytest.mark.parametrize("dtype", ["int64", "float32", "bool"])
def test_unique(dtype):
    x = make((4, 6), dtype, seed=21)
    tu = torch.unique(x, return_inverse=True, return_counts=True)
    cu = cb.unique(to_cb(x), return_inverse=True, return_counts=True)
    assert_same(cu, tu)
    assert_same(cb.unique(to_cb(x)), torch.unique(x))
    assert_same(to_cb(x).unique() if hasattr(cb.Tensor, "unique") else cb.unique(to_cb(x)), torch.unique(x))


@pytest.mark.parametrize("right", [False, True])
def test_searchsorted_bucketize(right):
    b = torch.tensor([1.0, 3, 5, 7, 9])
    v = torch.tensor([[0.0, 3, 6], [7, 9.5, 1]])
    assert_same(cb.searchsorted(to_cb(b), to_cb(v), right=right), torch.searchsorted(b, v, right=right))
    assert_same(cb.searchsorted(to_cb(b), to_cb(v), side="right" if right else "left"), torch.searchsorted(b, v, side="right" if right else "left"))
    assert_same(cb.searchsorted(to_cb(b), 5.0, right=right), torch.searchsorted(b, 5.0, right=right))
    b2 = torch.tensor([[1.0, 3, 5], [2, 4, 6]])
    assert_same(cb.searchsorted(to_cb(b2), to_cb(v), right=right), torch.searchsorted(b2, v, right=right))
    assert_same(cb.searchsorted(to_cb(b), to_cb(v), out_int32=True), torch.searchsorted(b, v, out_int32=True))
    assert_same(cb.bucketize(to_cb(v), to_cb(b), right=right), torch.bucketize(v, b, right=right))
    with pytest.raises(RuntimeError, match="first N-1 dimensions"):
        cb.searchsorted(to_cb(b2), cb.ones(3, 2))


def test_bincount():
    x = torch.tensor([0, 3, 1, 3, 3, 7])
    w = torch.rand(6, generator=torch.Generator().manual_seed(0))
    assert_same(cb.bincount(to_cb(x)), torch.bincount(x))
    assert_same(cb.bincount(to_cb(x), minlength=10), torch.bincount(x, minlength=10))
    assert_same(cb.bincount(to_cb(x), to_cb(w)), torch.bincount(x, w))
    assert_same(cb.bincount(to_cb(x), to_cb(w.double())), torch.bincount(x, w.double()))
    assert_same(cb.bincount(cb.tensor([], dtype=cb.int64)), torch.bincount(torch.tensor([], dtype=torch.long)))
    with pytest.raises(RuntimeError, match="non-negative"):
        cb.bincount(cb.tensor([-1, 2]))


@pytest.mark.parametrize("dtype", list(DTYPES))
def test_prod_every_dtype(dtype):
    x = make((3, 4), dtype, low=-1.5, high=1.5, seed=30)
    tol = 2e-2 if dtype in ("float16", "bfloat16") else 1e-3  # torch rounds half-precision partial products
    assert_same(to_cb(x).prod(), x.prod(), atol=tol, rtol=tol)
    assert_same(cb.prod(to_cb(x), 1), torch.prod(x, 1), atol=tol, rtol=tol)
    assert_same(to_cb(x).prod(0, keepdim=True), x.prod(0, keepdim=True), atol=tol, rtol=tol)
    if dtype not in ("bool",):
        assert_same(to_cb(x).cumprod(1), x.cumprod(1), atol=tol, rtol=tol)


@pytest.mark.parametrize("steps", [0, 1, 2, 7, 50])
def test_linspace_logspace(steps):
    assert_same(cb.linspace(-2, 3.5, steps), torch.linspace(-2, 3.5, steps))
    assert_same(cb.linspace(0, 10, steps, dtype=cb.int64), torch.linspace(0, 10, steps, dtype=torch.int64))
    assert_same(cb.logspace(-1, 2, steps), torch.logspace(-1, 2, steps), rtol=1e-5)
    assert_same(cb.logspace(0, 3, steps, base=2), torch.logspace(0, 3, steps, base=2), rtol=1e-5)


def test_numpy_sees_writes():
    x = cb.zeros(2, 3)
    a = x.numpy()
    x[0, 1] = 5.0
    assert a[0, 1] == 5.0
    assert np.array_equal(a, x.numpy())


def test_inplace_self_aliasing_and_views():
    x = make((4, 5), seed=40)
    cx = to_cb(x)
    ref = x.clone()
    ref += ref
    cx += cx
    assert_same(cx, ref)
    col, ccol = ref[:, 1], cx[:, 1]
    ref.mul_(2)
    cx.mul_(2)
    assert_same(ccol, col)  # a view sees in-place updates of its base
    t, ct = ref.t(), cx.t()
    t.add_(1)
    ct.add_(1)
    assert_same(cx, ref)
    big, cbig = make((300, 400), seed=41), None
    cbig = to_cb(big)
    big += torch.ones(400)
    cbig += cb.ones(400)
    assert_same(cbig, big)


def test_masked_setitem_with_one_element_tensor():
    x = make((3, 4), seed=42)
    set_both(x, x > 0, torch.tensor([7.0]))
    set_both(x, x > 0, torch.tensor(-2))


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int64", "int32"])
def test_relu_in_place_matches_torch(dtype):
    """relu_ writes through views and keeps NaN; -inf and negatives become 0 (vectorised path for
    contiguous float32, the generic one elsewhere)."""
    t = make((5, 37), dtype, seed=3)
    if t.is_floating_point():
        t[0, :4] = torch.tensor([math.nan, -math.inf, math.inf, -0.0])
    for view in (lambda x: x, lambda x: x[1:4, 2:], lambda x: x.t()):
        ref, ours = t.clone(), to_cb(t)
        out = view(ours).relu_()
        view(ref).relu_()
        assert_same(ours, ref)
        assert tuple(out.shape) == tuple(view(ref).shape)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.int32, torch.bfloat16])
def test_scatter_in_place(dtype):
    """scatter_/scatter_add_ write into self's memory (a contiguous slice of a base included), return
    self, and match torch; self sharing memory with src, a strided self, reductions and scalar values
    take the copying path; an index out of bounds raises and leaves self unchanged."""
    g = torch.Generator().manual_seed(3)
    base = (torch.rand(5, 8, 300, generator=g) * 10).to(dtype)
    src = (torch.rand(4, 8, 300, generator=g) * 10).to(dtype)
    idx = torch.randint(0, 300, (4, 8, 300), generator=g)
    cb_base, csrc, cidx = to_cb(base), to_cb(src), to_cb(idx)
    for d in [-1, 0, 1]:
        i = idx.clamp(max=3) if d == 0 else idx.clamp(max=7) if d == 1 else idx
        ci = to_cb(i)
        t, c = base.clone(), to_cb(base)
        tv, cv = t[1:], c[1:]  # contiguous with an offset into the base
        assert cv.scatter_add_(d, ci, csrc) is cv
        tv.scatter_add_(d, i, src)
        assert_same(c, t)
        cv.scatter_(d, ci, csrc)
        tv.scatter_(d, i, src)
        assert_same(c, t)
        cv.scatter_(d, ci, 2)
        tv.scatter_(d, i, 2)
        assert_same(c, t)
        if dtype.is_floating_point:
            cv.scatter_(d, ci, csrc, reduce="multiply")
            tv.scatter_(d, i, src, reduce="multiply")
            assert_same(c, t, rtol=1e-2)
    # a strided self
    t, c = base.clone(), to_cb(base)
    t.transpose(0, 1).scatter_add_(-1, idx.transpose(0, 1)[:, :4], src.transpose(0, 1)[:, :4])
    c.transpose(0, 1).scatter_add_(-1, cidx.transpose(0, 1)[:, :4], csrc.transpose(0, 1)[:, :4])
    assert_same(c, t)
    # self is src (torch refuses the overlap; ours reads src as it was, as a clone would be)
    t, c = src.clone(), to_cb(src)
    t.scatter_add_(-1, idx, t.clone())
    c.scatter_add_(-1, cidx, c)
    assert_same(c, t)
    # out of bounds: an error, self unchanged
    c = to_cb(base)
    bad = cidx.clone()
    bad[3, 7, 299] = 300
    with pytest.raises(RuntimeError, match="out of bounds"):
        c[1:].scatter_add_(-1, bad, csrc)
    assert_same(c, base)
    assert_same(cb_base, base)
