"""torch functions that are compositions of other ops (no kernel of their own): BLAS-style fused
adds, shape helpers, elementwise math from its definition, and the small reductions model code
reaches for. Exported as `candle_bind.<name>`; those torch also has as methods become Tensor methods.
"""

from __future__ import annotations

import builtins
import math
from . import _C
from ._C import Tensor
from . import return_types
from ._tensor import _advanced_put, _index_put_error, dtype_title, need_float, not_implemented

# ---- fused multiply-adds (HF's GPT-2 Conv1D is addmm, BLOOM/GPT-NeoX attention is baddbmm) ----


def _write_out(result, out):
    """torch's `out=` for the functions written here: the result copied into `out` (same shape and
    dtype, as the native ops' `out=` checks), which is what the call returns."""
    if out is None:
        return result
    if tuple(out.shape) != tuple(result.shape):
        raise RuntimeError(f"out= tensor has shape {list(out.shape)}, but the result has shape "
                           f"{list(result.shape)} (candle_bind does not resize out= tensors)")
    if out.dtype != result.dtype:
        raise RuntimeError(f"Expected out tensor to have dtype {result.dtype}, but got {out.dtype} instead")
    return out.copy_(result)


def _dim(d, n: int) -> int:
    """A dim in range for rank n (0-dim tensors take -1 and 0), else torch's IndexError."""
    lo, hi = (-n, n - 1) if n else (-1, 0)
    if not lo <= d <= hi:
        raise IndexError(f"Dimension out of range (expected to be in range of [{lo}, {hi}], but got {d})")
    return d % n if n else 0


def _need_tensor(fn: str, arg: str, pos: int, x) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{fn}(): argument '{arg}' (position {pos}) must be Tensor, not {builtins.type(x).__name__}")


def _int_list(fn: str, arg: str, pos: int, xs) -> list:
    if not isinstance(xs, (list, tuple)):
        raise TypeError(f"{fn}(): argument '{arg}' (position {pos}) must be tuple of ints, not {builtins.type(xs).__name__}")
    for i, x in enumerate(xs):
        if not isinstance(x, int) or isinstance(x, bool):
            raise TypeError(f"{fn}(): argument '{arg}' (position {pos}) must be tuple of ints, but found element of "
                            f"type {builtins.type(x).__name__} at pos {i}")
    return list(xs)


def _check_integral_scalars(tensors, **scalars) -> None:
    """torch's "For integral input tensors, argument alpha must not be a floating point number"."""
    if builtins.all(not t.is_floating_point() for t in tensors):
        for name, v in scalars.items():
            if isinstance(v, float):
                raise RuntimeError(f"For integral input tensors, argument {name} must not be a floating point number.")


def _scaled_sum(input, product, beta, alpha):
    if alpha != 1:
        product = product * alpha
    if beta == 0:  # torch ignores input then, NaNs included
        return product
    return product + (input if beta == 1 else input * beta)


def addmm(input, mat1, mat2, *, beta=1, alpha=1, out=None):
    """beta·input + alpha·(mat1 @ mat2), mat1 and mat2 2-D."""
    if mat1.dim() != 2 or mat2.dim() != 2:
        raise RuntimeError(f"mat1 must be a matrix, got {mat1.dim()}-D tensor" if mat1.dim() != 2
                           else f"mat2 must be a matrix, got {mat2.dim()}-D tensor")
    product = mat1 @ mat2
    input.expand(*product.shape)  # torch's check: input broadcasts to the product's shape
    return _write_out(_scaled_sum(input, product, beta, alpha), out)


def baddbmm(input, batch1, batch2, *, beta=1, alpha=1, out=None):
    """beta·input + alpha·(batch1 @ batch2), both batches 3-D."""
    if batch1.dim() != 3 or batch2.dim() != 3:
        raise RuntimeError("batch1 must be a 3D tensor" if batch1.dim() != 3 else "batch2 must be a 3D tensor")
    product = batch1.bmm(batch2)
    input.expand(*product.shape)
    return _write_out(_scaled_sum(input, product, beta, alpha), out)


