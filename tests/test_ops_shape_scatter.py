"""View copies, splits, *_scatter, resize_/sum_to_size, reducing scatters and flat-index writes, and the
torch.* names of nn.functional ops (candle_bind/_shape_ops.py, _scatter_ops.py, _nn_ops.py): each case runs the
same call on torch and candle_bind and compares shape, dtype and values; bad calls raise torch's exception type."""

import pytest
import torch

import candle_bind as cb
from conftest import assert_same, make, to_cb


def run(fn, *inputs, atol=None, rtol=None):
    ref = fn(torch, *inputs)
    ours = fn(cb, *[to_cb(t) if isinstance(t, torch.Tensor) else t for t in inputs])
    assert_same(ours, ref, atol, rtol)


NAN = float("nan")
X = make((3, 4))
X3 = make((2, 3, 4))
I = make((3, 4), "int64")
B = make((3, 4), "bool")
IDX = torch.tensor([[0, 1, 0, 2], [2, 2, 1, 0]])
V = torch.tensor([[1.0, NAN, 2.0, -1.0], [3.0, 0.5, -2.0, 4.0]])


def _reduces(L, x, i, s):
    out = []
    for r in ("sum", "prod", "mean", "amax", "amin"):
        out += [L.scatter_reduce(x, 0, i, s, r), x.scatter_reduce(1, i[:, :3], s, r, include_self=False)]
    return tuple(out)


