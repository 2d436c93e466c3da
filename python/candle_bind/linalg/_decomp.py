"""Decompositions: SVD, QR (and its Householder form: geqrf, householder_product, ormqr), symmetric and
general eigenproblems, Cholesky, LU with partial pivoting and Bunch-Kaufman LDL^T. numpy.linalg's
LAPACK where it has the routine; getrf and sytrf, which it lacks, are written here over numpy (blocked
LU: recursive panels whose updates are matrix products)."""

from __future__ import annotations

import numpy as np

from .. import _C
from .._complex import from_numpy_complex
from ..return_types import (geqrf as _geqrf_tuple, linalg_cholesky_ex, linalg_eig, linalg_eigh, linalg_ldl_factor,
                            linalg_ldl_factor_ex, linalg_lu, linalg_lu_factor, linalg_lu_factor_ex, linalg_qr,
                            linalg_svd)
from ._common import LinAlgError, _back, _lapack, _batch_prefix, _check, _check_uplo, _flat, _int32, _np, _writes_out

# ---- SVD, QR, eigen ----


@_writes_out
def svd(A, full_matrices=True, *, driver=None):
    """A = U diag(S) Vh; returns torch.return_types.linalg_svd(U, S, Vh)."""
    _check("linalg.svd", A)
    if driver is not None:
        raise RuntimeError("torch.linalg.svd: keyword argument `driver=` is only supported on CUDA inputs with "
                           "cuSOLVER backend.")
    a = _np(A)
    u, s, vh = _lapack("svd_f" if full_matrices else "svd_s", np.linalg.svd, a, nout=3, full_matrices=full_matrices)
    return linalg_svd(_back(u, A), _back(s, A), _back(vh, A))


@_writes_out
def svdvals(A, *, driver=None):
    _check("linalg.svdvals", A)
    return _back(_lapack("svd", np.linalg.svd, _np(A), compute_uv=False), A)


@_writes_out
def qr(A, mode="reduced"):
    """Householder QR; returns torch.return_types.linalg_qr(Q, R) (Q empty for mode='r')."""
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), 'r', "
                           "or 'complete'")
    _check("linalg.qr", A)
    if mode == "r":
        return linalg_qr(_back(np.zeros(0), A), _back(np.linalg.qr(_np(A), mode="r"), A))
    q, r = np.linalg.qr(_np(A), mode=mode)  # in double: numpy has no single-precision qr loop
    return linalg_qr(_back(q, A), _back(r, A))


@_writes_out
def geqrf(input):
    """LAPACK's geqrf: R on and above the diagonal, the Householder vectors below it, and their scales."""
    _check("geqrf", input, arg="input")
    h, tau = np.linalg.qr(_np(input), mode="raw")  # numpy hands back geqrf's column-major array
    return _geqrf_tuple(_back(np.swapaxes(h, -1, -2), input), _back(tau, input))


def _reflect(a: np.ndarray, tau: np.ndarray, c: np.ndarray, left: bool, transpose: bool) -> np.ndarray:
    """C multiplied by Q = H_1 ... H_k (or Q^T), on the left or the right, with H_i = I - tau_i v_i v_i^T
    and v_i column i of `a` below the diagonal, 1 on it (LAPACK's ormqr)."""
    k = tau.shape[-1]
    order = range(k - 1, -1, -1) if left != transpose else range(k)
    for i in order:
        v = a[..., :, i].copy()
        v[..., :i] = 0
        v[..., i] = 1
        t = tau[..., i, None, None]
        if left:
            c = c - t * v[..., :, None] * (v[..., None, :] @ c)
        else:
            c = c - t * (c @ v[..., :, None]) * v[..., None, :]
    return c


@_writes_out
def householder_product(A, tau):
    """The first n columns of H_1 ... H_k from geqrf's reflectors (LAPACK's orgqr)."""
    _check("linalg.householder_product", A, arg="input")
    m, n = A.shape[-2:]
    if m < n:
        raise RuntimeError("torch.linalg.householder_product: input.shape[-2] must be greater than or equal to "
                           "input.shape[-1]")
    if tau.shape[-1] > n:
        raise RuntimeError("torch.linalg.householder_product: input.shape[-1] must be greater than or equal to "
                           "tau.shape[-1]")
    if tau.dim() != A.dim() - 1:
        raise RuntimeError(f"torch.linalg.householder_product: Expected tau to have one dimension less than input, "
                           f"but got tau.ndim equal to {tau.dim()} and input.ndim is equal to {A.dim()}")
    a, t = _np(A), _np(tau)
    eye = np.broadcast_to(np.eye(m, n, dtype=a.dtype), a.shape)
    return _back(_reflect(a, t, eye, True, False), A)


