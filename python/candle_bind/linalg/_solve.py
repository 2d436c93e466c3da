"""Inverses, determinants and solvers: general (gesv/getri through numpy.linalg), triangular, from a
factorization (LU, LDL^T, Cholesky), least squares, the pseudo-inverse and the rank."""

from __future__ import annotations

import builtins

import numpy as np

from .. import _C
from .._C import Tensor
from ..return_types import linalg_inv_ex, linalg_lstsq, linalg_slogdet, linalg_solve_ex
from ._common import (LinAlgError, _back, _lapack, _check, _flat, _int32, _np, _same_dtype, _singular, _tolerance,
                      _writes_out)
from ._decomp import _getrf, _permutation


@_writes_out
def inv(A):
    _check("linalg.inv", A, square=True)
    a = _np(A)
    try:
        return _back(_lapack("inv", np.linalg.inv, a), A)
    except np.linalg.LinAlgError:
        raise _singular("linalg.inv", a) from None


def _lu_info(a: np.ndarray) -> np.ndarray:
    return _getrf(a)[2]


@_writes_out
def inv_ex(A, *, check_errors=False):
    """(inverse, info): info is getrf's first zero pivot (0: invertible)."""
    _check("linalg.inv_ex", A, square=True)
    a = _np(A)
    info = np.zeros(a.shape[:-2], np.int32)
    try:
        x = np.linalg.inv(a)
    except np.linalg.LinAlgError:
        if check_errors:
            raise _singular("linalg.inv_ex", a) from None
        info = _lu_info(a)
        with np.errstate(all="ignore"):
            x = np.linalg.pinv(a)  # the singular elements' values are unspecified; the others are exact
    return linalg_inv_ex(_back(x, A), _int32(info, A))


@_writes_out
def det(A):
    _check("linalg.det", A, square=True)
    return _back(_lapack("det", np.linalg.det, _np(A)), A)


@_writes_out
def slogdet(A):
    _check("linalg.slogdet", A, square=True)
    sign, logabsdet = _lapack("slogdet", np.linalg.slogdet, _np(A), nout=2)
    return linalg_slogdet(_back(sign, A), _back(logabsdet, A))


def logdet(A):
    """log det A: nan for a negative determinant, -inf for a zero one (torch.logdet)."""
    _check("logdet", A, square=True)
    sign, logabsdet = np.linalg.slogdet(_np(A))
    with np.errstate(invalid="ignore"):
        return _back(np.where(sign < 0, np.nan, logabsdet), A)


def _rhs(fn: str, A: Tensor, B, vector: bool, a=None):
    """B as a batch of matrices `(*, n, k)`, broadcast against A's batch (a vector B gets a trailing 1)."""
    b = _np(B) if isinstance(B, Tensor) else B
    if vector:
        b = b[..., None]
    rows = A.shape[-2]
    if b.shape[-2] != rows:
        shape = "x".join(str(s) for s in b.shape[-2:])
        raise RuntimeError(f"{fn}: Incompatible shapes of A and B for the equation AX = B ({A.shape[-2]}x"
                           f"{A.shape[-1]} and {shape})")
    try:
        batch = np.broadcast_shapes(tuple(A.shape[:-2]), b.shape[:-2])
    except ValueError:
        raise RuntimeError(f"{fn}: Incompatible batch shapes of A {list(A.shape[:-2])} and B "
                           f"{list(b.shape[:-2])}") from None
    a = _np(A) if a is None else a
    return np.broadcast_to(a, batch + a.shape[-2:]), np.broadcast_to(b, batch + b.shape[-2:])


def _vector_rhs(A: Tensor, B: Tensor) -> bool:
    return B.dim() == 1 or (B.dim() == A.dim() - 1 and tuple(B.shape) == tuple(A.shape[:-1]))


def _solve(fn: str, A, B, left: bool, ex: bool):
    _check(fn, A, square=True)
    _same_dtype(fn, A, B)
    vector = _vector_rhs(A, B)
    if not left:  # X A = B  <=>  A^T X^T = B^T (a vector B is a column, as torch reads it)
        cols = 1 if vector else B.shape[-1]
        if cols != A.shape[-1]:
            rows = B.shape[-1] if vector else B.shape[-2]
            raise RuntimeError(f"{fn}: Incompatible shapes of A and B for the equation XA = B "
                               f"({A.shape[-2]}x{A.shape[-1]} and {rows}x{cols})")
        x, info = _solve(fn, A.mT, B.mT, True, ex)
        return x.mT, info
    a, b = _rhs(fn, A, B, vector)
    info = None
    try:
        x = _lapack("solve", np.linalg.solve, a, b)
    except np.linalg.LinAlgError:
        if not ex:
            raise LinAlgError("torch.linalg.solve: The solver failed because the input matrix is singular.") from None
        info = _lu_info(np.ascontiguousarray(a))
        with np.errstate(all="ignore"):
            x = np.linalg.pinv(a) @ b  # the singular elements' values are unspecified
    if ex and info is None:
        info = np.zeros(a.shape[:-2], np.int32)
    return _back(x[..., 0] if vector else x, A), info


