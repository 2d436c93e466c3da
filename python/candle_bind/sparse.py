"""torch.sparse: the sparse COO layout, as far as inference code uses it.

Candle has no sparse storage, so a sparse COO tensor here is a Tensor subclass that keeps its dense
values and answers torch's sparse questions about them (`layout`, `indices()`, `values()`, `_nnz()`,
`to_dense()`, repr). Libraries build one from a small mask and read its indices back (whisper's
alignment heads: `mask.to_sparse()`, later `heads.indices().T`). Only `Tensor.to_sparse()` builds one,
so it is always coalesced, as torch's result is. Other ops see the dense values and give dense results.
"""

from __future__ import annotations

from ._C import Tensor

__all__ = ["SparseCooTensor"]


class SparseCooTensor(Tensor):
    """A coalesced sparse COO tensor over dense storage: the first `sparse_dim()` dims are sparse."""

    _sparse_dim: int

    @property
    def is_sparse(self) -> bool:
        return True

    @property
    def layout(self):
        from ._runtime import sparse_coo

        return sparse_coo

    def sparse_dim(self) -> int:
        return self._sparse_dim

    def dense_dim(self) -> int:
        return self.dim() - self._sparse_dim

    def is_coalesced(self) -> bool:
        return True

    def coalesce(self) -> SparseCooTensor:
        return self

    def _mask(self) -> Tensor:
        """Which sparse positions hold an entry: any nonzero among their dense values."""
        dense = Tensor.detach(self)
        nonzero = dense != 0
        if self.dense_dim():
            nonzero = nonzero.reshape(*self.shape[: self._sparse_dim], -1).any(-1)
        return nonzero

    def indices(self) -> Tensor:
        """(sparse_dim, nnz) int64 coordinates in row-major order, as torch's coalesced tensor."""
        mask = self._mask()
        if mask.dim() == 0:  # a 0-d tensor: no coordinates, one entry unless it is zero
            return mask.reshape(1).nonzero().t()[:0]
        return mask.nonzero().t().contiguous()

    def values(self) -> Tensor:
        return Tensor.detach(self)[self._mask()]

    _indices, _values = indices, values

    def _nnz(self) -> int:
        return int(self._mask().sum().item())

    def to_dense(self, dtype=None, *, masked_grad=None) -> Tensor:
        dense = Tensor.detach(self).clone()
        return dense if dtype is None else dense.to(dtype)

    def to(self, *args, **kwargs):
        out = Tensor.to(self, *args, **kwargs)
        return out if out is self else _wrap(out, self._sparse_dim)

    def cpu(self):
        return self.to("cpu")

    def cuda(self, device=None, non_blocking=False):
        return self.to("cuda" if device is None else device)

    def clone(self, *, memory_format=None):
        return _wrap(Tensor.clone(self), self._sparse_dim)

    def to_sparse(self, sparse_dim=None, *, layout=None, blocksize=None, dense_dim=None):
        if sparse_dim is not None and sparse_dim != self._sparse_dim:
            raise RuntimeError("to_sparse: conversion from Sparse to Sparse with sparse_dim argument "
                               "!=self.sparse_dim() is not supported")
        return self

    def __repr__(self) -> str:
        indices, values = repr(self.indices()), repr(self.values())
        return (_indent("tensor(indices=", indices) + ",\n" + _indent("       values=", values) + ",\n"
                + f"       size={tuple(self.shape)}, nnz={self._nnz()}, layout=torch.sparse_coo)")

    __str__ = __repr__

    def __reduce_ex__(self, protocol):
        return (_rebuild, (self.to_dense(), self._sparse_dim))


def _indent(prefix: str, text: str) -> str:
    pad = " " * len(prefix)
    return prefix + "\n".join(line if i == 0 or not line else pad + line for i, line in enumerate(text.split("\n")))


def _wrap(dense: Tensor, sparse_dim: int) -> SparseCooTensor:
    out = SparseCooTensor(dense)
    out._sparse_dim = sparse_dim
    return out


def _rebuild(dense: Tensor, sparse_dim: int) -> SparseCooTensor:
    return _wrap(dense, sparse_dim)


def to_sparse(self: Tensor, sparse_dim=None, *, layout=None, blocksize=None, dense_dim=None) -> SparseCooTensor:
    """`Tensor.to_sparse()`: the COO layout (torch's default); the compressed layouts are not served."""
    if layout is not None and str(layout) != "torch.sparse_coo":
        raise NotImplementedError(f"to_sparse(layout={layout}) is not supported by candle_bind yet; only the "
                                  "sparse COO layout (the default) is")
    if blocksize is not None or dense_dim is not None:
        raise NotImplementedError("to_sparse(blocksize=, dense_dim=) (compressed layouts) is not supported by "
                                  "candle_bind yet")
    ndim = self.dim()
    if sparse_dim is None:
        sparse_dim = ndim
    if not 0 <= sparse_dim <= ndim:
        raise RuntimeError(f"sparse_dim argument must be in [0,{ndim}] range, but {sparse_dim} is given")
    if sparse_dim == 0 and ndim > 0:
        raise RuntimeError("dense_to_sparse: sparse_dim argument must be in >0 when self.dim()>0")
    return _wrap(Tensor.detach(self).clone(), sparse_dim)