def ormqr(input, tau, other, left=True, transpose=False, *, out=None):
    """other multiplied by Q (or Q^T) of geqrf's reflectors in `input`, from the left or the right."""
    _check("ormqr", input, arg="input")
    a, t, c = _np(input), _np(tau), _np(other)
    r = _back(_reflect(a, t, c, left, transpose), other)
    return r if out is None else _writes_out(lambda: r)(out=out)


@_writes_out
def eigh(A, UPLO="L"):
    """Eigenvalues (ascending) and eigenvectors of symmetric matrices, from the UPLO triangle."""
    _check_uplo(UPLO)
    _check("linalg.eigh", A, square=True)
    w, v = _lapack(f"eigh_{'lo' if UPLO in 'Ll' else 'up'}", np.linalg.eigh, _np(A), nout=2, UPLO=UPLO)
    return linalg_eigh(_back(w, A), _back(v, A))


@_writes_out
def eigvalsh(A, UPLO="L"):
    _check_uplo(UPLO)
    _check("linalg.eigvalsh", A, square=True)
    return _back(_lapack(f"eigvalsh_{'lo' if UPLO in 'Ll' else 'up'}", np.linalg.eigvalsh, _np(A), UPLO=UPLO), A)


def _real_parts(A) -> type:
    return np.float64 if A.dtype == _C.float64 else np.float32


@_writes_out
def eig(A):
    """Eigenvalues and unit-norm eigenvectors of a general matrix: always complex, as torch's (geev)."""
    _check("linalg.eig", A, square=True)
    w, v = np.linalg.eig(_np(A))
    rd = _real_parts(A)
    return linalg_eig(from_numpy_complex(w, rd), from_numpy_complex(v, rd))


@_writes_out
def eigvals(A):
    _check("linalg.eigvals", A, square=True)
    return from_numpy_complex(np.linalg.eigvals(_np(A)), _real_parts(A))


# ---- Cholesky ----


@_writes_out
def cholesky(A, *, upper=False):
    """L with A = L L^T from A's lower triangle (upper=True: U = L^T from the upper triangle)."""
    L, info = _potrf("linalg.cholesky", A, upper)
    _raise_not_pd(info)
    return L


@_writes_out
def cholesky_ex(A, *, upper=False, check_errors=False):
    """(L, info): info is the order of the first leading minor that is not positive-definite (0: none);
    L is then potf2's partial factor, as torch's."""
    L, info = _potrf("linalg.cholesky_ex", A, upper)
    if check_errors:
        _raise_not_pd(info)
    return linalg_cholesky_ex(L, _int32(info[0], A))


def _potrf(fn: str, A, upper: bool):
    _check(fn, A, square=True)
    a = _np(A)
    if upper:
        a = np.swapaxes(a, -1, -2)
    info = np.zeros(a.shape[:-2], np.int32)
    try:
        low = _lapack("cholesky_lo", np.linalg.cholesky, a)
    except np.linalg.LinAlgError:
        low = np.zeros_like(a)
        for i, m in enumerate(_flat(a)):
            idx = np.unravel_index(i, a.shape[:-2]) if a.ndim > 2 else ()
            low[idx], info[idx] = _potf2(m)
    low = np.swapaxes(low, -1, -2) if upper else low
    return _back(low, A), (info, a)


def _potf2(m: np.ndarray):
    """Column-by-column Cholesky of one matrix; on a non-positive pivot it stops there, leaving the
    pivot's value unrooted and the later columns as they were (LAPACK's potf2)."""
    low = np.tril(m).astype(m.dtype, copy=True)
    for j in range(m.shape[0]):
        ajj = low[j, j] - low[j, :j] @ low[j, :j]
        if not ajj > 0:
            low[j, j] = ajj
            return low, j + 1
        low[j, j] = np.sqrt(ajj)
        low[j + 1:, j] = (low[j + 1:, j] - low[j + 1:, :j] @ low[j, :j]) / low[j, j]
    return low, 0


