"""Products and matrix functions: matmul, multi_dot, vecdot, cross, diagonal, vander (candle_bind ops, any
device and dtype) and the matrix exponential (Pade 13 with scaling and squaring, Higham 2005, in numpy)."""

from __future__ import annotations

import numpy as np

from .. import _C
from ._common import _back, _check, _np, _writes_out


@_writes_out
def matmul(input, other):
    return input @ other


@_writes_out
def multi_dot(tensors):
    if len(tensors) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(tensors)}")
    out = tensors[0]
    for t in tensors[1:]:
        out = out @ t
    return out


@_writes_out
def vecdot(x, y, *, dim=-1):
    return (x * y).sum(dim)


@_writes_out
def cross(input, other, *, dim=-1):
    from .._ops import cross as _cross

    if input.dim() != other.dim():  # linalg.cross does not broadcast ranks (torch.cross does)
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    if input.shape[dim] != 3 or other.shape[dim] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got {input.shape[dim]} and "
                           f"{other.shape[dim]}")
    return _cross(input, other, dim)


def diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    return A.diagonal(offset, dim1, dim2)


def vander(x, N=None):
    """Columns x^0, x^1, ..., x^(N-1) of each vector `x` (the running product, as torch builds it)."""
    if x.dim() == 0:
        x = x.reshape(1)
    n = x.shape[-1] if N is None else N
    if n <= 1:
        raise RuntimeError("N must be greater than 1.")
    if x.dtype == _C.bool:
        x = x.to(_C.int64)
    ones = _C.ones(*x.shape, 1, dtype=x.dtype, device=x.device)
    if n <= 1:
        return ones[..., :n]
    powers = x.unsqueeze(-1).expand(*x.shape, n - 1).cumprod(-1)
    return _C.cat([ones, powers], -1)


# Pade 13 coefficients and the 1-norm bound below which it needs no scaling (Higham 2005, table 2.3)
_B13 = (64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0, 129060195264000.0,
        10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0, 40840800.0, 960960.0, 16380.0, 182.0, 1.0)
_THETA13 = 5.371920351148152


@_writes_out
def matrix_exp(A):
    """e^A of each square matrix, computed in float64 (a float32 A's result is rounded once)."""
    _check("linalg.matrix_exp", A, square=True)
    a = _np(A).astype(np.float64)
    n = a.shape[-1]
    if n == 0:
        return _back(a, A)
    if n == 1:
        with np.errstate(over="ignore"):
            return _back(np.exp(a), A)
    norm1 = np.abs(a).sum(-2).max(-1)
    finite = np.isfinite(norm1)
    with np.errstate(divide="ignore", invalid="ignore"):
        s = np.where(finite & (norm1 > _THETA13), np.ceil(np.log2(np.where(finite, norm1, 1) / _THETA13)), 0)
    s = s.astype(np.int64)
    x = a / np.exp2(s)[..., None, None]
    b = _B13
    eye = np.eye(n)
    x2 = x @ x
    x4 = x2 @ x2
    x6 = x4 @ x2
    u = x @ (x6 @ (b[13] * x6 + b[11] * x4 + b[9] * x2) + b[7] * x6 + b[5] * x4 + b[3] * x2 + b[1] * eye)
    v = x6 @ (b[12] * x6 + b[10] * x4 + b[8] * x2) + b[6] * x6 + b[4] * x4 + b[2] * x2 + b[0] * eye
    with np.errstate(all="ignore"):
        try:
            r = np.linalg.solve(v - u, v + u)
        except np.linalg.LinAlgError:
            r = np.full_like(x, np.nan)
        for i in range(int(s.max(initial=0))):
            r = np.where((i < s)[..., None, None], r @ r, r)
    return _back(np.where(finite[..., None, None], r, np.nan), A)
