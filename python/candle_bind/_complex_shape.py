"""ComplexTensor's shape and layout methods (the class is in _complex.py; its pairs are [..., 2]).

Views that keep the pair dim last work on the pairs with the dims mapped; ops that are real-linear
(they move, pick, sum or fill elements: tile, diagonal, tril, gather, cumsum, scatter, ...) run on the
real and imaginary parts, whose results are joined again."""

from __future__ import annotations

import builtins

from . import _C
from ._C import Tensor
from ._complex import ComplexTensor, _dim, _dims, _join, _pairs, _adopt, complex_from_real


class _Shape:
    def __getitem__(self, index):
        if not isinstance(index, tuple):
            index = (index,)
        if any(i is Ellipsis for i in index):
            index = index + (slice(None),)
        else:
            index = index + (Ellipsis, slice(None))
        return ComplexTensor(_pairs(self)[index])

    def __setitem__(self, index, value):
        if not isinstance(index, tuple):
            index = (index,)
        index = index + ((slice(None),) if any(i is Ellipsis for i in index) else (Ellipsis, slice(None)))
        p = _pairs(self)
        if isinstance(value, ComplexTensor):
            v = _pairs(value).to(p.dtype)
        elif isinstance(value, Tensor):
            v = _C.stack([value.to(p.dtype), _C.zeros_like(value, dtype=p.dtype)], -1)
        else:
            value = builtins.complex(value)
            v = _C.tensor([value.real, value.imag], dtype=p.dtype)
        p[index] = v

    def reshape(self, *shape):
        shape = shape[0] if len(shape) == 1 and isinstance(shape[0], (list, tuple)) else shape
        return ComplexTensor(_pairs(self).reshape(*shape, 2))

    def view(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], _C.dtype):
            if shape[0] == self.dtype:
                return self
            raise unsupported(f"Tensor.view({shape[0]})", self.dtype)
        shape = shape[0] if len(shape) == 1 and isinstance(shape[0], (list, tuple)) else shape
        return ComplexTensor(_pairs(self).view(*shape, 2))

    def reshape_as(self, other):
        return self.reshape(*other.shape)

    def view_as(self, other):
        return self.view(*other.shape)

    def permute(self, *dims):
        dims = dims[0] if len(dims) == 1 and isinstance(dims[0], (list, tuple)) else dims
        n = self.dim()
        return ComplexTensor(_pairs(self).permute(*[_dim(d, n) for d in dims], n))

    def transpose(self, dim0, dim1):
        n = self.dim()
        if n == 0:
            return self
        return ComplexTensor(_pairs(self).transpose(_dim(dim0, n), _dim(dim1, n)))

    swapaxes = swapdims = transpose

    def t(self):
        if self.dim() > 2:
            raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {self.dim()}D")
        return self.transpose(0, 1) if self.dim() == 2 else self

    def unsqueeze(self, dim):
        n = self.dim() + 1
        if not -n <= dim < n:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
        return ComplexTensor(_pairs(self).unsqueeze(dim + n if dim < 0 else dim))

    def squeeze(self, dim=None):
        shape = self.shape
        if dim is None:
            dims = [i for i, s in enumerate(shape) if s == 1]
        else:
            dims = [d for d in _dims(dim, len(shape)) if shape[d] == 1] if shape else []
        keep = [s for i, s in enumerate(shape) if i not in dims]
        return ComplexTensor(_pairs(self).reshape(*keep, 2))

    def flatten(self, start_dim=0, end_dim=-1):
        n = self.dim()
        if n == 0:
            return self.reshape(1)
        s, e = _dim(start_dim, n), _dim(end_dim, n)
        return ComplexTensor(_pairs(self).flatten(s, e)) if s <= e else self

    def unflatten(self, dim, sizes):
        return ComplexTensor(_pairs(self).unflatten(_dim(dim, self.dim()), sizes))

    def expand(self, *sizes):
        sizes = sizes[0] if len(sizes) == 1 and isinstance(sizes[0], (list, tuple)) else sizes
        return ComplexTensor(_pairs(self).expand(*sizes, 2))

    def broadcast_to(self, size):
        return self.expand(*size)

    def expand_as(self, other):
        return self.expand(*other.shape)

    def flip(self, *dims):
        dims = dims[0] if len(dims) == 1 and isinstance(dims[0], (list, tuple)) else dims
        return ComplexTensor(_pairs(self).flip(_dims(list(dims), self.dim())))

    def roll(self, shifts, dims=None):
        if dims is None:
            return self.flatten().roll(shifts, 0).reshape(*self.shape)
        dims = _dims(dims, self.dim())
        return ComplexTensor(_pairs(self).roll(shifts, dims if len(dims) > 1 else dims[0]))

    def narrow(self, dim, start, length):
        return ComplexTensor(_pairs(self).narrow(_dim(dim, self.dim()), start, length))

    def select(self, dim, index):
        return ComplexTensor(_pairs(self).select(_dim(dim, self.dim()), index))

    def chunk(self, chunks, dim=0):
        return tuple(ComplexTensor(p) for p in _pairs(self).chunk(chunks, _dim(dim, self.dim())))

    def split(self, split_size, dim=0):
        return tuple(ComplexTensor(p) for p in _pairs(self).split(split_size, _dim(dim, self.dim())))

    def unbind(self, dim=0):
        return tuple(ComplexTensor(p) for p in _pairs(self).unbind(_dim(dim, self.dim())))

    def repeat(self, *sizes):
        sizes = sizes[0] if len(sizes) == 1 and isinstance(sizes[0], (list, tuple)) else sizes
        return ComplexTensor(_pairs(self).repeat(*sizes, 1))

    def index_select(self, dim, index):
        return ComplexTensor(_pairs(self).index_select(_dim(dim, self.dim()), index))

    def masked_fill(self, mask, value):
        value = builtins.complex(value.item() if isinstance(value, Tensor) else value)
        p = _pairs(self)
        m = mask.unsqueeze(-1)
        fill = _C.tensor([value.real, value.imag], dtype=p.dtype)
        return ComplexTensor(_C.where(m, fill, p))

    def flip(self, *dims, **kwargs):
        dims = kwargs.get("dims", dims)
        dims = dims[0] if len(dims) == 1 and isinstance(dims[0], (list, tuple)) else dims
        return ComplexTensor(_pairs(self).flip(_dims(list(dims), self.dim())))

    def movedim(self, source, destination):
        n = self.dim()
        return ComplexTensor(_pairs(self).movedim(_dims(source, n), _dims(destination, n)))

    moveaxis = movedim

    def as_strided(self, size, stride, storage_offset=None):
        # strides count complex elements: twice as many floats in the pairs' storage
        offset = Tensor.storage_offset(self) if storage_offset is None else 2 * storage_offset
        return ComplexTensor(_pairs(self).as_strided([*size, 2], [2 * s for s in stride] + [1], offset))

    # in-place view changes: the tensor takes the view's pairs (same memory)
    def _rebind(self, view):
        self.data = view
        return self

    def unsqueeze_(self, dim):
        return self._rebind(self.unsqueeze(dim))

    def squeeze_(self, dim=None):
        return self._rebind(self.squeeze(dim))

    def transpose_(self, dim0, dim1):
        return self._rebind(self.transpose(dim0, dim1))

    swapdims_ = swapaxes_ = transpose_

    def t_(self):
        return self._rebind(self.t())

    def as_strided_(self, size, stride, storage_offset=None):
        return self._rebind(self.as_strided(size, stride, storage_offset))


