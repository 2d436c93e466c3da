import math

import numpy as np
import pytest
import torch

import candle_bind as cb
from conftest import assert_same, dtype_name, DTYPES


@pytest.mark.parametrize("data", [
    [1, 2, 3], [1.0, 2, 3], [True, False], [[1, 2], [3, 4]], 3, 2.5, True, [], [[]], [[1.5], [2.5]],
    ((1, 2), (3, 4)), [[True, 1], [0, 2]], [1, 2.5, True],
])
def test_tensor_infers_dtype_and_shape(data):
    assert_same(cb.tensor(data), torch.tensor(data))


@pytest.mark.parametrize("name", list(DTYPES))
def test_tensor_with_dtype(name):
    data = [[0, 1, 2], [3, 0, 5]]
    assert_same(cb.tensor(data, dtype=DTYPES[name][1]), torch.tensor(data, dtype=DTYPES[name][0]))


def test_tensor_python_type_dtypes():
    assert_same(cb.tensor([1, 2], dtype=float), torch.tensor([1, 2], dtype=float))
    assert_same(cb.zeros(2, dtype=int), torch.zeros(2, dtype=int))
    assert_same(cb.ones(2, dtype=bool), torch.ones(2, dtype=bool))


def test_tensor_ragged_raises():
    with pytest.raises(ValueError, match="expected sequence of length 2 at dim 1"):
        cb.tensor([[1, 2], [3]])
    with pytest.raises(TypeError):
        cb.tensor("abc")


def test_tensor_from_numpy_and_tensor():
    a = np.arange(6, dtype=np.float64).reshape(2, 3)
    assert_same(cb.tensor(a), torch.tensor(a))
    assert_same(cb.tensor(a.T), torch.tensor(a.T))
    t = cb.tensor([1, 2, 3])
    c = cb.tensor(t, dtype=cb.float32)
    assert_same(c, torch.tensor([1.0, 2.0, 3.0]))


@pytest.mark.parametrize("np_dtype", ["float32", "float64", "float16", "int64", "int32", "int16", "uint8", "bool"])
def test_from_numpy(np_dtype):
    a = (np.arange(12).reshape(3, 4) % 3).astype(np_dtype)
    assert_same(cb.from_numpy(a), torch.from_numpy(a))
    assert_same(cb.from_numpy(a[:, ::2]), torch.from_numpy(np.ascontiguousarray(a[:, ::2])))


def test_from_numpy_unsupported_dtype():
    with pytest.raises(TypeError, match="can't convert np.ndarray"):
        cb.from_numpy(np.array(["a", "b"]))
    with pytest.raises(TypeError):
        cb.from_numpy([1, 2])


@pytest.mark.parametrize("fn", ["zeros", "ones", "empty"])
@pytest.mark.parametrize("size", [((),), (3,), (2, 3), ((2, 3),), ([4, 0],)])
def test_factories(fn, size):
    ours, ref = getattr(cb, fn)(*size), getattr(torch, fn)(*size)
    assert tuple(ours.shape) == tuple(ref.shape) and dtype_name(ours.dtype) == dtype_name(ref.dtype)
    if fn != "empty":
        assert_same(ours, ref)


def test_factories_dtype_and_negative():
    assert_same(cb.zeros(2, 3, dtype=cb.int32), torch.zeros(2, 3, dtype=torch.int32))
    assert_same(cb.ones((2,), dtype=cb.float16), torch.ones((2,), dtype=torch.float16))
    with pytest.raises(RuntimeError, match="negative dimension"):
        cb.zeros(-1, 2)


@pytest.mark.parametrize("value", [1, 2.5, True])
def test_full_infers_dtype(value):
    assert_same(cb.full((2, 3), value), torch.full((2, 3), value))
    assert_same(cb.full((2,), value, dtype=cb.float64), torch.full((2,), value, dtype=torch.float64))


def test_like_and_new():
    t, x = torch.tensor([[1, 2], [3, 4]], dtype=torch.int32), cb.tensor([[1, 2], [3, 4]], dtype=cb.int32)
    for fn in ("zeros_like", "ones_like"):
        assert_same(getattr(cb, fn)(x), getattr(torch, fn)(t))
        assert_same(getattr(cb, fn)(x, dtype=cb.float32), getattr(torch, fn)(t, dtype=torch.float32))
    assert_same(cb.full_like(x, 7), torch.full_like(t, 7))
    assert_same(x.new_zeros(3), t.new_zeros(3))
    assert_same(x.new_ones((2, 2)), t.new_ones((2, 2)))
    assert_same(x.new_full((2,), 5), t.new_full((2,), 5))
    assert_same(x.new_tensor([1.7, 2]), t.new_tensor([1.7, 2]))
    assert tuple(x.new_empty(4).shape) == (4,)


@pytest.mark.parametrize("args", [(5,), (2, 7), (1, 10, 3), (0.0, 1.0, 0.25), (5, 0, -1), (0, 2.5, 0.5), (3, 3), (1.5,), (-4, 5, 3)])
def test_arange(args):
    assert_same(cb.arange(*args), torch.arange(*args))


def test_arange_dtype_and_errors():
    assert_same(cb.arange(5, dtype=cb.float32), torch.arange(5, dtype=torch.float32))
    assert_same(cb.arange(0, 1, 0.1), torch.arange(0, 1, 0.1))
    with pytest.raises(RuntimeError):
        cb.arange(0, 5, 0)


@pytest.mark.parametrize("args", [(3,), (2, 4), (4, 2)])
def test_eye(args):
    assert_same(cb.eye(*args), torch.eye(*args))
    assert_same(cb.eye(*args, dtype=cb.int64), torch.eye(*args, dtype=torch.int64))


@pytest.mark.parametrize("args", [(0, 1, 5), (-2, 2, 1), (0, 1, 0), (1, 10, 7), (3, -3, 4)])
def test_linspace_logspace(args):
    assert_same(cb.linspace(*args), torch.linspace(*args))
    assert_same(cb.logspace(*args), torch.logspace(*args), rtol=1e-5)


def test_random_is_seeded_and_shaped():
    cb.manual_seed(42)
    a = cb.rand(3, 4)
    cb.manual_seed(42)
    b = cb.rand(3, 4)
    assert a.tolist() == b.tolist()
    assert tuple(a.shape) == (3, 4) and a.dtype == cb.float32
    assert 0.0 <= a.min().item() and a.max().item() < 1.0
    n = cb.randn(20000)
    assert abs(n.mean().item()) < 0.05 and abs(n.std().item() - 1) < 0.05
    r = cb.randint(3, 7, (1000,))
    assert r.dtype == cb.int64 and r.min().item() >= 3 and r.max().item() <= 6
    r = cb.randint(5, (2, 2))
    assert tuple(r.shape) == (2, 2)
    assert cb.rand_like(a).shape == a.shape and cb.randn_like(a).dtype == cb.float32
    p = cb.randperm(10)
    assert sorted(p.tolist()) == list(range(10))
    with pytest.raises(RuntimeError):
        cb.randint(5, 5, (2,))


def test_as_tensor_shares_when_possible():
    x = cb.tensor([1.0, 2.0])
    assert cb.as_tensor(x) is not None
    assert_same(cb.as_tensor([1, 2], dtype=cb.float64), torch.as_tensor([1, 2], dtype=torch.float64))
