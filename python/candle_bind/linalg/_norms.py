"""Norms and the condition number. Norms are compositions of candle_bind's own ops, so they run on the
tensor's device and in its dtype (half precision included, as torch's)."""

from __future__ import annotations

import builtins
import math

import numpy as np

from .. import _C
from .._C import Tensor
from .._tensor import dtype_title
from ._common import _back, _check, _np, _writes_out
from ._decomp import svdvals


def _dims(dim, ndim: int) -> list:
    if dim is None:
        return list(range(ndim))
    dims = [dim] if isinstance(dim, int) else list(dim)
    for d in dims:
        if not -builtins.max(ndim, 1) <= d < builtins.max(ndim, 1):
            raise IndexError(f"Dimension out of range (expected to be in range of [{-builtins.max(ndim, 1)}, "
                             f"{builtins.max(ndim, 1) - 1}], but got {d})")
    return sorted({d % builtins.max(ndim, 1) for d in dims})


@_writes_out
def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    """(sum |x|^ord)^(1/ord) over `dim` (all dims when None); ord inf/-inf: max/min |x|, 0: count of nonzeros."""
    _need_float("linalg.vector_norm", x)
    if dtype is not None:
        x = x.to(dtype)
    if x.is_complex():  # the norm of the moduli, real
        x = x.abs()
    out_dtype = x.dtype
    if x.dtype in (_C.float16, _C.bfloat16):  # torch accumulates half precision in float32
        x = x.float()
    scalar = x.dim() == 0
    if scalar:
        x = x.reshape(1)
    dims = [0] if scalar else _dims(dim, x.dim())
    if x.numel() == 0 and (ord == math.inf or ord < 0) and builtins.any(x.shape[d] == 0 for d in dims):
        o = int(ord) if math.isfinite(ord) and ord == int(ord) else ord  # torch prints -1, -1.5, inf
        if dim is not None:  # torch's message, its missing space included
            d = next(d for d in dims if x.shape[d] == 0)
            raise RuntimeError(f"linalg.vector_norm cannot compute the {o} norm on the dimension {d}because this "
                               "dimension is empty and the operation does not have an identity")
        raise RuntimeError(f"linalg.vector_norm cannot compute the {o} norm on an empty tensor because the "
                           "operation does not have an identity")
    a = x.abs()
    if ord == math.inf:
        r = a.amax(dim=dims, keepdim=True)
    elif ord == -math.inf:
        r = a.amin(dim=dims, keepdim=True)
    elif ord == 0:
        r = (a != 0).to(x.dtype).sum(dims, keepdim=True)
    elif ord == 1:
        r = a.sum(dims, keepdim=True)
    elif ord == 2:
        r = (a * a).sum(dims, keepdim=True).sqrt()
    else:
        r = a.pow(ord).sum(dims, keepdim=True).pow(1.0 / ord)
    return (r.reshape(()) if scalar else _squeeze(r, dims, keepdim)).to(out_dtype)


def _squeeze(r, dims, keepdim):
    if keepdim:
        return r
    for d in sorted(dims, reverse=True):
        r = r.squeeze(d)
    return r


def _need_float(fn: str, x) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{fn.replace('.', '_')}(): argument 'input' (position 1) must be Tensor, not "
                        f"{builtins.type(x).__name__}")
    if not (x.is_floating_point() or x.is_complex()):
        raise NotImplementedError(f"{fn}: Expected a floating point or complex tensor as input. Got "
                                  f"{dtype_title(x.dtype)}")


