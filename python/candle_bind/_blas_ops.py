"""torch's products built from matmul/bmm/mv: the BLAS-style fused adds (HF's GPT-2 Conv1D is addmm, BLOOM/GPT-NeoX
attention is baddbmm), tensordot/kron/cross and pairwise distances. A family module (see _OP_FAMILIES).
"""

from __future__ import annotations

import builtins
import math

from . import _C
from ._ops import _write_out, broadcast_tensors
from ._opmath import opmath
from ._tensor import dtype_title, not_implemented


# ---- fused multiply-adds ----


def _scaled_sum(input, product, beta, alpha):
    if not product.is_floating_point():  # torch casts the scalars to the integral dtype: 0.6 -> 0
        beta, alpha = int(beta), int(alpha)
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
    product = batch1.bmm(batch2)
    product = product.sum(0).to(product.dtype)  # int32 stays int32 (sum widens integers)
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


@opmath
def addcmul(input, tensor1, tensor2, *, value=1, out=None):
    return _write_out(input + (tensor1 * tensor2) * value if value != 1 else input + tensor1 * tensor2, out)


@opmath
def addcdiv(input, tensor1, tensor2, *, value=1, out=None):
    if not tensor1.is_floating_point() and not tensor2.is_floating_point():
        raise RuntimeError(
            "Integer division with addcdiv is no longer supported, and in a future  release addcdiv will perform a "
            "true division of tensor1 and tensor2. The historic addcdiv behavior can be implemented as (input + value "
            "* torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer inputs and as (input + value * tensor1 / "
            "tensor2) for float inputs. The future addcdiv behavior is just the latter implementation: (input + value "
            "* tensor1 / tensor2), for all dtypes.")
    return _write_out(input + (tensor1 / tensor2) * value if value != 1 else input + tensor1 / tensor2, out)


# ---- products ----


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
        if a.shape[x] != b.shape[y] and 1 in (a.shape[x], b.shape[y]):  # torch sums a size-1 side's partner away
            a, b = (a.sum(x, keepdim=True).to(a.dtype), b) if b.shape[y] == 1 else (a, b.sum(y, keepdim=True).to(b.dtype))
        elif a.shape[x] != b.shape[y]:
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


# ---- distances ----


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


@opmath
def dist(input, other, p=2):
    d = (input - other).abs().reshape(-1)
    if p == math.inf:
        return d.amax()
    if p == 0:
        return (d != 0).to(input.dtype).sum()
    return d.pow(p).sum().pow(1.0 / p)


def ger(input, vec2):
    """torch.ger: the outer product under its deprecated name."""
    return input.outer(vec2)


# Tensor methods torch has under the same names (set where the Rust Tensor has none).
METHODS = (
    "addmm", "baddbmm", "addbmm", "addmv", "addcmul", "addcdiv", "vdot", "inner", "kron", "cross", "ger",
)
FUNCTIONS = (
    "addmm", "baddbmm", "addbmm", "addmv", "addcmul", "addcdiv", "vdot", "inner", "kron", "cross",
    "chain_matmul", "tensordot", "cdist", "dist", "grouped_mm", "ger",
)
INPLACE = (
    "addmm", "baddbmm", "addbmm", "addmv", "addcmul", "addcdiv",
)
