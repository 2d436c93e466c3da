"""torch's shape and layout helpers composed from views, cat and indexing: tile/movedim/tensor_split, stacks,
meshgrid, diagonals, triangle indices, strided views (as copies), diff. A family module (see _OP_FAMILIES).
"""

from __future__ import annotations

import builtins

from . import _C
from ._C import Tensor
from ._ops import _dim, _int_list


def tile(input, dims):
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    if len(dims) < input.dim():
        dims = (1,) * (input.dim() - len(dims)) + dims
    return input.repeat(*dims)


def movedim(input, source, destination):
    src = [source] if isinstance(source, int) else list(source)
    dst = [destination] if isinstance(destination, int) else list(destination)
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({src} dims) should contain the "
                           f"same number of dims as destination ({dst} dims)")
    n = input.dim()
    src_in, dst_in = src, dst
    src, dst = [_dim(s, n) for s in src], [_dim(d, n) for d in dst]  # torch's IndexError
    for what, dims, given in (("source", src, src_in), ("destination", dst, dst_in)):
        if len(set(dims)) != len(dims):
            raise RuntimeError(f"movedim: repeated dim in `{what}` ({given})")
    if n == 0:
        return input
    order = [None] * n
    for s, d in zip(src, dst):
        order[d] = s
    rest = iter(i for i in range(n) if i not in src)
    return input.permute(*[o if o is not None else next(rest) for o in order])


moveaxis = movedim


def select(input, dim, index):
    size = input.shape[dim]
    if not -size <= index < size:
        raise IndexError(f"select(): index {index} out of range for tensor of size {list(input.shape)} at dimension {dim}")
    return input.narrow(dim, index % size, 1).squeeze(dim)


def tensor_split(input, indices_or_sections, dim=0):
    n = input.shape[dim]
    if isinstance(indices_or_sections, Tensor):
        indices_or_sections = indices_or_sections.tolist()
    if isinstance(indices_or_sections, int):
        k = indices_or_sections
        if k <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {k}")
        q, r = divmod(n, k)
        bounds = [i * q + builtins.min(i, r) for i in range(k + 1)]
    else:
        bounds = [0, *[builtins.min(builtins.max(int(i), 0), n) for i in indices_or_sections], n]
    return tuple(input.narrow(dim, a, builtins.max(b - a, 0)) for a, b in zip(bounds, bounds[1:]))


def column_stack(tensors):
    return _C.cat([t.reshape(-1, 1) if t.dim() <= 1 else t for t in tensors], 1)


def dstack(tensors):
    def at_least_3d(t):
        return t.reshape(1, -1, 1) if t.dim() <= 1 else (t.unsqueeze(-1) if t.dim() == 2 else t)

    return _C.cat([at_least_3d(t) for t in tensors], 2)


def meshgrid(*tensors, indexing="ij"):
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if builtins.any(t.dtype != tensors[0].dtype for t in tensors):
        raise RuntimeError("meshgrid expects all tensors to have the same dtype")
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f"torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but received: {indexing}")
    sizes = [t.numel() for t in tensors]
    swap = indexing == "xy" and len(tensors) >= 2
    if swap:
        sizes[0], sizes[1] = sizes[1], sizes[0]
    out = []
    for i, t in enumerate(tensors):
        pos = (1 - i if i < 2 else i) if swap else i
        shape = [1] * len(tensors)
        shape[pos] = -1
        out.append(t.reshape(*shape).expand(*sizes))
    return tuple(out)


def rot90(input, k=1, dims=(0, 1)):
    if not isinstance(k, int):
        raise TypeError(f"rot90(): argument 'k' (position 2) must be int, not {builtins.type(k).__name__}")
    dims = _int_list("rot90", "dims", 3, dims)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if input.dim() < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {input.dim()}")
    if dims[0] == dims[1] or builtins.abs(dims[0] - dims[1]) == input.dim():
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {dims[0]} and dim1 = {dims[1]}")
    d0, d1 = _dim(dims[0], input.dim()), _dim(dims[1], input.dim())
    k %= 4
    if k == 1:
        return input.flip(d1).transpose(d0, d1)
    if k == 2:
        return input.flip(d0).flip(d1)
    if k == 3:
        return input.flip(d0).transpose(d0, d1)
    return input.clone()


# ---- diagonals and triangles ----


def diag(input, diagonal=0):
    """1-D → the square matrix with `input` on that diagonal; 2-D → that diagonal."""
    if input.dim() == 1:
        n = input.shape[0] + builtins.abs(diagonal)
        out = _C.zeros(n, n, dtype=input.dtype, device=input.device)
        idx = _C.arange(input.shape[0], device=input.device)
        rows, cols = (idx, idx + diagonal) if diagonal >= 0 else (idx - diagonal, idx)
        out[rows, cols] = input
        return out
    if input.dim() == 2:
        return input.diagonal(diagonal)
    raise RuntimeError("diag(): Supports 1D or 2D tensors. Got " + f"{input.dim()}D")


def diagonal(input, offset=0, dim1=0, dim2=1):
    n = input.dim()
    if _dim(dim1, n) == _dim(dim2, n):
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    x = movedim(input, (dim1, dim2), (-2, -1))
    r, c = x.shape[-2], x.shape[-1]
    n = builtins.max(builtins.min(r, c - offset) if offset >= 0 else builtins.min(r + offset, c), 0)
    idx = _C.arange(n, device=input.device)
    rows, cols = (idx, idx + offset) if offset >= 0 else (idx - offset, idx)
    return x[..., rows, cols]