CASES = {
    "view copies": (lambda L, x: (L.adjoint(x), L.alias_copy(x), L.diagonal_copy(x, 1), L.expand_copy(x[:1], (2, 3, 4)),
                                  L.narrow_copy(x, 1, -3, 2), x.narrow_copy(0, 1, 1), L.permute_copy(x, (1, 0)),
                                  L.squeeze_copy(x[:1]), L.squeeze_copy(x[:1], 0), L.t_copy(x), L.transpose_copy(x, 0, -1),
                                  L.unbind_copy(x, 1), L.unfold_copy(x, 1, 2, 1), L.unsqueeze_copy(x, -1),
                                  L.view_copy(x, (4, 3)), L.as_strided_copy(x, (2, 2), (1, 4), 1)), X),
    "splits": (lambda L, x: (L.split_with_sizes(x, [1, 2]), x.split_with_sizes([3, 1], 1), L.split_with_sizes_copy(x, [2, 1]),
                             L.unsafe_chunk(x, 2, 1), x.unsafe_split(2), L.hsplit(x, 2), x.vsplit([1]), L.dsplit(x[None], [1, 3]),
                             L.hsplit(x[0], [1]), L.ravel(x.t()), x.t().ravel()), X),
    "atleast row_stack": (lambda L, s, v, x: (L.atleast_1d(s), L.atleast_2d(v), L.atleast_3d(s), L.atleast_3d(v),
                                              L.atleast_3d(x), L.atleast_1d(s, v), L.atleast_2d([s, x]),
                                              L.row_stack((v, v))), torch.tensor(2.0), make((4,)), X),
    "view scatters": (lambda L, x, r, c, d: (L.select_scatter(x, r, 0, -1), L.slice_scatter(x, c, 1, 1, 4, 2),
                                             x.slice_scatter(r[None], 0, 2), L.diagonal_scatter(x, d, 1),
                                             x.diagonal_scatter(d, -1, 1, 0), L.as_strided_scatter(x, c, (3, 2), (4, 2)),
                                             L.select_scatter(x.long(), r[:3].long(), 1, 0)),
                      X, make((4,), seed=1), make((3, 2), seed=2), make((3,), seed=3)),
    "sum_to_size resize": (lambda L, x, i: (x.sum_to_size(1, 4), x.sum_to_size((3, 1)), x.sum_to_size(4), i.sum_to_size(1, 1),
                                            i[0, 0].sum_to_size([]), x.clone().resize_(2, 5), x.clone().resize_(2, 2),
                                            x.clone().resize_as_(x.t()), x.clone().resize_(0)), X, I),
    "identities": (lambda L, x, i, b: (L.positive(x), x.positive(), x.conj(), x.resolve_conj(), x.resolve_neg(),
                                       x.conj_physical(), x.clone().conj_physical_(), L.isreal(i), x.isreal(),
                                       x.angle(), i.angle(), b.angle(), 6.0 / x, x.__rdiv__(2)),
                   torch.tensor([1.0, -2.0, NAN, 0.0, -0.0]), I, B),
    "factories": (lambda L, x: (L.empty_strided((2, 3), (1, 2)).shape, L.empty_permuted((2, 3, 4), (2, 0, 1)).shape,
                                x.new_empty_strided((3, 2), (2, 1)).shape, x.new_empty_strided((2,), (1,), dtype=L.int32).numel(),
                                L.fill(x, 2.5), L.fill(x, L.tensor(-1.0)), L.zero_(x.clone()), L.diagflat(x[:2]),
                                x[0].diagflat(1), L.constant_pad_nd(x, (1, -1, 0, 2), 3.0),
                                L.constant_pad_nd(x.long(), [1, 1])), X),
    "combinations unravel_index": (lambda L, v: (L.combinations(v), L.combinations(v, 3), L.combinations(v, 2, True),
                                                 L.combinations(v, 0), L.combinations(v[:2], 3),
                                                 L.unravel_index(L.tensor([0, 5, 11, -1]), (3, 4)),
                                                 L.unravel_index(L.tensor(7), (2, 2, 2))), make((4,))),
    "scatter_reduce float": (_reduces, make((3, 4), seed=4), IDX, V),
    "scatter_reduce int": (_reduces, I, IDX, make((2, 4), "int64", seed=5)),
    "scatter_reduce bool int32": (lambda L, b, i, s, n: (L.scatter_reduce(b, 0, i, s, "sum"), b.scatter_reduce(0, i, s, "amin"),
                                                         b.scatter_reduce(0, i, s, "prod", include_self=False),
                                                         n.scatter_reduce(1, i, n[:2] * 3, "mean"),
                                                         n.clone().scatter_reduce_(0, i, n[:2], "amax", include_self=False)),
                                  B, IDX, make((2, 4), "bool", seed=6), make((3, 4), "int32", seed=7)),
    "scatter_reduce 1-d 0-d empty": (lambda L, x, i, s: (L.scatter_reduce(x, 0, i, s, "amax"),
                                                         L.scatter_reduce(x[0], 0, i[1:2], s[0], "sum"),
                                                         L.scatter_reduce(x, 0, i[:0], s[:0], "prod")),
                                     make((5,)), torch.tensor([4, 0, 4, 4]), torch.tensor([1.0, -5.0, 7.0, 3.0])),
    "index_reduce": (lambda L, x, i, s: tuple(L.index_reduce(x, d, i, s if d == 0 else s.t(), r, include_self=inc)
                                              for r in ("prod", "mean", "amax", "amin") for d in (0, 1)
                                              for inc in (True, False)),
                     make((4, 4), seed=8), torch.tensor([3, 0, 3]), make((3, 4), seed=9)),
    "index_reduce_ int": (lambda L, x, i, s: (x.clone().index_reduce_(0, i, s, "mean"), x.index_reduce(1, i, s.t(), "amin")),
                          make((4, 4), "int64", seed=10), torch.tensor([1, 1, 2]), make((3, 4), "int64", seed=11)),
    "masked_scatter": (lambda L, x, m, s: (L.masked_scatter(x, m, s), x.clone().masked_scatter_(m, s),
                                           L.masked_scatter(x[0], m, s), L.masked_scatter(x, m[0], s)),
                       X, make((3, 4), "bool", seed=12), make((20,), seed=13)),
    "put": (lambda L, x, i, s: (L.put(x, i, s), x.put(i, s, accumulate=True), x.clone().put_(i.reshape(2, 2), s.reshape(2, 2), True),
                                x.long().put(i, s.long(), True)),
            X, torch.tensor([0, -1, 5, 0]), torch.tensor([1.0, 2.0, 3.0, 4.0])),
    "nonzero_static": (lambda L, x, s: (L.nonzero_static(x, size=3), x.nonzero_static(size=20, fill_value=-7),
                                        L.nonzero_static(s, size=2), L.nonzero_static(x, size=0)), B, torch.tensor(1.5)),
    "nn aliases": (lambda L, x, w, g: (L.conv1d(x, w, padding=1), L.conv_transpose1d(x, w.transpose(0, 1), stride=2),
                                       L.layer_norm(x, [5]), L.rms_norm(x, [5], eps=1e-6), L.group_norm(x, 2),
                                       L.grid_sampler_2d(x[None], g, 0, 0, False), L.grid_sampler_2d(x[None], g, 1, 1, True),
                                       L.grid_sampler_2d(x[None], g, 0, 2, False)),
                   make((2, 4, 5)), make((3, 4, 3), seed=14), make((1, 3, 3, 2), low=-1.2, high=1.2, seed=15)),
    "native norms": (lambda L, x, w, b: (L.native_layer_norm(x, [4], w, b, 1e-5), L.native_layer_norm(x, [3, 4], None, None, 1e-3),
                                         L.native_group_norm(x, w[:3], b[:3], 2, 3, 4, 3, 1e-5),
                                         L.native_batch_norm(x, w[:3], b[:3], None, None, True, 0.1, 1e-5),
                                         L.native_batch_norm(x, None, None, L.zeros(3), L.ones(3), False, 0.1, 1e-5)),
                     X3, make((4,), seed=16), make((4,), seed=17)),
    "native_batch_norm half": (lambda L, x: (L.native_batch_norm(x, None, None, None, None, True, 0.1, 1e-5),
                                             L.native_batch_norm(x, None, None, L.zeros(3, dtype=L.float16),
                                                                 L.ones(3, dtype=L.float16), False, 0.1, 1e-5)),
                                   make((4, 3, 5), "float16")),
}


@pytest.mark.parametrize("name", list(CASES))
def test_matches_torch(name):
    fn, *inputs = CASES[name]
    run(fn, *inputs, atol=1e-5, rtol=1e-4)


