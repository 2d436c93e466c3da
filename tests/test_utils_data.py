"""torch.utils.data: the same datasets, samplers and loaders give torch's batches (same structure,
shapes, dtypes, values); checkpoint runs the function."""

import numpy as np
import pytest
import torch
import torch.utils.data as tdata

import candle_bind as cb
import candle_bind.utils.data as cdata
from candle_bind.utils.checkpoint import checkpoint


def same(a, b):
    """Recursively compares a torch batch with ours."""
    if isinstance(a, torch.Tensor):
        assert isinstance(b, cb.Tensor) and tuple(b.shape) == tuple(a.shape) and repr(b.dtype) == repr(a.dtype)
        assert torch.equal(cb.to_torch(b), a)
    elif isinstance(a, dict):
        assert list(a) == list(b)
        for k in a:
            same(a[k], b[k])
    elif isinstance(a, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b)
        for x, y in zip(a, b):
            same(x, y)
    else:
        assert a == b


def loaders(make_dataset, **kw):
    return tdata.DataLoader(make_dataset(torch), **kw), cdata.DataLoader(make_dataset(cb), **kw)


class Records:
    def __init__(self, lib):
        self.lib = lib

    def __len__(self):
        return 7

    def __getitem__(self, i):
        return {"x": self.lib.arange(3) * i, "id": i, "w": i / 2, "name": f"s{i}", "pair": (i, np.float32(i), np.float64(i)),
                "arr": np.full((2,), i, dtype=np.int32)}


@pytest.mark.parametrize("batch_size,drop_last", [(1, False), (3, False), (3, True), (7, False), (None, False)])
def test_map_dataset_batches_match_torch(batch_size, drop_last):
    t, c = loaders(Records, batch_size=batch_size, drop_last=drop_last)
    assert len(t) == len(c)
    tb, cb_ = list(t), list(c)
    assert len(tb) == len(cb_)
    for a, b in zip(tb, cb_):
        same(a, b)


def test_tensor_dataset_subset_concat_and_iterable():
    x = torch.arange(20.0).view(10, 2)
    y = torch.arange(10)
    t = tdata.TensorDataset(x, y)
    c = cdata.TensorDataset(cb.from_torch(x), cb.from_torch(y))
    for a, b in zip(tdata.DataLoader(t, batch_size=4), cdata.DataLoader(c, batch_size=4)):
        same(a, b)
    same(tdata.Subset(t, [3, 1])[1], cdata.Subset(c, [3, 1])[1])
    tc, cc = tdata.ConcatDataset([t, t]), c + c
    assert len(tc) == len(cc) == 20
    same(tc[13], cc[13])
    same(tc[-1], cc[-1])
    with pytest.raises(AssertionError):
        cdata.TensorDataset(cb.zeros(3), cb.zeros(4))

    class Stream(cdata.IterableDataset):
        def __iter__(self):
            return iter(cb.tensor([i, i]) for i in range(5))

    batches = list(cdata.DataLoader(Stream(), batch_size=2))
    assert [tuple(b.shape) for b in batches] == [(2, 2), (2, 2), (1, 2)]


def test_shuffle_split_and_errors():
    ds = cdata.TensorDataset(cb.arange(10))
    seen = sorted(int(v) for (batch,) in cdata.DataLoader(ds, batch_size=3, shuffle=True) for v in batch.tolist())
    assert seen == list(range(10))
    a, b = cdata.random_split(ds, [0.7, 0.3])
    assert (len(a), len(b)) == (7, 3) and sorted(a.indices + b.indices) == list(range(10))
    with pytest.raises(ValueError, match="Sum of input lengths"):
        cdata.random_split(ds, [3, 3])
    with pytest.raises(ValueError, match="mutually exclusive"):
        cdata.DataLoader(ds, sampler=cdata.SequentialSampler(ds), shuffle=True)
    with pytest.raises(ValueError, match="positive integer"):
        cdata.BatchSampler(cdata.SequentialSampler(ds), 0, False)


def test_checkpoint_runs_the_function():
    assert checkpoint(lambda a, b: a + b, cb.ones(2), cb.ones(2), use_reentrant=False).tolist() == [2.0, 2.0]
