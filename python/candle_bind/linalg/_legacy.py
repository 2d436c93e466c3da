"""torch's top-level (legacy) linear algebra: torch.svd (V, not V^H), torch.lu / lu_unpack / lu_solve, the
removed torch.qr / torch.cholesky (torch's errors), pinverse and the randomized low-rank SVD / PCA."""

from __future__ import annotations

import builtins

import numpy as np

from .. import _C
from ..return_types import _lu_with_info, linalg_lu_factor, lu_unpack as _lu_unpack_tuple, svd as _svd_tuple
from ._common import _back, _check, _int32, _np, _writes_out
from ._decomp import _check_pivot, _getrf, _raise_singular_lu, _unpack, qr, svd, svdvals
from ._solve import lu_solve as _lu_solve, pinv


@_writes_out
def legacy_svd(input, some=True, compute_uv=True):
    """torch.svd: returns torch.return_types.svd(U, S, V) with V, not V^H; compute_uv=False gives
    zero-filled U and V of the full shapes."""
    _check("linalg.svd", input)
    m, n = input.shape[-2:]
    if not compute_uv:
        batch = tuple(input.shape[:-2])
        s = svdvals(input)
        zeros = lambda *shape: _C.zeros(*batch, *shape, dtype=input.dtype, device=input.device)  # noqa: E731
        return _svd_tuple(zeros(m, m), s, zeros(n, n))
    u, s, vh = svd(input, full_matrices=not some)
    return _svd_tuple(u, s, vh.mT)


def legacy_qr(input, some=True, *, out=None):
    """torch.qr was removed in torch 2.x: the same error torch gives."""
    raise RuntimeError(
        "This function was deprecated since version 1.9 and is now removed. `torch.qr` is deprecated in favor of "
        "`torch.linalg.qr` and the boolean parameter `some` has been replaced with a string parameter `mode`.\n\n"
        "Q, R = torch.qr(A) should be replaced with:\nQ, R = torch.linalg.qr(A, mode='reduced')\n\nand\n\n"
        "Q, R = torch.qr(A, some=False) should be replaced with:\nQ, R = torch.linalg.qr(A, mode='complete')\n\n"
        f"Since `some` was set to {some}, use mode='{'reduced' if some else 'complete'}'.")


def legacy_cholesky(input, upper=False, *, out=None):
    """torch.cholesky was removed in torch 2.x: the same error torch gives."""
    raise RuntimeError(
        "This function was deprecated since version 1.9 and is now removed. `torch.cholesky` is deprecated in favor "
        "of `torch.linalg.cholesky`.\nL = torch.cholesky(A) should be replaced with:\nL = torch.linalg.cholesky(A)\n"
        "U = torch.cholesky(A, upper=True) should be replaced with:\nU = torch.linalg.cholesky(A).mH")


def pinverse(input, rcond=1e-15):
    return pinv(input, rtol=rcond)


def legacy_lu(A, pivot=True, get_infos=False, out=None):
    """torch.lu: (LU, pivots) or, with get_infos, (LU, pivots, infos); raises on a singular A otherwise."""
    _check("torch.lu", A)
    _check_pivot("linalg.lu_factor", pivot)
    lu, ipiv, info = _getrf(_np(A))
    if not get_infos:
        _raise_singular_lu("torch.linalg.lu_factor", info)
        r = linalg_lu_factor(_back(lu, A), _int32(ipiv, A))
    else:
        r = _lu_with_info(_back(lu, A), _int32(ipiv, A), _int32(info, A))
    return r if out is None else _writes_out(lambda: r)(out=out)


@_writes_out
def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True):
    """(P, L, U) from torch.lu / linalg.lu_factor's packed result (empty tensors for what is not unpacked)."""
    _check("torch.lu_unpack", LU_data, arg="LU_data")
    P, L, U = _unpack(_np(LU_data), _np(LU_pivots).astype(np.int64), unpack_data, unpack_pivots)
    empty = np.zeros(0)
    return _lu_unpack_tuple(*(_back(empty if t is None else t, LU_data) for t in (P, L, U)))


def legacy_lu_solve(b, LU_data, LU_pivots, *, out=None):
    """torch.lu_solve(b, LU, pivots): the arguments of linalg.lu_solve, B first."""
    r = _lu_solve(LU_data, LU_pivots, b)
    return r if out is None else _writes_out(lambda: r)(out=out)


def _approximate_basis(A, q, niter, M):
    """Q with q orthonormal columns such that Q Q^H (A - M) approximates A - M (Halko et al. 2009,
    algorithm 4.4, as torch._lowrank)."""
    R = _C.randn(A.shape[-1], q, dtype=A.dtype, device=A.device)
    X = A @ R if M is None else A @ R - M @ R
    Q = qr(X).Q
    for _ in range(niter):
        X = A.mT @ Q if M is None else A.mT @ Q - M.mT @ Q
        Q = qr(X).Q
        X = A @ Q if M is None else A @ Q - M @ Q
        Q = qr(X).Q
    return Q


def svd_lowrank(A, q=6, niter=2, M=None):
    """A randomized (U, S, V) with A - M ~ U diag(S) V^T (Halko et al. 2009, algorithm 5.1). The
    random projection comes from candle_bind's generator, so the factors match torch's only up to
    the approximation, not bit for bit."""
    q = 6 if q is None else q
    niter = 2 if niter is None else niter
    if not A.is_floating_point():
        A = A.float()
    m, n = A.shape[-2:]
    if M is not None:
        M = M.broadcast_to(A.shape)
    if m < n:
        A = A.mT
        M = None if M is None else M.mT
    Q = _approximate_basis(A, q, niter, M)
    B = Q.mT @ A if M is None else Q.mT @ A - Q.mT @ M
    U, S, Vh = svd(B, full_matrices=False)
    U, V = Q @ U, Vh.mT
    return (V, S, U) if m < n else (U, S, V)


def pca_lowrank(A, q=None, center=True, niter=2):
    m, n = A.shape[-2:]
    if q is None:
        q = builtins.min(6, m, n)
    elif not 0 <= q <= builtins.min(m, n):
        raise ValueError(f"q(={q}) must be non-negative integer and not greater than min(m, n)={builtins.min(m, n)}")
    if not niter >= 0:
        raise ValueError(f"niter(={niter}) must be non-negative integer")
    if not center:
        return svd_lowrank(A, q, niter=niter)
    return svd_lowrank(A - A.mean(dim=(-2,), keepdim=True), q, niter=niter)