def addbmm(input, batch1, batch2, *, beta=1, alpha=1, out=None):
    """beta·input + alpha·Σ_b batch1[b] @ batch2[b]."""
    product = batch1.bmm(batch2).sum(0)
    input.expand(*product.shape)
    return _write_out(_scaled_sum(input, product, beta, alpha), out)


def addmv(input, mat, vec, *, beta=1, alpha=1, out=None):
    if mat.dim() == 2 and vec.dim() == 1 and input.dim() <= 1:
        if mat.shape[1] != vec.shape[0] or (input.dim() == 1 and input.shape[0] not in (1, mat.shape[0])):
            shown = f"({input.shape[0]})" if input.dim() else "()"
            raise RuntimeError(f"size mismatch, got input {shown}, mat ({mat.shape[0]}x{mat.shape[1]}), vec ({vec.shape[0]})")
    elif mat.dim() == 2 and vec.dim() == 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {input.dim()}, {mat.dim()}, {vec.dim()}")
    if mat.dtype == _C.bool:
        raise not_implemented("addmv_impl_cpu", mat.dtype)
    return _write_out(_scaled_sum(input, mat.mv(vec), beta, alpha), out)


def addcmul(input, tensor1, tensor2, *, value=1, out=None):
    return _write_out(input + (tensor1 * tensor2) * value if value != 1 else input + tensor1 * tensor2, out)


def addcdiv(input, tensor1, tensor2, *, value=1, out=None):
    if not tensor1.is_floating_point() and not tensor2.is_floating_point():
        raise RuntimeError(
            "Integer division with addcdiv is no longer supported, and in a future  release addcdiv will perform a "
            "true division of tensor1 and tensor2. The historic addcdiv behavior can be implemented as (input + value "
            "* torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer inputs and as (input + value * tensor1 / "
            "tensor2) for float inputs. The future addcdiv behavior is just the latter implementation: (input + value "
            "* tensor1 / tensor2), for all dtypes.")
    return _write_out(input + (tensor1 / tensor2) * value if value != 1 else input + tensor1 / tensor2, out)


def chain_matmul(*matrices):
    out = matrices[0]
    for m in matrices[1:]:
        out = out @ m
    return out


def vdot(input, other):
    return input.dot(other)


def inner(input, other):
    if input.dim() == 0 or other.dim() == 0:
        return input * other
    return tensordot(input, other, dims=([-1], [-1]))


def tensordot(a, b, dims=2, out=None):
    """Contracts dims of a with dims of b (an int n: a's last n with b's first n)."""
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > a.dim() or dims > b.dim():
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}")
        da, db = list(range(a.dim() - dims, a.dim())), list(range(dims))
    else:
        da, db = ([dims[0]] if isinstance(dims[0], int) else list(dims[0])), ([dims[1]] if isinstance(dims[1], int) else list(dims[1]))
    da = [d % a.dim() for d in da]
    db = [d % b.dim() for d in db]
    for x, y in zip(da, db):
        if a.shape[x] != b.shape[y]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size {a.shape[x]} in dim {x} "
                               f"and second has size {b.shape[y]} in dim {y}")
    free_a = [d for d in range(a.dim()) if d not in da]
    free_b = [d for d in range(b.dim()) if d not in db]
    k = math.prod(a.shape[d] for d in da)
    lhs = a.permute(*free_a, *da).reshape(-1, k)
    rhs = b.permute(*db, *free_b).reshape(k, -1)
    return (lhs @ rhs).reshape(*[a.shape[d] for d in free_a], *[b.shape[d] for d in free_b])


def kron(input, other):
    """Kronecker product: out[i·m + k, ...] = input[i, ...] · other[k, ...]."""
    nd = builtins.max(input.dim(), other.dim())
    a = input.reshape(*([1] * (nd - input.dim())), *input.shape)
    b = other.reshape(*([1] * (nd - other.dim())), *other.shape)
    inter = [v for pair in zip(a.shape, [1] * nd) for v in pair]
    outer_b = [v for pair in zip([1] * nd, b.shape) for v in pair]
    prod = a.reshape(*inter) * b.reshape(*outer_b)
    return prod.reshape(*[x * y for x, y in zip(a.shape, b.shape)])