def test_running_stats_and_in_place():
    x = make((4, 3, 2))
    rm, rv = torch.zeros(3), torch.ones(3)
    crm, crv = cb.zeros(3), cb.ones(3)
    torch.native_batch_norm(x, None, None, rm, rv, True, 0.1, 1e-5)
    cb.native_batch_norm(to_cb(x), None, None, crm, crv, True, 0.1, 1e-5)
    assert_same((crm, crv), (rm, rv), 1e-6, 1e-5)
    t = cb.arange(6.0)
    assert t.resize_(2, 2) is t and t.shape == (2, 2) and t.tolist() == [[0.0, 1.0], [2.0, 3.0]]
    s = cb.zeros(3)
    assert s.scatter_reduce_(0, cb.tensor([0, 0]), cb.tensor([1.0, 2.0]), "sum") is s and s.tolist() == [3.0, 0.0, 0.0]
    sm = cb.ops.aten._safe_softmax.default(cb.tensor([[float("-inf")] * 3, [0.0, 0.0, 0.0]]), -1)
    assert sm.tolist() == [[0.0, 0.0, 0.0], [1 / 3, 1 / 3, 1 / 3]] or cb.allclose(sm, cb.tensor([[0.0] * 3, [1 / 3] * 3]))
    z = torch.complex(torch.ones(3), torch.tensor([0.0, 1.0, 0.0]))
    assert cb.isreal(cb.complex(cb.ones(3), cb.tensor([0.0, 1.0, 0.0]))).tolist() == torch.isreal(z).tolist()
    with pytest.raises(NotImplementedError, match="complex32"):
        cb.ones(2).chalf()


ERRORS = {
    "narrow_copy 0-d": lambda L: L.narrow_copy(L.tensor(1.0), 0, 0, 1),
    "narrow_copy start": lambda L: L.narrow_copy(L.ones(3, 4), 1, 5, 0),
    "narrow_copy length": lambda L: L.narrow_copy(L.ones(4), 0, 1, 4),
    "hsplit 0-d": lambda L: L.hsplit(L.tensor(1.0), 1),
    "vsplit uneven": lambda L: L.vsplit(L.ones(5, 2), 2),
    "hsplit str": lambda L: L.hsplit(L.ones(2, 2), "a"),
    "split_with_sizes sum": lambda L: L.split_with_sizes(L.ones(5), [2, 2]),
    "adjoint 1-d": lambda L: L.adjoint(L.ones(3)),
    "select_scatter shape": lambda L: L.select_scatter(L.ones(3, 4), L.ones(3), 0, 0),
    "sum_to_size": lambda L: L.ones(3, 4).sum_to_size(2, 4),
    "positive bool": lambda L: L.positive(L.ones(2, dtype=L.bool)),
    "fill 1-d value": lambda L: L.fill(L.ones(2), L.ones(2)),
    "combinations 2-d": lambda L: L.combinations(L.ones(2, 2)),
    "scatter_reduce bad reduce": lambda L: L.scatter_reduce(L.ones(3), 0, L.tensor([0]), L.ones(1), "foo"),
    "scatter_reduce index dtype": lambda L: L.scatter_reduce(L.ones(3), 0, L.tensor([0.0]), L.ones(1), "sum"),
    "scatter_reduce src dtype": lambda L: L.scatter_reduce(L.ones(3), 0, L.tensor([0]), L.ones(1, dtype=L.float64), "sum"),
    "scatter_reduce out of range": lambda L: L.scatter_reduce(L.ones(3), 0, L.tensor([3]), L.ones(1), "amax"),
    "index_reduce bad reduce": lambda L: L.index_reduce(L.ones(3), 0, L.tensor([0]), L.ones(1), "sum"),
    "masked_scatter mask dtype": lambda L: L.masked_scatter(L.ones(3), L.ones(3), L.ones(3)),
    "masked_scatter short source": lambda L: L.masked_scatter(L.ones(3), L.ones(3, dtype=L.bool), L.ones(2)),
    "put out of range": lambda L: L.put(L.ones(3), L.tensor([3]), L.ones(1)),
    "put numel": lambda L: L.put(L.ones(3), L.tensor([0, 1]), L.ones(1)),
    "nonzero_static size": lambda L: L.nonzero_static(L.ones(3), size=-1),
    "layer_norm weight shape": lambda L: L.native_layer_norm(L.ones(2, 3), [3], L.ones(2), None, 1e-5),
    "rms_norm empty shape": lambda L: L.rms_norm(L.ones(2, 3), []),
    "group_norm 1-d": lambda L: L.group_norm(L.ones(2), 1),
    "group_norm no channels": lambda L: L.nn.functional.group_norm(L.ones(1, 0, 2), 1),
    "native_batch_norm eval without stats": lambda L: L.native_batch_norm(L.ones(2, 3), None, None, None, None, False,
                                                                          0.1, 1e-5),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_errors_match_torch(name):
    fn = ERRORS[name]
    with pytest.raises(Exception) as ref:
        fn(torch)
    with pytest.raises(Exception) as ours:
        fn(cb)
    assert isinstance(ours.value, type(ref.value)), (type(ours.value), type(ref.value), str(ours.value))
