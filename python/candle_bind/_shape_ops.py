"""torch's view-op copies (`*_copy`), splits under their other names, `atleast_*d`, `*_scatter` (the inverse
of a view: `input` with the view's elements replaced by `src`), resize_/sum_to_size, the real-dtype identities
of the complex ops (conj, resolve_conj, ...), and small factories. A family module (see _OP_FAMILIES).
"""

from __future__ import annotations

import builtins
import itertools
import math

from . import _C
from ._C import Tensor
from ._ops import _dim


def _sizes(args) -> tuple:
    """`f(2, 3)` or `f((2, 3))` -> (2, 3)."""
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        return tuple(args[0])
    return tuple(args)


def _is_complex(x) -> bool:
    from ._complex import ComplexTensor

    return isinstance(x, ComplexTensor)


# ------------------------------------------------------------------------------- copies of views

def adjoint(input):
    if input.dim() < 2:
        raise RuntimeError("tensor.adjoint() is only supported on matrices or batches of matrices. "
                           f"Got {input.dim()}-D tensor.")
    return input.mH


def alias_copy(input):
    return input.clone()


def as_strided_copy(input, size, stride, storage_offset=None):
    return input.as_strided(size, stride, storage_offset).clone()


def diagonal_copy(input, offset=0, dim1=0, dim2=1):
    return input.diagonal(offset, dim1, dim2).clone()


def expand_copy(input, size, *, implicit=False):
    return input.expand(*size).clone()


def narrow_copy(input, dim, start, length):
    if input.dim() == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    if dim >= input.dim():
        raise RuntimeError("Expected dim < static_cast<int64_t>(self_sizes.size()) to be true, but got false.")
    d = _dim(dim, input.dim())
    n = input.shape[d]
    if not -n <= start <= n:
        raise IndexError(f"start out of range (expected to be in range of [{-n}, {n}], but got {start})")
    start = start + n if start < 0 else start
    if length < 0 or start + length > n:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({n}).")
    return input.narrow(d, start, length).clone()


def permute_copy(input, dims):
    return input.permute(*dims).clone()


def squeeze_copy(input, dim=None):
    return (input.squeeze() if dim is None else input.squeeze(dim)).clone()


def t_copy(input):
    return input.t().clone()


def transpose_copy(input, dim0, dim1):
    return input.transpose(dim0, dim1).clone()


def unbind_copy(input, dim=0):
    return tuple(t.clone() for t in input.unbind(dim))


def unfold_copy(input, dimension, size, step):
    return input.unfold(dimension, size, step).clone()


def unsqueeze_copy(input, dim):
    return input.unsqueeze(dim).clone()


def view_copy(input, size):
    if not isinstance(size, (list, tuple)) and not isinstance(size, int):  # view_copy(x, dtype)
        return input.view(size).clone()
    return input.view(*_sizes((size,))).clone()


# ----------------------------------------------------------------------------------------- splits

def split_with_sizes(input, split_sizes, dim=0):
    return input.split(list(split_sizes), dim)


def split_with_sizes_copy(input, split_sizes, dim=0):
    return tuple(t.clone() for t in split_with_sizes(input, split_sizes, dim))


def unsafe_chunk(input, chunks, dim=0):
    return input.chunk(chunks, dim)


def unsafe_split(input, split_size, dim=0):
    return input.split(split_size, dim)


def _directional_split(name: str, min_dim: int, dim: int):
    def split(input, indices_or_sections):
        if input.dim() < min_dim:
            raise RuntimeError(f"torch.{name} requires a tensor with at least {min_dim} dimension, but got a tensor "
                               f"with {input.dim()} dimensions!")
        if not isinstance(indices_or_sections, (int, list, tuple)) or isinstance(indices_or_sections, bool):
            raise TypeError(f"{name}() received an invalid combination of arguments - got "
                            f"({type(indices_or_sections).__name__}), expected (int sections) or (tuple of ints indices)")
        d = 0 if input.dim() == 1 and name == "hsplit" else dim
        if isinstance(indices_or_sections, int):
            n = input.shape[d]
            if indices_or_sections == 0 or n % indices_or_sections:
                raise RuntimeError(f"torch.{name} attempted to split along dimension {d}, but the size of the "
                                   f"dimension {n} is not divisible by the split_size {indices_or_sections}!")
        return input.tensor_split(indices_or_sections, d)

    split.__name__ = split.__qualname__ = name
    return split


hsplit = _directional_split("hsplit", 1, 1)
vsplit = _directional_split("vsplit", 2, 0)
dsplit = _directional_split("dsplit", 3, 2)


def ravel(input):
    return input.reshape(-1)