@_writes_out
def solve(A, B, *, left=True):
    """X with A X = B (left=False: X A = B); B a matrix, a batch of them, or a vector."""
    return _solve("linalg.solve", A, B, left, False)[0]


@_writes_out
def solve_ex(A, B, *, left=True, check_errors=False):
    x, info = _solve("linalg.solve_ex", A, B, left, not check_errors)
    return linalg_solve_ex(x, _int32(info, A))


def _trsm(a: np.ndarray, b: np.ndarray, upper: bool, unitriangular: bool) -> np.ndarray:
    """X with T X = B for the `upper` or lower triangle T of `a` (a zero diagonal gives inf/nan, as trsm)."""
    a = np.triu(a) if upper else np.tril(a)
    if unitriangular:
        idx = np.arange(a.shape[-1])
        a[..., idx, idx] = 1
    with np.errstate(divide="ignore", invalid="ignore"):
        try:
            return np.linalg.solve(a, b)
        except np.linalg.LinAlgError:  # torch's trsm divides by the zero diagonal: inf/nan, no error
            return np.full(np.broadcast_shapes(a.shape[:-1] + (1,), b.shape), np.nan, a.dtype)


@_writes_out
def solve_triangular(A, B, *, upper, left=True, unitriangular=False):
    """X with A X = B for triangular A (only the `upper` or lower triangle of A is read)."""
    _check("linalg.solve_triangular", A, square=True)
    _same_dtype("linalg.solve_triangular", A, B)
    if not left:
        return solve_triangular(A.mT, B.mT, upper=not upper, unitriangular=unitriangular).mT
    a, b = _rhs("linalg.solve_triangular", A, B, False)
    return _back(_trsm(a, b, upper, unitriangular), A)


@_writes_out
def lu_solve(LU, pivots, B, *, left=True, adjoint=False):
    """X with A X = B (or A^T X = B, or X A = B) from A's lu_factor."""
    _check("linalg.lu_solve", LU, square=True, arg="LU")
    _same_dtype("linalg.lu_solve", LU, B)
    if not left:  # X A = B  <=>  A^T X^T = B^T
        return lu_solve(LU, pivots, B.mT, left=True, adjoint=not adjoint).mT
    lu, b = _rhs("linalg.lu_solve", LU, B, False)
    n = lu.shape[-1]
    perm = np.broadcast_to(_permutation(_np(pivots).astype(np.int64), n), lu.shape[:-1])
    with np.errstate(divide="ignore", invalid="ignore"):
        if not adjoint:  # A = P L U: X = U^-1 L^-1 P^T B
            y = np.take_along_axis(b, perm[..., :, None], axis=-2)
            x = _trsm(lu, _trsm(lu.copy(), y, False, True), True, False)
        else:  # A^T = U^T L^T P^T: X = P L^-T U^-T B
            lt = np.swapaxes(lu, -1, -2)
            y = _trsm(lt.copy(), _trsm(lt.copy(), b, False, False), True, True)
            x = np.empty_like(y)
            np.put_along_axis(x, np.broadcast_to(perm[..., :, None], y.shape), y, axis=-2)
    return _back(x, LU)


@_writes_out
def ldl_solve(LD, pivots, B, *, hermitian=False):
    """X with A X = B from A's ldl_factor (LAPACK's sytrs, lower)."""
    _check("torch.linalg.ldl_solve", LD, square=True, arg="LD")
    _same_dtype("torch.linalg.ldl_solve", LD, B)
    ld, b = _rhs("torch.linalg.ldl_solve", LD, B, False)
    piv = np.broadcast_to(_np(pivots), ld.shape[:-1])
    x = np.array(b, copy=True)
    for a, p, xb in zip(_flat(ld), piv.reshape(-1, piv.shape[-1]) if piv.size else (), _flat(x)):
        with np.errstate(divide="ignore", invalid="ignore"):
            _sytrs(a, p, xb)
    return _back(x, LD)