def _on_parts(name: str):
    """Tensor.<name> of a real-linear op: the op on the real and on the imaginary parts (complex tensor
    and complex number arguments split likewise; index and other arguments go to both)."""
    def method(self, *args, **kwargs):
        re_args, im_args = zip(*(_split(a) for a in (self, *args)))
        re_kw, im_kw = {}, {}
        for k, v in kwargs.items():
            re_kw[k], im_kw[k] = _split(v)
        re = getattr(Tensor, name)(*re_args, **re_kw)
        im = getattr(Tensor, name)(*im_args, **im_kw)
        if isinstance(re, Tensor):
            return _join(re, im)
        if isinstance(re, (tuple, list)):
            return type(re)(_join(r, i) for r, i in zip(re, im))
        return re

    method.__name__ = method.__qualname__ = name
    return method


def _split(a):
    if isinstance(a, ComplexTensor):  # (contiguous: some kernels index only dense memory)
        return a.real.contiguous(), a.imag.contiguous()
    if isinstance(a, builtins.complex):
        return a.real, a.imag
    if isinstance(a, (list, tuple)) and any(isinstance(x, ComplexTensor) for x in a):
        parts = [_split(x) for x in a]
        return type(a)(p[0] for p in parts), type(a)(p[1] for p in parts)
    return a, a


_LINEAR = ("tile", "rot90", "unfold", "diagonal", "diff", "tril", "triu", "diag", "diag_embed", "diagflat", "take",
           "take_along_dim", "gather", "masked_select", "repeat_interleave", "cumsum", "trace", "tensor_split",
           "hsplit", "vsplit", "dsplit", "flipud", "fliplr", "narrow_copy", "index_copy", "index_fill", "index_add",
           "scatter", "scatter_add", "put", "index_put", "masked_scatter", "unfold_copy", "diagonal_copy",
           )
for _n in _LINEAR:
    if hasattr(Tensor, _n) and _n not in vars(_Shape):
        setattr(_Shape, _n, _on_parts(_n))


def _mixed_real_source(name: str, pos: int, key: str):
    """index_add/index_copy/scatter/... with a real source into a complex tensor: the source made complex."""
    linear = getattr(_Shape, name)

    def method(self, *args, **kwargs):
        args = list(args)
        if kwargs.get("reduce") == "multiply":  # a product does not split into real and imaginary parts
            raise NotImplementedError(f"{name}(reduce='multiply') is not supported for complex tensors by candle_bind yet")
        if len(args) > pos and isinstance(args[pos], Tensor) and not isinstance(args[pos], ComplexTensor):
            args[pos] = complex_from_real(args[pos], self.dtype)
        if isinstance(kwargs.get(key), Tensor) and not isinstance(kwargs[key], ComplexTensor):
            kwargs[key] = complex_from_real(kwargs[key], self.dtype)
        # a real number filled in is a complex one with no imaginary part (not the same number in both parts)
        if len(args) > pos and isinstance(args[pos], (builtins.int, builtins.float)) and not isinstance(args[pos], builtins.bool):
            args[pos] = builtins.complex(args[pos])
        for k in (key, "value"):
            if isinstance(kwargs.get(k), (builtins.int, builtins.float)) and not isinstance(kwargs[k], builtins.bool):
                kwargs[k] = builtins.complex(kwargs[k])
        return linear(self, *args, **kwargs)

    method.__name__ = method.__qualname__ = name
    return method


for _n, _pos, _key in (("index_add", 2, "source"), ("index_copy", 2, "source"), ("scatter", 2, "src"),
                       ("scatter_add", 2, "src"), ("put", 1, "source"), ("masked_scatter", 1, "source"),
                       ("index_fill", 2, "value")):
    if hasattr(_Shape, _n):
        setattr(_Shape, _n, _mixed_real_source(_n, _pos, _key))


_adopt(_Shape)