def _atleast(n: int):
    def atleast(*tensors):
        if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
            return tuple(atleast(t) for t in tensors[0])
        if len(tensors) != 1:
            return tuple(atleast(t) for t in tensors)
        x = tensors[0]
        if x.dim() >= n:
            return x
        if x.dim() == 0:
            return x.reshape(*([1] * n))
        if n == 2:
            return x.unsqueeze(0)
        return x.reshape(1, -1, 1) if x.dim() == 1 else x.unsqueeze(-1)  # n == 3: [N] -> [1, N, 1], [M, N] -> [M, N, 1]

    atleast.__name__ = atleast.__qualname__ = f"atleast_{n}d"
    return atleast


atleast_1d, atleast_2d, atleast_3d = _atleast(1), _atleast(2), _atleast(3)


def row_stack(tensors, *, out=None):
    from . import vstack

    return vstack(tensors, out=out) if out is not None else vstack(tensors)


# ------------------------------------------------------------------- scatters: inverses of views

def _view_scatter(input, src, view, what: str):
    """`input` with the elements `view(input)` selects replaced by `src` (torch's *_scatter ops): the view is
    taken of the elements' flat positions, so any view composes."""
    n = input.numel()
    pos = view(_C.arange(n).reshape(*input.shape)) if n else view(_C.zeros(*input.shape, dtype=_C.int64))
    if tuple(pos.shape) != tuple(src.shape):
        raise RuntimeError(f"{what}: expected src to have a size equal to the slice of self. src size = "
                           f"{list(src.shape)}, slice size = {list(pos.shape)}")
    out = input.clone()
    if pos.numel():
        flat = out.reshape(-1)
        flat[pos.reshape(-1)] = src.reshape(-1).to(input.dtype)
        out = flat.reshape(*input.shape)
    return out


def select_scatter(input, src, dim, index):
    return _view_scatter(input, src, lambda t: t.select(dim, index), "select_scatter")


def slice_scatter(input, src, dim=0, start=None, end=None, step=1):
    d = _dim(dim, input.dim())
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    key = (builtins.slice(None),) * d + (builtins.slice(start, end, step),)
    return _view_scatter(input, src, lambda t: t[key], "slice_scatter")


def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    return _view_scatter(input, src, lambda t: t.diagonal(offset, dim1, dim2), "diagonal_scatter")


def as_strided_scatter(input, src, size, stride, storage_offset=None):
    return _view_scatter(input, src, lambda t: t.as_strided(size, stride, storage_offset), "as_strided_scatter")


# ------------------------------------------------------------------------------------- reshaping

def resize_(self, *sizes, memory_format=None):
    """torch's resize_: the tensor takes the new shape over its elements in order, cut short or grown
    (grown elements are uninitialised in torch; zeros here)."""
    size = _sizes(sizes)
    if builtins.any(s < 0 for s in size):
        raise RuntimeError(f"Trying to create tensor with negative dimension {builtins.min(size)}: {list(size)}")
    n, have = math.prod(size), self.numel()
    flat = self.reshape(-1)
    if n > have:
        flat = _C.cat([flat, _C.zeros(n - have, dtype=self.dtype)])
    self.data = flat[:n].reshape(*size)
    return self


def resize_as_(self, the_template, *, memory_format=None):
    return resize_(self, tuple(the_template.shape))


def sum_to_size(self, *size):
    size = _sizes(size)
    shape = tuple(self.shape)
    if len(size) > len(shape) or builtins.any(
            s != 1 and s != h for s, h in zip(size[::-1], shape[::-1])):
        raise RuntimeError(f"size {{{', '.join(map(str, size))}}} is not expandable to size "
                           f"{{{', '.join(map(str, shape))}}}.")
    if not size:  # at::sum_to: an empty shape is a full sum (int -> int64 even for a 0-d input)
        return self.sum()
    lead = len(shape) - len(size)
    dims = list(range(lead)) + [lead + i for i, s in enumerate(size) if s == 1 and shape[lead + i] != 1]
    out = self.sum(dims, keepdim=True) if dims else self
    return out.reshape(*size) if lead else out


# ------------------------------------------------------------------- real-dtype identities

def positive(input):
    if input.dtype == _C.bool:
        raise NotImplementedError("The `+` operator, on a bool tensor is not supported.")
    return input


def conj(self):
    return self


def conj_physical(self):
    return self.clone()


def conj_physical_(self):
    return self


def resolve_conj(self):
    return self


resolve_neg = resolve_conj


def angle(self):
    from ._complex_ops import angle as _angle

    return _angle(self)


def isreal(input):
    if _is_complex(input):
        return _complex_isreal(input)
    return _C.ones(*input.shape, dtype=_C.bool)