def _sytrs(a: np.ndarray, ipiv: np.ndarray, b: np.ndarray) -> None:
    n = a.shape[0]
    k = 0
    while k < n:  # L D Y = P^T B
        if ipiv[k] > 0:
            kp = ipiv[k] - 1
            b[[k, kp]] = b[[kp, k]]
            b[k + 1:] -= np.outer(a[k + 1:, k], b[k])
            b[k] /= a[k, k]
            k += 1
        else:
            kp = -ipiv[k] - 1
            b[[k + 1, kp]] = b[[kp, k + 1]]
            b[k + 2:] -= np.outer(a[k + 2:, k], b[k]) + np.outer(a[k + 2:, k + 1], b[k + 1])
            akm1k = a[k + 1, k]
            akm1, ak = a[k, k] / akm1k, a[k + 1, k + 1] / akm1k
            denom = akm1 * ak - 1
            bkm1, bk = b[k] / akm1k, b[k + 1] / akm1k
            b[k], b[k + 1] = (ak * bkm1 - bk) / denom, (akm1 * bk - bkm1) / denom
            k += 2
    k = n - 1
    while k >= 0:  # L^T P^T X = Y
        if ipiv[k] > 0:
            b[k] -= a[k + 1:, k] @ b[k + 1:]
            kp = ipiv[k] - 1
            b[[k, kp]] = b[[kp, k]]
            k -= 1
        else:
            b[k] -= a[k + 1:, k] @ b[k + 1:]
            b[k - 1] -= a[k + 1:, k - 1] @ b[k + 1:]
            kp = -ipiv[k] - 1
            b[[k, kp]] = b[[kp, k]]
            k -= 2


def _cholesky_factor(fn: str, L, upper: bool) -> np.ndarray:
    """The lower factor of a Cholesky factorization given as L (or U = L^T)."""
    if not isinstance(L, Tensor) or L.dim() < 2:
        raise RuntimeError(f"{fn}: The input tensor must have at least 2 dimensions.")
    _check(fn, L, square=True)
    low = _np(L)
    return np.tril(np.swapaxes(low, -1, -2) if upper else low)


def cholesky_solve(B, L, upper=False, *, out=None):
    """X with (L L^T) X = B from A's Cholesky factor L (or U = L^T)."""
    low = _cholesky_factor("cholesky_solve", L, upper)
    _same_dtype("cholesky_solve", L, B)
    if B.dim() < 2:
        raise RuntimeError(f"b should have at least 2 dimensions, but has {B.dim()} dimensions instead")
    low, b = _rhs("cholesky_solve", L, B, False, a=low)
    x = _trsm(np.swapaxes(low, -1, -2).copy(), _trsm(low.copy(), b, False, False), True, False)
    r = _back(x, L)
    return r if out is None else _writes_out(lambda: r)(out=out)


def cholesky_inverse(L, upper=False, *, out=None):
    """(L L^T)^-1 from the Cholesky factor L (or U = L^T)."""
    low = _cholesky_factor("cholesky_inverse", L, upper)
    with np.errstate(divide="ignore", invalid="ignore"):
        linv = _trsm(low, np.broadcast_to(np.eye(low.shape[-1], dtype=low.dtype), low.shape), False, False)
    r = _back(np.swapaxes(linv, -1, -2) @ linv, L)
    return r if out is None else _writes_out(lambda: r)(out=out)


@_writes_out
def pinv(A, *, atol=None, rtol=None, hermitian=False):
    """Moore-Penrose pseudo-inverse: singular values at or below max(atol, rtol * sigma_max) are
    dropped; rtol defaults to eps * max(m, n), and to 0 where a positive atol is given (torch's rule)."""
    _check("linalg.pinv", A)
    a = _np(A)
    m, n = a.shape[-2:]
    if 0 in a.shape:
        return _back(np.zeros(a.shape[:-2] + (n, m)), A)
    if hermitian:
        w, v = np.linalg.eigh(a)
        s = np.abs(w)
        keep = s > _tolerance(s, m, n, atol, rtol, s.max(-1, keepdims=True))
        with np.errstate(divide="ignore"):
            winv = np.where(keep, 1 / np.where(keep, w, 1), 0)
        return _back((v * winv[..., None, :]) @ np.swapaxes(v, -1, -2), A)
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    keep = s > _tolerance(s, m, n, atol, rtol, s[..., :1])
    sinv = np.where(keep, 1 / np.where(keep, s, 1), 0)
    return _back(np.swapaxes(vh, -1, -2) @ (sinv[..., :, None] * np.swapaxes(u, -1, -2)), A)


@_writes_out
def matrix_rank(A, tol=None, *, atol=None, rtol=None, hermitian=False):
    _check("linalg.matrix_rank", A)
    if tol is not None:  # the deprecated positional tolerance is an absolute one
        atol, rtol = tol, 0.0
    a = _np(A)
    m, n = a.shape[-2:]
    s = np.abs(np.linalg.eigvalsh(a)) if hermitian else np.linalg.svd(a, compute_uv=False)
    smax = s.max(-1, keepdims=True) if s.shape[-1] else np.zeros(s.shape[:-1] + (1,), s.dtype)
    tol_ = _tolerance(s, m, n, atol, rtol, smax)
    return _back((s > tol_).sum(-1), A, _C.int64)