def cross(input, other, dim=None):
    """Cross product of 3-vectors along `dim` (default: the first dim of size 3, as torch.cross)."""
    input, other = broadcast_tensors(input, other)
    if dim is None:
        dim = next((i for i, s in enumerate(input.shape) if s == 3), None)
        if dim is None:
            raise RuntimeError("no dimension of size 3 in input")
    if input.shape[dim] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got {input.shape[dim]} and {other.shape[dim]}")
    a0, a1, a2 = input.unbind(dim)
    b0, b1, b2 = other.unbind(dim)
    return _C.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], dim)


# ---- shapes ----


def broadcast_tensors(*tensors):
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    from . import broadcast_shapes

    shape = broadcast_shapes(*(t.shape for t in tensors))
    return tuple(t.expand(*shape) for t in tensors)


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
    src = [s % n if n else s for s in src]
    dst = [d % n if n else d for d in dst]
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


def msort(input):
    """The values sorted along dim 0."""
    return input.sort(0).values


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):  # noqa: A002
    """torch.unique: the sorted distinct values, or with `dim` the sorted distinct slices."""
    from ._tensor import unique as tensor_unique

    return tensor_unique(input, sorted, return_inverse, return_counts, dim)


def permute(input, dims):
    """torch.permute(input, dims): the dims as one sequence (Tensor.permute also takes them spread)."""
    return input.permute(*dims) if isinstance(dims, (list, tuple)) else input.permute(dims)


# ---- elementwise math from its definition ----


def _float(x):
    return x if x.is_floating_point() else x.float()


def atan2(input, other):
    _need_tensor("atan2", "input", 1, input)
    _need_tensor("atan2", "other", 2, other)
    y, x = broadcast_tensors(_float(input), _float(other) if isinstance(other, Tensor) else input.new_tensor(other))
    r = (y / x).atan()
    pi = math.pi
    r = _C.where(x < 0, _C.where(y >= 0, r + pi, r - pi), r)
    return _C.where((x == 0) & (y == 0), y * 0, r)  # signed zeros are not told apart


def arctan2(input, other):
    _need_tensor("arctan2", "input", 1, input)
    _need_tensor("arctan2", "other", 2, other)
    return atan2(input, other)


def hypot(input, other):
    _need_tensor("hypot", "other", 2, other)
    return (input * input + other * other).sqrt()


def logaddexp(input, other):
    _need_tensor("logaddexp", "other", 2, other)
    m = input.maximum(other)
    out = m + (-(input - other).abs()).exp().log1p()
    return _C.where(m.isinf() & (input == other), input, out)  # inf - inf would be NaN


def logaddexp2(input, other):
    _need_tensor("logaddexp2", "other", 2, other)
    return logaddexp(input * math.log(2.0), other * math.log(2.0)) / math.log(2.0)


def exp2(input):
    return (_float(input) * math.log(2.0)).exp()


def frac(input):
    return input - input.trunc()


def sgn(input):
    return input.sign()


def asinh(input):
    x = _float(input)
    a = x.abs()
    return x.sign() * (a + (a * a + 1).sqrt()).log()


def acosh(input):
    x = _float(input)
    return (x + (x * x - 1).sqrt()).log()


def atanh(input):
    x = _float(input)
    return 0.5 * (x.log1p() - (-x).log1p())


arcsinh, arccosh, arctanh = asinh, acosh, atanh


def float_power(input, exponent):
    base = input.double() if isinstance(input, Tensor) else _C.tensor(input, dtype=_C.float64)
    return base.pow(exponent.double() if isinstance(exponent, Tensor) else exponent)


def float_power_(self, exponent):
    # The result is float64, which only a float64 tensor can hold in place.
    if self.dtype != _C.float64:
        from ._tensor import dtype_title

        raise RuntimeError(f"the base given to float_power_ has dtype {dtype_title(self.dtype)} but the operation's "
                           "result requires dtype Double")
    self._assign_result(float_power(self, exponent), "float_power_")
    return self


def fmax(input, other):
    _need_tensor("fmax", "other", 2, other)
    return _C.where(input.isnan(), other, _C.where(other.isnan(), input, input.maximum(other)))


def fmin(input, other):
    _need_tensor("fmin", "other", 2, other)
    return _C.where(input.isnan(), other, _C.where(other.isnan(), input, input.minimum(other)))


def bitwise_not(input):
    return ~input