def _complex_isreal(self):
    return self.imag == 0


def _install_complex() -> None:
    # torch.isreal dispatches to the method for a complex input; the complex tensor's own answers
    from ._complex import ComplexTensor

    ComplexTensor.isreal = _complex_isreal


_install_complex()


def chalf(self, memory_format=None):
    raise NotImplementedError("Tensor.chalf: complex32 is not supported by candle_bind yet (use .cfloat())")


def __rdiv__(self, other):
    return self.__rtruediv__(other)


# -------------------------------------------------------------------------------------- factories

def empty_strided(size, stride, *, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False):
    """A contiguous tensor of `size` (its values are uninitialised in torch; `stride` is not kept)."""
    from . import empty

    return empty(tuple(size), dtype=dtype, device=device, requires_grad=requires_grad)


def new_empty_strided(self, size, stride, *, dtype=None, layout=None, device=None, requires_grad=False,
                      pin_memory=False):
    return empty_strided(size, stride, dtype=self.dtype if dtype is None else dtype,
                         device=self.device if device is None else device, requires_grad=requires_grad)


def empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None, requires_grad=False,
                   pin_memory=False):
    if sorted(physical_layout) != list(range(len(size))):
        raise RuntimeError(f"Number of dimensions in size does not match the length of the physical_layout; "
                           f"i.e. len(size) = {len(size)} is not equal to len(physical_layout) = {len(physical_layout)}")
    return empty_strided(size, None, dtype=dtype, device=device, requires_grad=requires_grad)


def fill(input, value):
    if isinstance(value, Tensor) and value.dim():
        raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with {value.dim()} "
                           "dimensions.")
    return input.clone().fill_(value)


def zero_(input):
    return input.zero_()


def diagflat(input, offset=0):
    return _C.diag(input.reshape(-1), offset) if hasattr(_C, "diag") else input.reshape(-1).diag(offset)


def combinations(input, r=2, with_replacement=False):
    if input.dim() != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return _C.empty(0, dtype=input.dtype)
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    idx = list(pick(range(input.shape[0]), r))
    if not idx:
        return _C.empty(0, r, dtype=input.dtype)
    return input[_C.tensor(idx, dtype=_C.int64).reshape(-1)].reshape(len(idx), r)


def unravel_index(indices, shape):
    if not isinstance(indices, Tensor):
        indices = _C.tensor(indices)
    if indices.is_floating_point() or indices.dtype == _C.bool:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype}")
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    if builtins.any(s < 0 for s in shape):
        raise ValueError("'shape' cannot have negative values, but got " + str(shape))
    n = math.prod(shape)
    idx = indices.long()
    if idx.numel() and (int(idx.min().item()) < -n or int(idx.max().item()) >= n):
        raise ValueError(f"'indices' must be in range [-{n}, {n - 1}]")
    idx = idx.remainder(n) if n else idx
    out = []
    for s in reversed(shape):
        out.append(idx.remainder(s) if s else idx)
        idx = idx.div(s, rounding_mode="floor") if s else idx
    return tuple(reversed(out))


def constant_pad_nd(input, pad, value=0):
    from .nn.functional import pad as _pad

    return _pad(input, list(pad), mode="constant", value=value)


FUNCTIONS = (
    "adjoint", "alias_copy", "as_strided_copy", "diagonal_copy", "expand_copy", "narrow_copy", "permute_copy",
    "squeeze_copy", "t_copy", "transpose_copy", "unbind_copy", "unfold_copy", "unsqueeze_copy", "view_copy",
    "split_with_sizes", "split_with_sizes_copy", "unsafe_chunk", "unsafe_split", "hsplit", "vsplit", "dsplit",
    "ravel", "atleast_1d", "atleast_2d", "atleast_3d", "row_stack", "select_scatter", "slice_scatter",
    "diagonal_scatter", "as_strided_scatter", "resize_as_", "positive", "isreal", "empty_strided",
    "empty_permuted", "fill", "zero_", "diagflat", "combinations", "unravel_index", "constant_pad_nd",
)
METHODS = (
    "adjoint", "narrow_copy", "split_with_sizes", "unsafe_chunk", "unsafe_split", "hsplit", "vsplit", "dsplit",
    "ravel", "select_scatter", "slice_scatter", "diagonal_scatter", "as_strided_scatter", "resize_", "resize_as_",
    "sum_to_size", "positive", "conj", "conj_physical", "conj_physical_", "resolve_conj", "resolve_neg", "angle",
    "isreal", "chalf", "__rdiv__", "new_empty_strided", "diagflat",
)
INPLACE = ()