_LSTSQ_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


def lstsq(A, B, rcond=None, *, driver=None):
    """Least-squares solution of A X = B, minimum-norm when A is rank-deficient. The result fields
    follow the driver as torch's do: `rank` (not for gels), `singular_values` (gelsd and gelss only),
    `residuals` (m > n and full rank, not for gelsy)."""
    _check("linalg.lstsq", A)
    _same_dtype("linalg.lstsq", A, B, "b")
    driver = driver or "gelsy"
    if driver not in _LSTSQ_DRIVERS:
        raise RuntimeError("torch.linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)")
    if B.dim() not in (A.dim(), A.dim() - 1):
        raise RuntimeError("torch.linalg.lstsq: input.dim() must be greater or equal to other.dim() and "
                           "(input.dim() - other.dim()) <= 1")
    vector = B.dim() == A.dim() - 1
    m, n = A.shape[-2:]
    if (B.shape[-1] if vector else B.shape[-2]) != m:
        raise RuntimeError(f"torch.linalg.lstsq: input.size(-2) should match other.size(-{1 if vector else 2})")
    a, b = _rhs("linalg.lstsq", A, B, vector)
    eps = np.finfo(a.dtype).eps
    rcond = eps * builtins.max(m, n) if rcond is None or rcond < 0 else rcond
    batch = a.shape[:-2]
    x = np.zeros(batch + (n, b.shape[-1]), a.dtype)
    ranks = np.zeros(batch, np.int64)
    svals = np.zeros(batch + (builtins.min(m, n),), a.dtype)
    if m and n:
        for i, (ai, bi) in enumerate(zip(_flat(a), _flat(b))):
            xi, _, rank, s = np.linalg.lstsq(ai, bi, rcond=rcond)
            idx = np.unravel_index(i, batch) if batch else ()
            x[idx], ranks[idx], svals[idx] = xi, rank, s
    empty = np.zeros(0, a.dtype)
    residuals = empty
    if m > n and driver != "gelsy" and (driver == "gels" or bool((ranks == n).all())):
        residuals = ((a @ x - b) ** 2).sum(-2)
        if vector:
            residuals = residuals[..., 0]
    return linalg_lstsq(_back(x[..., 0] if vector else x, A), _back(residuals, A),
                        _back(ranks if driver != "gels" else np.zeros(0, np.int64), A, _C.int64),
                        _back(svals if driver in ("gelsd", "gelss") else empty, A))


def matrix_power(A, n):
    _check("linalg.matrix_power", A, square=True)
    try:
        return _back(np.linalg.matrix_power(_np(A), n), A)
    except np.linalg.LinAlgError:
        raise _singular("linalg.matrix_power", _np(A)) from None


@_writes_out
def tensorinv(A, ind=2):
    """The inverse of A read as a linear map from A.shape[ind:] to A.shape[:ind]."""
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    rows, cols = int(np.prod(A.shape[:ind])), int(np.prod(A.shape[ind:]))
    if rows != cols:
        raise RuntimeError("Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                           f"prod(self.shape[:ind]), but got {cols} != {rows}")
    return inv(A.reshape(rows, cols)).reshape(*A.shape[ind:], *A.shape[:ind])


@_writes_out
def tensorsolve(A, B, dims=None):
    """X with tensordot(A, X, X.dim()) = B."""
    if dims is not None:
        nd = A.dim()
        dims = [d % nd for d in dims]
        A = A.permute(*[d for d in range(nd) if d not in dims], *dims)
    x_shape = tuple(A.shape[B.dim():])
    rows, cols = B.numel(), int(np.prod(x_shape))
    if rows != cols:
        raise RuntimeError("Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == "
                           f"prod(self.shape[:other.ndim]), but got {cols} != {rows}")
    return solve(A.reshape(rows, cols), B.reshape(rows)).reshape(*x_shape)


def triangular_solve(b, A, upper=True, transpose=False, unitriangular=False, *, out=None):
    """torch.triangular_solve: (X with op(A) X = b, a copy of A), batches broadcast."""
    from ..return_types import triangular_solve as _tuple

    _check("triangular_solve", A, square=True)
    _same_dtype("triangular_solve", b, A)
    if b.dim() < 2:
        raise RuntimeError(f"torch.triangular_solve: Expected b to have at least 2 dimensions, but it has {b.dim()} "
                           "dimensions instead")
    a, bb = _rhs("triangular_solve", A, b, False)
    if transpose:
        a, upper = np.swapaxes(a, -1, -2), not upper
    x = _trsm(a.copy(), bb, upper, unitriangular)
    r = _tuple(_back(x, b), _back(np.swapaxes(a, -1, -2) if transpose else a, A))
    return r if out is None else _writes_out(lambda: r)(out=out)