def logcumsumexp(input, dim):
    if not input.is_floating_point():
        raise not_implemented("logcumsumexp_out_cpu", input.dtype)
    m = input.amax(dim, keepdim=True)
    m = _C.where(m.isinf(), m * 0, m)
    return (input - m).exp().cumsum(dim).log() + m


# ---- comparisons and membership ----


def equal(input, other) -> bool:
    return input.shape == other.shape and bool((input == other).all().item())


def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """Whether each element occurs in test_elements (sorted lookup: n log m)."""
    if not isinstance(elements, Tensor):
        elements = _C.tensor(elements)
    if not isinstance(test_elements, Tensor):
        test_elements = _C.tensor(test_elements)
    values = test_elements.reshape(-1).sort().values
    if values.numel() == 0:
        found = _C.zeros(*elements.shape, dtype=_C.bool)
    else:
        from . import promote_types

        common = promote_types(elements.dtype, values.dtype)
        e, v = elements.to(common), values.to(common)
        pos = _C.searchsorted(v, e.reshape(-1)).clamp(max=v.numel() - 1)
        found = (v[pos] == e.reshape(-1)).reshape(*elements.shape)
    return ~found if invert else found


def is_nonzero(input) -> bool:
    if input.numel() != 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous" if input.numel()
                           else "Boolean value of Tensor with no values is ambiguous")
    return bool(input.item())


def is_complex(input) -> bool:
    return False


def can_cast(from_, to) -> bool:
    """torch's casting rule: no float→integral, no non-bool→bool."""
    def kind(d):
        return 0 if d == _C.bool else (2 if d.is_floating_point else 1)

    return kind(from_) <= kind(to)


def cdist(x1, x2, p=2.0, compute_mode=None):
    """Pairwise p-norm distances between the rows of x1 (…, P, M) and x2 (…, R, M)."""
    for x in (x1, x2):
        if not x.is_floating_point():
            raise RuntimeError(f"cdist only supports floating-point dtypes, X{1 if x is x1 else 2} got: {dtype_title(x.dtype)}")
    if x1.dtype not in (_C.float32, _C.float64):
        raise not_implemented("cdist", x1.dtype)
    if x1.dtype != x2.dtype and x1.numel() and x2.numel():
        raise RuntimeError(f"expected scalar type {dtype_title(x1.dtype)} but found {dtype_title(x2.dtype)}")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: {x2.shape[-1]}")
    d = (x1.unsqueeze(-2) - x2.unsqueeze(-3)).abs()
    if p == 0:
        return (d != 0).to(x1.dtype).sum(-1)
    if p == math.inf:
        return d.amax(-1)
    if p == 1:
        return d.sum(-1)
    if p == 2:
        return (d * d).sum(-1).sqrt()
    return d.pow(p).sum(-1).pow(1.0 / p)


def dist(input, other, p=2):
    d = (input - other).abs().reshape(-1)
    if p == math.inf:
        return d.amax()
    if p == 0:
        return (d != 0).to(input.dtype).sum()
    return d.pow(p).sum().pow(1.0 / p)


# ---- reductions ----


def histc(input, bins=100, min=0, max=0, *, out=None):  # noqa: A002 - torch's names
    """Counts of the values in `bins` equal-width bins over [min, max] (the data's range when both are
    0); values outside are dropped, `max` itself falls in the last bin. Float input, float counts."""
    need_float(input, "histogram_cpu")
    x = input.reshape(-1).double()
    lo, hi = float(min), float(max)
    if lo == hi and x.numel():
        lo, hi = x.min().item(), x.max().item()
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if lo > hi:
        raise RuntimeError("torch.histc: max must be larger than min")
    x = x[(x >= lo) & (x <= hi)]
    idx = ((x - lo) * (bins / (hi - lo))).floor().long().clamp(0, bins - 1)
    return _write_out(idx.bincount(minlength=bins).to(input.dtype), out)