@_writes_out
def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):
    """'fro', 'nuc', 2/-2 (largest/smallest singular value), 1/-1 (max/min column sum), inf/-inf (rows)."""
    _need_float("linalg.matrix_norm", A)
    if A.dim() < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 dimensions.")
    if ord not in ("fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf):
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    if dtype is not None:
        A = A.to(dtype)
    if not isinstance(dim, (tuple, list)) or len(dim) != 2:
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {dim}")
    d0, d1 = (_dims(d, A.dim())[0] for d in dim)
    if d0 == d1:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({dim[0]}, {dim[1]})")
    if A.is_complex() and ord == "nuc":
        raise NotImplementedError("linalg.matrix_norm: ord='nuc' of a complex tensor is not supported by candle_bind yet")
    if A.is_complex() and ord not in ("nuc", 2, -2):  # only the moduli count (svdvals take complex A)
        A = A.abs()
    if ord == "fro":
        r = (A * A).sum([d0, d1], keepdim=True).sqrt()
    elif ord in ("nuc", 2, -2):
        moved = A.movedim((d0, d1), (-2, -1))
        s = svdvals(moved)
        empty = s.shape[-1] == 0  # no singular values: the norm is 0, as torch's (the smallest has none)
        if empty and ord == -2:
            raise IndexError("amin(): Expected reduction dim -1 to have non-zero size.")
        s = s.sum(-1) if ord == "nuc" or empty else s.amax(-1) if ord == 2 else s.amin(-1)
        r = s.unsqueeze(-1).unsqueeze(-1).movedim((-2, -1), (d0, d1))
    else:
        rows, cols = (d0, d1) if ord in (1, -1) else (d1, d0)  # 1: sum down columns; inf: along rows
        if ord in (-1, -math.inf) and A.shape[cols] == 0:
            d = cols if keepdim else cols - (rows < cols)  # torch names the dim after the first reduction
            raise IndexError(f"amin(): Expected reduction dim {d} to have non-zero size.")
        sums = A.abs().sum(rows, keepdim=True)
        if sums.numel() == 0:
            r = sums.sum(cols, keepdim=True)  # an empty matrix's norm is 0, as torch's
        else:
            r = sums.amax(cols, keepdim=True) if ord in (1, math.inf) else sums.amin(cols, keepdim=True)
    return _squeeze(r, [d0, d1], keepdim)


@_writes_out
def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None):
    """A vector norm over one dim (or all, when neither ord nor dim is given), a matrix norm over two."""
    _need_float("linalg.norm", A)
    if isinstance(dim, int):
        dim = (dim,)
    if isinstance(ord, str):  # 'fro' / 'nuc' are matrix norms only
        return matrix_norm(A, ord, (-2, -1) if dim is None else dim, keepdim, dtype=dtype)
    if dim is None and ord is not None:
        if A.dim() not in (1, 2):
            raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got "
                               f"{A.dim()}D.")
        dim = tuple(range(A.dim()))
    if dim is not None and len(dim) == 2:
        return matrix_norm(A, "fro" if ord is None else ord, dim, keepdim, dtype=dtype)
    return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype)


@_writes_out
def cond(A, p=None):
    """The condition number: sigma_max / sigma_min for p None/2 (-2: the inverse ratio), else
    norm(A, p) * norm(A^-1, p), inf for a singular A."""
    _check("linalg.cond", A)
    if p not in (None, "fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf):
        raise RuntimeError(f"linalg.cond got an invalid norm type: {p}")
    a = _np(A)
    if p in (None, 2, -2):
        if 0 in a.shape[-2:]:
            return _back(np.zeros(a.shape[:-2]), A)
        s = np.linalg.svd(a, compute_uv=False)
        with np.errstate(divide="ignore", invalid="ignore"):
            r = s[..., 0] / s[..., -1] if p != -2 else s[..., -1] / s[..., 0]
        return _back(r, A)
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"linalg.cond(ord={p}): A must be batches of square matrices, but they are "
                           f"{A.shape[-2]} by {A.shape[-1]} matrices")
    if a.shape[-1] == 0:
        return _back(np.zeros(a.shape[:-2]), A)
    ainv = np.empty_like(a)
    singular = np.zeros(a.shape[:-2], bool)
    for i, m in enumerate(a.reshape(-1, *a.shape[-2:])):
        idx = np.unravel_index(i, a.shape[:-2]) if a.ndim > 2 else ()
        try:
            ainv[idx] = np.linalg.inv(m)
        except np.linalg.LinAlgError:
            ainv[idx], singular[idx] = 0, True
    ord = {"fro": "fro", "nuc": "nuc"}.get(p, p)
    r = _np(matrix_norm(A, ord)) * _np(matrix_norm(_back(ainv, A), ord))
    return _back(np.where(singular, np.inf, r), A)
