"""torch.sparse's COO tensor as far as inference code uses it (candle_bind/sparse.py): `Tensor.to_sparse()`
and what libraries read back from it (whisper's alignment heads: `mask.to_sparse()`, `.indices().T`),
against torch: layout, indices, values, nnz, dims, to_dense, repr, module buffers, pickling."""

import copy
import pickle

import pytest
import torch

import candle_bind as cb
from conftest import to_cb

CASES = {
    "bool mask": torch.tensor([[False, False], [True, True]]),
    "float": torch.tensor([[0.0, 1.5, 0.0], [2.0, 0.0, -3.0]]),
    "3-d ints": torch.tensor([[[0, 1], [0, 0]], [[2, 0], [0, 3]]]),
    "all zero": torch.zeros(2, 3),
    "1-d": torch.tensor([0.0, 4.0, 0.0, 5.0]),
    "0-d": torch.tensor(3.0),
    "0-d zero": torch.tensor(0.0),
}


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("sparse_dim", [None, 1])
def test_to_sparse_matches_torch(name, sparse_dim):
    dense = CASES[name]
    if sparse_dim and dense.dim() == 0:
        pytest.skip("a 0-d tensor has no dim to make sparse")
    want = dense.to_sparse(sparse_dim) if sparse_dim else dense.to_sparse()
    got = to_cb(dense).to_sparse(sparse_dim) if sparse_dim else to_cb(dense).to_sparse()
    assert got.is_sparse and str(got.layout) == str(want.layout) == "torch.sparse_coo"
    assert got.is_coalesced() and got._nnz() == want._nnz()
    assert (got.sparse_dim(), got.dense_dim()) == (want.sparse_dim(), want.dense_dim())
    assert got.indices().tolist() == want.indices().tolist() and str(got.indices().dtype) == "torch.int64"
    assert got.values().tolist() == want.values().tolist()
    assert got.to_dense().tolist() == want.to_dense().tolist() and not got.to_dense().is_sparse
    assert list(got.shape) == list(want.shape) and str(got.dtype) == str(want.dtype)
    if want._nnz():
        assert repr(got) == repr(want)


def test_layout_and_conversions():
    x = cb.tensor([[0.0, 1.0], [2.0, 0.0]])
    assert str(x.layout) == "torch.strided" and not x.is_sparse
    s = x.to_sparse()
    assert s.to("cpu") is s and s.to(cb.float64).is_sparse and s.to(cb.float64).dtype == cb.float64
    assert s.clone().is_sparse and s.coalesce() is s and s.to_sparse() is s
    assert x.to_sparse_coo().indices().tolist() == [[0, 1], [1, 0]]
    for back in (pickle.loads(pickle.dumps(s)), copy.deepcopy(s)):
        assert back.is_sparse and back.indices().tolist() == s.indices().tolist()


def test_module_buffer_survives_to():
    """whisper registers the sparse mask as a non-persistent buffer, then calls model.to(device)."""
    m = cb.nn.Module()
    m.register_buffer("heads", cb.tensor([[False, True], [True, True]]).to_sparse(), persistent=False)
    m.to("cpu").float()
    assert m.heads.is_sparse and m.heads.indices().T.tolist() == [[0, 1], [1, 0], [1, 1]]
    assert "heads" not in m.state_dict()


def test_errors():
    x = cb.zeros(2, 2)
    with pytest.raises(RuntimeError, match="sparse_dim argument must be in"):
        x.to_sparse(3)
    with pytest.raises(RuntimeError, match="sparse_dim argument must be in >0"):
        x.to_sparse(0)
    with pytest.raises(NotImplementedError, match="layout"):
        x.to_sparse(layout=cb.sparse_csr)