def grouped_mm(mat_a, mat_b, *, offs=None, bias=None, out_dtype=None):
    """torch's grouped matmul in the mixture-of-experts layout: rows offs[g-1]:offs[g] of a 2-D
    `mat_a` times `mat_b[g]` (3-D); rows past offs[-1] are zeros."""
    if mat_a.dim() != 2 or mat_b.dim() != 3 or offs is None:
        raise NotImplementedError("grouped_mm: candle_bind implements the 2-D x 3-D form with offs")
    ends = offs.tolist()
    if len(ends) != mat_b.shape[0]:
        raise RuntimeError(f"grouped_mm: offs has {len(ends)} groups but mat_b has {mat_b.shape[0]}")
    pieces, start = [], 0
    for g, end in enumerate(ends):
        if end > start:
            pieces.append(mat_a[start:end] @ mat_b[g])
        start = end
    if start < mat_a.shape[0] or not pieces:
        pieces.append(mat_a.new_zeros(mat_a.shape[0] - start, mat_b.shape[2]))
    result = _C.cat(pieces, 0)
    if bias is not None:
        raise NotImplementedError("grouped_mm: bias is not supported yet")
    return result if out_dtype is None else result.to(out_dtype)


def aminmax(input, *, dim=None, keepdim=False):
    if dim is None:
        lo, hi = input.amin(), input.amax()
        if keepdim:
            lo, hi = lo.reshape(*[1] * input.dim()), hi.reshape(*[1] * input.dim())
    else:
        lo, hi = input.amin(dim, keepdim=keepdim), input.amax(dim, keepdim=keepdim)
    return return_types.aminmax(lo, hi)


def std_mean(input, dim=None, *, correction=1, keepdim=False, unbiased=None):
    if unbiased is not None:
        correction = 1 if unbiased else 0
    return input.std(dim, correction=correction, keepdim=keepdim), input.mean(dim, keepdim=keepdim) if dim is not None else input.mean()


def var_mean(input, dim=None, *, correction=1, keepdim=False, unbiased=None):
    if unbiased is not None:
        correction = 1 if unbiased else 0
    return input.var(dim, correction=correction, keepdim=keepdim), input.mean(dim, keepdim=keepdim) if dim is not None else input.mean()


def nanmean(input, dim=None, keepdim=False, *, dtype=None):
    keep = ~input.isnan()
    total = input.nansum(dim, keepdim=keepdim) if dim is not None else input.nansum()
    count = keep.sum(dim, keepdim=keepdim) if dim is not None else keep.sum()
    return total / count