def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    d1, d2 = _dim(dim1, input.dim() + 1), _dim(dim2, input.dim() + 1)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    n = input.shape[-1] + builtins.abs(offset)
    out = _C.zeros(*input.shape[:-1], n, n, dtype=input.dtype, device=input.device)
    idx = _C.arange(input.shape[-1], device=input.device)
    rows, cols = (idx, idx + offset) if offset >= 0 else (idx - offset, idx)
    out[..., rows, cols] = input
    return movedim(out, (-2, -1), (dim1, dim2))


def trace(input):
    if input.dim() != 2:
        raise RuntimeError("trace: expected a matrix, but got tensor with dim " + str(input.dim()))
    return diagonal(input).sum()


def block_diag(*tensors):
    if not tensors:
        return _C.zeros(1, 0)
    mats = [t.reshape(1, -1) if t.dim() <= 1 else t for t in tensors]
    from . import promote_types

    dtype = mats[0].dtype
    for m in mats[1:]:
        dtype = promote_types(dtype, m.dtype)
    out = _C.zeros(builtins.sum(m.shape[0] for m in mats), builtins.sum(m.shape[1] for m in mats), dtype=dtype)
    r = c = 0
    for m in mats:
        out[r:r + m.shape[0], c:c + m.shape[1]] = m.to(dtype)
        r, c = r + m.shape[0], c + m.shape[1]
    return out


def cartesian_prod(*tensors):
    if builtins.any(t.dtype != tensors[0].dtype for t in tensors):
        raise RuntimeError("meshgrid expects all tensors to have the same dtype")
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return _C.stack([g.reshape(-1) for g in grids], 1)


def tril_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    return _tri_indices(row, col, offset, lambda r, c: c - r <= offset, dtype, device)


def triu_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    return _tri_indices(row, col, offset, lambda r, c: c - r >= offset, dtype, device)


def _tri_indices(row, col, offset, keep, dtype, device):
    r = _C.arange(row, device=device).reshape(-1, 1).expand(row, col)
    c = _C.arange(col, device=device).reshape(1, -1).expand(row, col)
    mask = keep(r, c)
    out = _C.stack([r[mask], c[mask]], 0) if row * col else _C.zeros(2, 0, dtype=_C.int64)
    return out if dtype is None else out.to(dtype)


# ---- strided views (copies here) ----


def take(input, index):
    return input.reshape(-1)[index]


def as_strided(input, size, stride, storage_offset=None):
    """A copy of the elements `size`/`stride` address in the tensor's (contiguous) element order;
    torch returns a view of the storage."""
    offset = 0 if storage_offset is None else storage_offset
    idx = _C.full((), offset, dtype=_C.int64)
    for i, (n, s) in enumerate(zip(size, stride)):
        shape = [1] * len(size)
        shape[i] = n
        idx = idx + _C.arange(n).reshape(*shape) * s
    flat = input.contiguous().reshape(-1)
    if idx.numel() and (int(idx.max().item()) >= flat.numel() or int(idx.min().item()) < 0):
        raise RuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {offset} "
                           f"out of bounds for storage of {flat.numel()} elements")
    return flat[idx.reshape(-1)].reshape(*size) if idx.numel() else _C.empty(*size, dtype=input.dtype)


def as_strided_(self, size, stride, storage_offset=None):
    """In place: the tensor takes as_strided's result (its elements copied, as as_strided here)."""
    self.data = as_strided(self, size, stride, storage_offset)
    return self


def unfold(input, dimension, size, step):
    """Tensor.unfold: every window of `size` along `dimension`, `step` apart, as a new last dim (a
    copy here; torch returns an overlapping view)."""
    d = dimension + input.dim() if dimension < 0 else dimension
    if input.dim() == 0:
        return input.reshape(1)
    length = input.shape[d]
    if size > length:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {length} but size is {size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    n = (length - size) // step + 1
    idx = (_C.arange(n).unsqueeze(1) * step + _C.arange(size).unsqueeze(0)).reshape(-1)
    windows = input.index_select(d, idx)
    shape = list(input.shape)
    shape[d:d + 1] = [n, size]
    return windows.reshape(shape).movedim(d + 1, -1)


def to_dense(self, dtype=None, *, masked_grad=None):
    """Tensors here are always dense: the tensor itself (in `dtype` if given)."""
    return self if dtype is None else self.to(dtype)


def diff(input, n=1, dim=-1, prepend=None, append=None):
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    if n == 0:  # torch returns the input as is (prepend/append unused)
        return input
    if prepend is not None or append is not None:
        parts = [p if p.dim() else p.expand(*[1 if d == dim % input.dim() else s for d, s in enumerate(input.shape)])
                 for p in (prepend, input, append) if p is not None]
        input = _C.cat(parts, dim)
    for _ in range(n):
        length = input.shape[dim]
        if length == 0:
            break
        a, b = input.narrow(dim, 1, length - 1), input.narrow(dim, 0, length - 1)
        input = a.logical_xor(b) if input.dtype == _C.bool else a - b
    return input


# Tensor methods torch has under the same names (set where the Rust Tensor has none).
METHODS = (
    "as_strided_",
    "tile", "movedim", "moveaxis", "select", "tensor_split", "rot90", "diag", "diagonal", "diag_embed",
    "trace", "take", "as_strided", "diff", "unfold", "to_dense",
)
FUNCTIONS = (
    "tile", "movedim", "moveaxis", "select", "tensor_split", "rot90", "diag", "diagonal", "diag_embed",
    "trace", "take", "as_strided", "diff", "column_stack", "dstack", "meshgrid", "block_diag",
    "cartesian_prod", "tril_indices", "triu_indices",
)