def _raise_not_pd(info_a) -> None:
    info, a = info_a
    flat = info.reshape(-1)
    bad = np.flatnonzero(flat)
    if bad.size:
        i = int(bad[0])
        raise LinAlgError(f"linalg.cholesky: {_batch_prefix(a, i)}The factorization could not be completed "
                          f"because the input is not positive-definite (the leading minor of order {flat[i]} is not "
                          "positive-definite).")


# ---- LU with partial pivoting (getrf) ----


def _getrf(a: np.ndarray):
    """LU with partial pivoting of a batch `(*, m, n)`: (LU packed as LAPACK's, 1-based pivots, info).
    Recursive on column halves: each half's panel is factored column by column (the pivot is the first
    largest magnitude, idamax's choice) and the rest of the matrix is updated by one product."""
    batch, (m, n) = a.shape[:-2], a.shape[-2:]
    lu = _flat(np.array(a, copy=True))
    k = min(m, n)
    ipiv = np.zeros((lu.shape[0], k), np.int32)
    info = np.zeros(lu.shape[0], np.int32)
    if lu.shape[0] and k:
        _getrf_cols(lu, 0, k, ipiv, info)
        if n > m:  # the columns right of the square part: U12 = L11^-1 A12
            lu[:, :, m:] = _unit_lower_solve(lu[:, :, :m], lu[:, :, m:])
    return lu.reshape(a.shape), ipiv.reshape(batch + (k,)), info.reshape(batch)


def _unit_lower_solve(L: np.ndarray, b: np.ndarray) -> np.ndarray:
    n = L.shape[-1]
    return np.linalg.solve(np.tril(L, -1) + np.eye(n, dtype=L.dtype), b)


def _getrf_cols(lu, j0: int, j1: int, ipiv, info) -> None:
    if j1 - j0 > 32:
        mid = (j0 + j1) // 2
        _getrf_cols(lu, j0, mid, ipiv, info)
        lu[:, j0:mid, mid:j1] = _unit_lower_solve(lu[:, j0:mid, j0:mid], lu[:, j0:mid, mid:j1])
        lu[:, mid:, mid:j1] -= lu[:, mid:, j0:mid] @ lu[:, j0:mid, mid:j1]
        _getrf_cols(lu, mid, j1, ipiv, info)
        return
    rows = np.arange(lu.shape[0])
    for j in range(j0, j1):
        p = j + np.argmax(np.abs(lu[:, j:, j]), axis=1)
        ipiv[:, j] = p + 1
        swap = lu[rows, p].copy()  # whole rows: LAPACK applies each interchange to every column
        lu[rows, p] = lu[rows, j]
        lu[rows, j] = swap
        pivot = lu[:, j, j]
        zero = pivot == 0
        info[(info == 0) & zero] = j + 1
        lu[:, j + 1:, j] /= np.where(zero, 1, pivot)[:, None]
        lu[:, j + 1:, j + 1:j1] -= lu[:, j + 1:, j, None] * lu[:, j, None, j + 1:j1]


def _permutation(ipiv: np.ndarray, m: int) -> np.ndarray:
    """The row order P^T A = L U from LAPACK's sequential interchanges: perm[..., i] is A's row at i."""
    perm = np.broadcast_to(np.arange(m), ipiv.shape[:-1] + (m,)).copy()
    b = int(np.prod(ipiv.shape[:-1], dtype=np.int64))
    flat, piv = perm.reshape(b, m), ipiv.reshape(b, ipiv.shape[-1]) - 1
    rows = np.arange(flat.shape[0])
    for i in range(piv.shape[-1]):
        p = piv[:, i]
        swap = flat[rows, p].copy()
        flat[rows, p] = flat[rows, i]
        flat[rows, i] = swap
    return flat.reshape(perm.shape)


def _check_pivot(fn: str, pivot: bool) -> None:
    if not pivot:
        raise RuntimeError(f"{fn}: LU without pivoting is not implemented on the CPU")