def median(input, dim=None, keepdim=False):
    """The lower of the two middle values (torch's median); with dim, (values, indices)."""
    if dim is None:
        flat = input.reshape(-1)
        if flat.numel() == 0:
            return _C.full((), float("nan"), dtype=input.dtype)
        return flat.sort().values[(flat.numel() - 1) // 2]
    n = input.shape[dim]
    ordered = input.sort(dim)
    k = (n - 1) // 2
    values = ordered.values.narrow(dim, k, 1)
    indices = ordered.indices.narrow(dim, k, 1)
    if not keepdim:
        values, indices = values.squeeze(dim), indices.squeeze(dim)
    return return_types.median(values, indices)


def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    """q-th quantiles (float or 1-D tensor of floats in [0, 1]) with torch's interpolation modes."""
    if input.dtype not in (_C.float32, _C.float64):
        raise RuntimeError("quantile() input tensor must be either float or double dtype")
    if isinstance(q, Tensor) and q.dtype != input.dtype:
        raise RuntimeError("quantile() q tensor must be same dtype as the input tensor")
    scalar_q = not isinstance(q, Tensor)
    qs = [float(q)] if scalar_q else [float(v) for v in q.reshape(-1).tolist()]
    if builtins.any(not 0 <= v <= 1 for v in qs):
        raise RuntimeError("quantile() q values must be in the range [0, 1]")
    x = input.reshape(-1) if dim is None else input
    d = 0 if dim is None else dim % input.dim()
    ordered = x.sort(d).values
    n = ordered.shape[d]
    outs = []
    for v in qs:
        pos = v * (n - 1)
        lo, hi = math.floor(pos), math.ceil(pos)
        a, b = ordered.narrow(d, lo, 1), ordered.narrow(d, hi, 1)
        frac_ = pos - lo
        if interpolation == "linear":
            r = a + (b - a) * frac_
        elif interpolation == "lower":
            r = a
        elif interpolation == "higher":
            r = b
        elif interpolation == "midpoint":
            r = (a + b) / 2
        elif interpolation == "nearest":
            r = ordered.narrow(d, round(pos) if abs(frac_ - 0.5) > 1e-12 else (lo if lo % 2 == 0 else hi), 1)
        else:
            raise RuntimeError(f"quantile() interpolation must be one of linear, lower, higher, midpoint or nearest. Got {interpolation}")
        if dim is None:
            r = r.reshape(*([1] * input.dim())) if keepdim else r.reshape(())
        elif not keepdim:
            r = r.squeeze(d)
        outs.append(r)
    return outs[0] if scalar_q else _C.stack(outs, 0)


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    for name, v in (("return_inverse", return_inverse), ("return_counts", return_counts)):
        if not isinstance(v, bool):
            raise TypeError(f"unique_consecutive(): argument '{name}' must be bool, not {builtins.type(v).__name__}")
    if dim is not None and (not isinstance(dim, int) or isinstance(dim, bool)):
        raise TypeError(f"unique_consecutive(): argument 'dim' must be int, not {builtins.type(dim).__name__}")
    if dim is not None:
        raise NotImplementedError("unique_consecutive(dim=...) is not supported yet")
    flat = input.reshape(-1)
    n = flat.numel()
    if n == 0:
        starts = _C.zeros(0, dtype=_C.bool)
    else:
        starts = _C.cat([_C.ones(1, dtype=_C.bool), flat[1:] != flat[:-1]])
    values = flat[starts]
    out = [values]
    if return_inverse:
        out.append((starts.long().cumsum(0) - 1).reshape(*input.shape))
    if return_counts:
        pos = starts.nonzero().reshape(-1)
        out.append(_C.cat([pos[1:], _C.tensor([n])]) - pos)
    return out[0] if len(out) == 1 else tuple(out)


def arange(*args, start=None, **kwargs):
    """torch.arange, also with `start=` as a keyword (diffusers' timestep embedding:
    `arange(start=0, end=half)`); the native op takes `end=` and `step=` keywords only."""
    if start is not None:
        args = (start, *args)
    return _C.arange(*args, **kwargs)


# ---- random ----


def normal(mean, std=1.0, size=None, *, generator=None, dtype=None, device=None, out=None):
    """normal(mean, std, size) with floats, or elementwise means/stds as tensors (broadcast)."""
    from ._generator import randn

    if size is not None:
        return randn(*size, dtype=dtype, device=device, generator=generator) * std + mean
    shape = broadcast_tensors(*(t for t in (mean, std) if isinstance(t, Tensor)))[0].shape
    ref = mean if isinstance(mean, Tensor) else std
    return randn(*shape, dtype=ref.dtype, device=ref.device, generator=generator) * std + mean


def randint_like(input, low=0, high=None, *, dtype=None, device=None, **kw):
    if high is None:
        low, high = 0, low
    return _C.randint(low, high, tuple(input.shape), dtype=dtype or input.dtype, device=device)


# ---- indexing ----


def index_put_(self, indices, values, accumulate=False):
    """self[indices] = values; with accumulate, repeated positions add up (all dims indexed)."""
    indices = tuple(indices)
    if isinstance(values, Tensor) and values.dtype != self.dtype and (accumulate or _advanced_put(indices, values)):
        raise _index_put_error(self, values)
    if not accumulate:
        self[indices] = values
        return self
    if len(indices) != self.dim():
        raise NotImplementedError("index_put_(accumulate=True) needs one index tensor per dim")
    idx = broadcast_tensors(*indices)
    linear = idx[0].long() % self.shape[0]
    for i, t in enumerate(idx[1:], 1):
        linear = linear * self.shape[i] + t.long() % self.shape[i]
    src = values if isinstance(values, Tensor) else _C.tensor(values, dtype=self.dtype)
    flat = self.view(-1)
    flat.index_add_(0, linear.reshape(-1), src.expand(*linear.shape).reshape(-1).to(self.dtype))
    return self


def index_put(input, indices, values, accumulate=False):
    return index_put_(input.clone(), indices, values, accumulate)


# ---- legacy type names ----

_TYPE_NAMES = {"float32": "FloatTensor", "float64": "DoubleTensor", "float16": "HalfTensor",
               "bfloat16": "BFloat16Tensor", "int64": "LongTensor", "int32": "IntTensor", "uint8": "ByteTensor",
               "bool": "BoolTensor"}


def type(self, dtype=None, non_blocking=False, **kwargs):  # noqa: A001 - torch's name
    """Tensor.type(): 'torch.FloatTensor'-style name; Tensor.type(dtype or name): a cast."""
    if dtype is None:
        return "torch." + _TYPE_NAMES[repr(self.dtype).rsplit(".", 1)[-1]]
    if isinstance(dtype, str):
        by_name = {v: k for k, v in _TYPE_NAMES.items()}
        name = dtype.rsplit(".", 1)[-1]
        if name not in by_name:
            raise ValueError(f"invalid type: '{dtype}'")
        dtype = getattr(_C, by_name[name])
    return self.to(dtype)


# Tensor methods torch has under the same names.
METHODS = (
    "addmm", "baddbmm", "addbmm", "addmv", "addcmul", "addcdiv", "vdot", "inner", "kron", "cross", "tile",
    "movedim", "moveaxis", "select", "tensor_split", "rot90", "diag", "diagonal", "diag_embed", "trace", "take",
    "as_strided", "diff", "atan2", "arctan2", "hypot", "logaddexp", "logaddexp2", "exp2", "frac", "sgn", "asinh",
    "acosh", "atanh", "arcsinh", "arccosh", "arctanh", "float_power", "fmax", "fmin", "bitwise_not",
    "logcumsumexp", "equal", "is_nonzero", "is_complex", "aminmax", "nanmean", "median", "quantile",
    "unique_consecutive", "index_put_", "index_put", "type", "histc", "unfold", "to_dense", "msort",
)

FUNCTIONS = tuple(m for m in METHODS if m not in ("type", "unfold", "to_dense")) + (
    "chain_matmul", "tensordot", "broadcast_tensors", "column_stack", "dstack", "meshgrid", "block_diag",
    "cartesian_prod", "tril_indices", "triu_indices", "isin", "can_cast", "cdist", "dist", "std_mean", "var_mean",
    "normal", "randint_like", "grouped_mm", "permute", "unique",
    "arange",
)


def _to_sparse(self, *args, **kwargs):
    """Tensor.to_sparse(): torch.sparse's COO tensor (candle_bind/sparse.py, loaded on first use)."""
    from .sparse import to_sparse

    return to_sparse(self, *args, **kwargs)


def _install() -> None:
    from ._tensor import _make_inplace
    from ._runtime import strided

    for name in METHODS:
        if not hasattr(Tensor, name):
            setattr(Tensor, name, globals()[name])
    for name in ("addmm", "baddbmm", "addbmm", "addmv", "addcmul", "addcdiv", "atan2", "hypot", "frac", "exp2",
                 "asinh", "acosh", "atanh", "logcumsumexp", "bitwise_not", "sgn"):
        if not hasattr(Tensor, name + "_"):
            setattr(Tensor, name + "_", _make_inplace(name))
    Tensor.float_power_ = float_power_
    Tensor.__contains__ = lambda self, element: bool((self == element).any().item())
    Tensor.is_sparse = property(lambda self: False)
    if not hasattr(Tensor, "is_quantized"):
        Tensor.is_quantized = property(lambda self: False)  # torchvision.ops branches on it
    Tensor.layout = property(lambda self: strided)
    Tensor.to_sparse = _to_sparse
    Tensor.to_sparse_coo = lambda self: _to_sparse(self)
    Tensor.H = property(lambda self: self.t() if self.dim() == 2 else self)
    Tensor.mH = property(lambda self: self.mT)  # real dtypes only: the adjoint is the transpose
    for name in ("svd", "qr", "det", "logdet", "slogdet", "inverse", "pinverse", "matrix_power", "cholesky"):
        if not hasattr(Tensor, name):
            setattr(Tensor, name, _linalg_method(name))


def _linalg_method(name):
    """Tensor.<name> for a torch.linalg-backed function (linalg loads numpy on first call)."""

    def method(self, *args, **kwargs):
        from .linalg import TOP_LEVEL

        return TOP_LEVEL[name](self, *args, **kwargs)

    method.__name__ = method.__qualname__ = name
    return method


_install()