@_writes_out
def lu_factor_ex(A, *, pivot=True, check_errors=False):
    _check("linalg.lu_factor_ex", A)
    _check_pivot("linalg.lu_factor", pivot)
    lu, ipiv, info = _getrf(_np(A))
    if check_errors:
        _raise_singular_lu("torch.linalg.lu_factor_ex", info)
    return linalg_lu_factor_ex(_back(lu, A), _int32(ipiv, A), _int32(info, A))


@_writes_out
def lu_factor(A, *, pivot=True):
    """(LU, pivots): L below the diagonal (unit diagonal implied), U on and above, 1-based pivots."""
    _check("linalg.lu_factor", A)
    _check_pivot("linalg.lu_factor", pivot)
    lu, ipiv, info = _getrf(_np(A))
    _raise_singular_lu("torch.linalg.lu_factor", info)
    return linalg_lu_factor(_back(lu, A), _int32(ipiv, A))


def _raise_singular_lu(fn: str, info: np.ndarray) -> None:
    flat = info.reshape(-1)
    bad = np.flatnonzero(flat)
    if bad.size:
        i = int(bad[0])
        prefix = f"(Batch element {i}): " if info.ndim else ""
        raise LinAlgError(f"{fn}: {prefix}U[{flat[i]},{flat[i]}] is zero and using it on lu_solve would result "
                          "in a division by zero. If you still want to perform the factorization, consider calling "
                          "linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)")


def _unpack(lu: np.ndarray, ipiv: np.ndarray, data=True, pivots=True):
    m, n = lu.shape[-2:]
    k = min(m, n)
    P = L = U = None
    if pivots:
        perm = _permutation(ipiv, m)
        P = np.zeros(perm.shape + (m,), lu.dtype)
        np.put_along_axis(P, perm[..., :, None], 1, axis=-1)
        P = np.swapaxes(P, -1, -2)  # A = P L U: column i of P marks A's row perm[i]
    if data:
        L = np.tril(lu[..., :, :k], -1) + np.eye(m, k, dtype=lu.dtype)
        U = np.triu(lu[..., :k, :])
    return P, L, U


@_writes_out
def lu(A, *, pivot=True):
    """A = P L U; returns torch.return_types.linalg_lu(P, L, U)."""
    _check("linalg.lu", A)
    _check_pivot("linalg.lu", pivot)
    P, L, U = _unpack(*_getrf(_np(A))[:2])
    return linalg_lu(_back(P, A), _back(L, A), _back(U, A))


# ---- Bunch-Kaufman LDL^T (sytrf) ----

_BK_ALPHA = (1 + np.sqrt(17)) / 8


def _sytf2(a: np.ndarray):
    """LAPACK's unblocked Bunch-Kaufman on the lower triangle of one matrix (what sytrf runs below its
    block size): (LD, 1-based pivots, negative for 2x2 blocks, info)."""
    a = np.tril(a).copy()
    n = a.shape[0]
    ipiv = np.zeros(n, np.int32)
    info = 0
    k = 0
    while k < n:
        kstep = 1
        absakk = abs(a[k, k])
        if k < n - 1:
            imax = k + 1 + int(np.argmax(np.abs(a[k + 1:, k])))
            colmax = abs(a[imax, k])
        else:
            imax, colmax = k, 0.0
        if max(absakk, colmax) == 0 or np.isnan(absakk):
            info = info or k + 1
            kp = k
        else:
            if absakk >= _BK_ALPHA * colmax:
                kp = k
            else:
                rowmax = np.abs(a[imax, k:imax]).max()
                if imax < n - 1:
                    rowmax = max(rowmax, np.abs(a[imax + 1:, imax]).max())
                if absakk >= _BK_ALPHA * colmax * (colmax / rowmax):
                    kp = k
                elif abs(a[imax, imax]) >= _BK_ALPHA * rowmax:
                    kp = imax
                else:
                    kp, kstep = imax, 2
            kk = k + kstep - 1
            if kp != kk:  # interchange rows and columns kk and kp of the trailing lower triangle
                a[kp + 1:, [kk, kp]] = a[kp + 1:, [kp, kk]]
                seg = a[kk + 1:kp, kk].copy()
                a[kk + 1:kp, kk] = a[kp, kk + 1:kp]
                a[kp, kk + 1:kp] = seg
                a[kk, kk], a[kp, kp] = a[kp, kp], a[kk, kk]
                if kstep == 2:
                    a[k + 1, k], a[kp, k] = a[kp, k], a[k + 1, k]
            if kstep == 1:
                if k < n - 1:
                    x = a[k + 1:, k].copy()
                    a[k + 1:, k + 1:] -= np.tril(np.outer(x, x) / a[k, k])
                    a[k + 1:, k] = x / a[k, k]
            elif k < n - 2:
                d21 = a[k + 1, k]
                d11, d22 = a[k + 1, k + 1] / d21, a[k, k] / d21
                t = 1 / (d11 * d22 - 1)
                d21 = t / d21
                wk = d21 * (d11 * a[k + 2:, k] - a[k + 2:, k + 1])
                wkp1 = d21 * (d22 * a[k + 2:, k + 1] - a[k + 2:, k])
                a[k + 2:, k + 2:] -= np.tril(np.outer(a[k + 2:, k], wk) + np.outer(a[k + 2:, k + 1], wkp1))
                a[k + 2:, k], a[k + 2:, k + 1] = wk, wkp1
        if kstep == 1:
            ipiv[k] = kp + 1
        else:
            ipiv[k] = ipiv[k + 1] = -(kp + 1)
        k += kstep
    return a, ipiv, info


def _ldl(fn: str, A, hermitian: bool):
    _check(fn, A, square=True)
    a = _np(A)
    ld, piv, info = np.zeros_like(a), np.zeros(a.shape[:-1], np.int32), np.zeros(a.shape[:-2], np.int32)
    for i, m in enumerate(_flat(a)):
        idx = np.unravel_index(i, a.shape[:-2]) if a.ndim > 2 else ()
        with np.errstate(divide="ignore", invalid="ignore"):
            ld[idx], piv[idx], info[idx] = _sytf2(m)
    return ld, piv, info


@_writes_out
def ldl_factor_ex(A, *, hermitian=False, check_errors=False):
    ld, piv, info = _ldl("torch.linalg.ldl_factor_ex", A, hermitian)
    if check_errors and info.any():
        raise LinAlgError(f"torch.linalg.ldl_factor_ex: Unknown error code: {int(info.reshape(-1)[info.reshape(-1) != 0][0])}.")
    return linalg_ldl_factor_ex(_back(ld, A), _int32(piv, A), _int32(info, A))


@_writes_out
def ldl_factor(A, *, hermitian=False):
    """A = P L D L^T P^T (Bunch-Kaufman, lower): (LD, pivots) as LAPACK's sytrf packs them."""
    ld, piv, info = _ldl("torch.linalg.ldl_factor", A, hermitian)
    if info.any():
        raise RuntimeError(f"torch.linalg.ldl_factor: Unknown error code: {int(info.reshape(-1)[info.reshape(-1) != 0][0])}.")
    return linalg_ldl_factor(_back(ld, A), _int32(piv, A))


# ---- matrix functions from a decomposition ----


@_writes_out
def matrix_sqrth(A):
    """The symmetric positive-definite square root V diag(sqrt(w)) V^T, from A's lower triangle."""
    _check("linalg.matrix_sqrth", A, square=True)
    w, v = np.linalg.eigh(_np(A))
    with np.errstate(invalid="ignore"):
        return _back((v * np.sqrt(w)[..., None, :]) @ np.swapaxes(v, -1, -2), A)


@_writes_out
def polar(A):
    """A = U H, U with orthonormal columns, H symmetric positive-semidefinite (from the SVD)."""
    _check("linalg.polar", A)
    m, n = A.shape[-2:]
    if m < n:
        raise RuntimeError(f"linalg.polar: input must have at least as many rows as columns, but got {m} by {n} "
                           "matrices")
    from ..return_types import linalg_polar

    u, s, vh = np.linalg.svd(_np(A), full_matrices=False)
    v = np.swapaxes(vh, -1, -2)
    return linalg_polar(_back(u @ vh, A), _back((v * s[..., None, :]) @ vh, A))
