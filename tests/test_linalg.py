"""torch.linalg (candle_bind/linalg.py, LAPACK through numpy) against torch: each case runs the same
call on both with the same inputs (float32 and float64, batched, non-square, empty) and compares
shapes, dtypes and values; singular vectors and eigenvectors up to each vector's sign. Errors: the
exception type torch raises (LinAlgError for singular / not positive-definite input) and its message."""

import math

import numpy as np
import pytest
import torch

import candle_bind as cb
from conftest import assert_same, make, to_cb, to_np

F = ["float32", "float64"]
TOL = {"float32": (1e-4, 1e-3), "float64": (1e-9, 1e-8)}


def run(fn, *inputs, dtype="float32", signs=()):
    """fn(L, *inputs) on torch and on candle_bind; `signs` lists the outputs (by index) whose columns
    are fixed only up to sign (eigenvectors, Q of QR): those are flipped to torch's before comparing."""
    ref = fn(torch, *inputs)
    ours = fn(cb, *[to_cb(t) if isinstance(t, torch.Tensor) else t for t in inputs])
    if signs:
        ours = list(ours)
        for i in signs:
            a = to_np(ours[i])
            flip = np.sign((a * to_np(ref[i])).sum(-2, keepdims=True))
            ours[i] = cb.from_numpy(np.ascontiguousarray(a * np.where(flip == 0, 1, flip)))
    atol, rtol = TOL[dtype]
    assert_same(ours, ref, atol, rtol)
    return ours, ref


def spd(shape, dtype, seed=0):
    a = make(shape, dtype, seed=seed)
    return a @ a.mT + shape[-1] * torch.eye(shape[-1], dtype=a.dtype)


def well(shape, dtype, seed=0):
    return make(shape, dtype, seed=seed) + 4 * torch.eye(shape[-1], dtype=getattr(torch, dtype))


SHAPES = [(4, 3), (3, 5), (2, 3, 4, 4)]


@pytest.mark.parametrize("dtype", F)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("full", [True, False])
def test_svd(dtype, shape, full):
    a = make(shape, dtype)
    ref = torch.linalg.svd(a, full_matrices=full)
    ours = cb.linalg.svd(to_cb(a), full_matrices=full)
    assert type(ours).__name__ == "linalg_svd" and ours._fields == ("U", "S", "Vh")
    k = min(shape[-2:])  # U's first k columns and Vh's first k rows flip together
    u, vh = to_np(ours.U), to_np(ours.Vh)
    flip = np.sign((u[..., :, :k] * to_np(ref.U)[..., :, :k]).sum(-2, keepdims=True))
    u[..., :, :k] *= flip
    vh[..., :k, :] *= np.swapaxes(flip, -1, -2)
    atol, rtol = TOL[dtype]
    assert_same(ours.S, ref.S, atol, rtol)
    assert ours.U.shape == ref.U.shape and ours.Vh.shape == ref.Vh.shape and ours.U.dtype == to_cb(ref.U).dtype
    np.testing.assert_allclose(u[..., :, :k], to_np(ref.U)[..., :, :k], atol=atol * 10, rtol=rtol)
    np.testing.assert_allclose(vh[..., :k, :], to_np(ref.Vh)[..., :k, :], atol=atol * 10, rtol=rtol)


@pytest.mark.parametrize("dtype", F)
@pytest.mark.parametrize("shape", SHAPES + [(0, 3)])
def test_svdvals_and_norms_of_singular_values(dtype, shape):
    a = make(shape, dtype)
    run(lambda L, a: L.linalg.svdvals(a), a, dtype=dtype)
    if 0 not in shape:
        for ord in ("nuc", 2, -2):
            run(lambda L, a: L.linalg.matrix_norm(a, ord), a, dtype=dtype)


def test_svd_empty():
    run(lambda L, a: tuple(L.linalg.svd(a)), torch.zeros(0, 3))


@pytest.mark.parametrize("dtype", F)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
def test_qr(dtype, shape, mode):
    run(lambda L, a: tuple(L.linalg.qr(a, mode=mode)), make(shape, dtype), dtype=dtype,
        signs=(0,) if mode != "r" else ())


def test_qr_result_type_and_products():
    a = make((5, 3))
    q, r = cb.linalg.qr(to_cb(a))
    assert type(cb.linalg.qr(to_cb(a))).__name__ == "linalg_qr"
    np.testing.assert_allclose(to_np(q @ r), a.numpy(), atol=1e-5)


@pytest.mark.parametrize("dtype", F)
@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh(dtype, uplo):
    a = make((2, 4, 4), dtype)  # not symmetric: only the UPLO triangle may be read
    run(lambda L, a: tuple(L.linalg.eigh(a, UPLO=uplo)), a, dtype=dtype, signs=(1,))
    assert type(cb.linalg.eigh(to_cb(a))).__name__ == "linalg_eigh"
    run(lambda L, a: L.linalg.eigvalsh(a, UPLO=uplo), a, dtype=dtype)


@pytest.mark.parametrize("dtype", F)
@pytest.mark.parametrize("upper", [False, True])
def test_cholesky(dtype, upper):
    a = spd((2, 4, 4), dtype)
    a = a + torch.triu(make((4, 4), dtype), 1) * 0.1 if upper else a  # torch reads the named triangle only
    run(lambda L, a: L.linalg.cholesky(a, upper=upper), a, dtype=dtype)


@pytest.mark.parametrize("dtype", F)
def test_inv_det_slogdet(dtype):
    for shape in [(4, 4), (2, 3, 3, 3)]:
        a = well(shape, dtype)
        run(lambda L, a: L.linalg.inv(a), a, dtype=dtype)
        run(lambda L, a: (L.linalg.det(a), L.det(a), a.det()), a, dtype=dtype)
        run(lambda L, a: tuple(L.linalg.slogdet(-a)), a, dtype=dtype)
        run(lambda L, a: (L.inverse(a), a.inverse()), a, dtype=dtype)
    run(lambda L, a: (L.linalg.inv(a), L.linalg.det(a)), torch.zeros(0, 0, dtype=getattr(torch, dtype)), dtype=dtype)
    run(lambda L, a: L.linalg.det(a), torch.zeros(3, 3, dtype=getattr(torch, dtype)), dtype=dtype)


@pytest.mark.parametrize("dtype", F)
@pytest.mark.parametrize("bshape", [(4, 2), (4,), (3, 4, 2), (2, 1, 4, 1)])
@pytest.mark.parametrize("left", [True, False])
def test_solve(dtype, bshape, left):
    if not left and len(bshape) == 1:
        bshape = (4, 2)  # torch has no vector B for XA = B ("solve vector XA" below)
    a = well((3, 4, 4), dtype)
    b = make(bshape if left else bshape[:-2] + bshape[-2:][::-1], dtype, seed=1)
    run(lambda L, a, b: L.linalg.solve(a, b, left=left), a, b, dtype=dtype)


def test_solve_batched_vector_rhs():
    run(lambda L, a, b: L.linalg.solve(a, b), well((3, 4, 4), "float32"), make((3, 4), seed=1))


@pytest.mark.parametrize("upper", [True, False])
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("unit", [True, False])
def test_solve_triangular(upper, left, unit):
    a, b = well((2, 4, 4), "float64"), make((2, 4, 3) if left else (2, 3, 4), "float64", seed=1)
    run(lambda L, a, b: L.linalg.solve_triangular(a, b, upper=upper, left=left, unitriangular=unit), a, b,
        dtype="float64")


@pytest.mark.parametrize("dtype", F)
@pytest.mark.parametrize("shape", SHAPES + [(0, 3)])
def test_pinv(dtype, shape):
    run(lambda L, a: L.linalg.pinv(a), make(shape, dtype), dtype=dtype)


def test_pinv_tolerances_and_hermitian():
    a = make((5, 4), "float64")
    a[:, 3] = a[:, 2]  # rank 3
    run(lambda L, a: L.linalg.pinv(a), a, dtype="float64")
    run(lambda L, a: L.linalg.pinv(a, atol=2.0), a, dtype="float64")
    run(lambda L, a: L.linalg.pinv(a, rtol=0.3), a, dtype="float64")
    run(lambda L, a: (L.pinverse(a), a.pinverse()), a, dtype="float64")
    run(lambda L, a: L.linalg.pinv(a, hermitian=True), spd((4, 4), "float64") - 6 * torch.eye(4, dtype=torch.float64),
        dtype="float64")
    run(lambda L, a: L.linalg.matrix_rank(a), a, dtype="float64")


@pytest.mark.parametrize("driver", [None, "gels", "gelsy", "gelsd", "gelss"])
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4), (2, 6, 3)])
def test_lstsq(driver, shape):
    if driver == "gels" and shape[-2] < shape[-1]:
        pytest.skip("gels needs full column rank")  # it does not check: garbage on both sides
    a, b = make(shape, "float64"), make(shape[:-1] + (2,), "float64", seed=1)
    ref = torch.linalg.lstsq(a, b, driver=driver)
    run(lambda L, a, b: tuple(L.linalg.lstsq(a, b, driver=driver)), a, b, dtype="float64")
    fields = cb.linalg.lstsq(to_cb(a), to_cb(b))._fields
    assert fields == ("solution", "residuals", "rank", "singular_values") and all(hasattr(ref, f) for f in fields)
    run(lambda L, a, b: L.linalg.lstsq(a, b[..., 0], driver=driver).solution, a, b, dtype="float64")


def test_lstsq_rank_deficient_gives_the_minimum_norm_solution():
    a, b = make((6, 4), "float64"), make((6, 2), "float64", seed=1)
    a[:, 3] = a[:, 1]
    run(lambda L, a, b: tuple(L.linalg.lstsq(a, b, driver="gelsd")), a, b, dtype="float64")
    run(lambda L, a, b: L.linalg.lstsq(a, b).solution, a, b, dtype="float64")


NORM_CASES = {
    "vector default": lambda L, a: L.linalg.vector_norm(a),
    "vector ords": lambda L, a: [L.linalg.vector_norm(a, o, dim=-1) for o in (1, 2, 3, 0.5, 0, math.inf, -math.inf)],
    "vector dims keepdim": lambda L, a: [L.linalg.vector_norm(a, 2, dim=(0, 2), keepdim=True),
                                         L.linalg.vector_norm(a, keepdim=True)],
    "vector dtype": lambda L, a: L.linalg.vector_norm(a, dtype=L.float64),
    "vector half": lambda L, a: L.linalg.vector_norm(a.half(), dim=1),
    "vector of a scalar": lambda L, a: L.linalg.vector_norm(a[0, 0, 0], keepdim=True),
    "matrix ords": lambda L, a: [L.linalg.matrix_norm(a, o) for o in ("fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf)],
    "matrix dims keepdim": lambda L, a: [L.linalg.matrix_norm(a, o, dim=(2, 0), keepdim=True)
                                         for o in ("fro", 1, 2, -math.inf)],
    "norm default": lambda L, a: L.linalg.norm(a),
    "norm dim": lambda L, a: [L.linalg.norm(a, dim=1), L.linalg.norm(a, 1, dim=-1), L.linalg.norm(a, dim=(0, 1))],
    "norm 2d ord": lambda L, a: [L.linalg.norm(a[0], o) for o in ("fro", "nuc", 1, 2, math.inf)],
    "norm 1d ord": lambda L, a: [L.linalg.norm(a[0, 0], o) for o in (1, 3, math.inf)],
    "empty": lambda L, a: [L.linalg.vector_norm(a[:0]), L.linalg.matrix_norm(a[:, :0])],
}


@pytest.mark.parametrize("name", sorted(NORM_CASES))
@pytest.mark.parametrize("dtype", F)
def test_norms(name, dtype):
    run(NORM_CASES[name], make((2, 3, 4), dtype), dtype=dtype)


def test_legacy_svd():
    a = make((2, 5, 3))
    for some in (True, False):
        ref, ours = torch.svd(a, some=some), cb.svd(to_cb(a), some=some)
        assert type(ours).__name__ == "svd" and ours._fields == ("U", "S", "V")
        assert [tuple(t.shape) for t in ours] == [tuple(t.shape) for t in ref]
        # V, not V^H: U diag(S) V^T gives A back
        k = 3
        rebuilt = to_np(ours.U)[..., :, :k] * to_np(ours.S)[..., None, :] @ np.swapaxes(to_np(ours.V), -1, -2)
        np.testing.assert_allclose(rebuilt, a.numpy(), atol=1e-5)
    run(lambda L, a: tuple(L.svd(a, compute_uv=False)), a)
    run(lambda L, a: a.svd().S, a)


def test_svd_lowrank_and_pca_lowrank_recover_a_low_rank_matrix():
    """Randomized: the factors come from candle_bind's generator, so they are compared through what
    they approximate (torch's own tests do the same)."""
    a = make((12, 3), "float64") @ make((3, 9), "float64", seed=1)  # rank 3
    for m in (a, a.mT):
        u, s, v = cb.svd_lowrank(to_cb(m), q=5)
        ru, rs, rv = torch.svd_lowrank(m, q=5)
        assert [tuple(t.shape) for t in (u, s, v)] == [tuple(t.shape) for t in (ru, rs, rv)]
        np.testing.assert_allclose(to_np(s)[:3], rs.numpy()[:3], rtol=1e-8)
        np.testing.assert_allclose(to_np(u * s.unsqueeze(0) @ v.mT), m.numpy(), atol=1e-8)
    u, s, v = cb.pca_lowrank(to_cb(a), q=3)
    ru, rs, rv = torch.pca_lowrank(a, q=3)
    np.testing.assert_allclose(to_np(s), rs.numpy(), rtol=1e-8)
    centered = a - a.mean(0, keepdim=True)
    np.testing.assert_allclose(to_np(u * s.unsqueeze(0) @ v.mT), centered.numpy(), atol=1e-8)
    with pytest.raises(ValueError, match="must be non-negative integer"):
        cb.pca_lowrank(to_cb(a), q=20)


def test_float32_stays_float32_and_the_device_is_kept():
    a = to_cb(well((3, 3), "float32"))
    for out in (cb.linalg.inv(a), cb.linalg.det(a), *cb.linalg.svd(a), *cb.linalg.qr(a), cb.linalg.pinv(a)):
        assert out.dtype == cb.float32 and out.device == a.device
    assert cb.linalg.lstsq(a, a).rank.dtype == cb.int64


# ---- errors: torch's type, torch's message ----

ERRORS = {
    "inv singular": lambda L: L.linalg.inv(L.zeros(3, 3)),
    "inv singular batched": lambda L: L.linalg.inv(L.stack([L.eye(3), L.tensor([[1.0, 2, 3], [2, 4, 6], [1, 0, 1]])])),
    "inv not square": lambda L: L.linalg.inv(L.zeros(3, 4)),
    "inverse singular": lambda L: L.inverse(L.ones(2, 2)),
    "solve singular": lambda L: L.linalg.solve(L.zeros(3, 3), L.ones(3)),
    "solve shapes": lambda L: L.linalg.solve(L.eye(3), L.ones(4)),
    "solve vector XA": lambda L: L.linalg.solve(L.eye(4), L.ones(4), left=False),
    "solve dtypes": lambda L: L.linalg.solve(L.eye(3), L.ones(3, dtype=L.float64)),
    "cholesky not pd": lambda L: L.linalg.cholesky(L.diag(L.tensor([1.0, 2.0, -1.0, 3.0]))),
    "cholesky batched": lambda L: L.linalg.cholesky(L.stack([L.eye(2), -L.eye(2)])),
    "svd of a vector": lambda L: L.linalg.svd(L.ones(3)),
    "svd of ints": lambda L: L.linalg.svd(L.ones(2, 2, dtype=L.int64)),
    "det of ints": lambda L: L.linalg.det(L.ones(2, 3, 3, dtype=L.int32)),
    "det not square": lambda L: L.linalg.det(L.zeros(3, 4)),
    "eigh not square": lambda L: L.linalg.eigh(L.zeros(3, 4)),
    "eigh uplo": lambda L: L.linalg.eigh(L.eye(3), UPLO="X"),
    "qr mode": lambda L: L.linalg.qr(L.zeros(3, 4), mode="x"),
    "torch.qr removed": lambda L: L.qr(L.ones(3, 2)),
    "torch.cholesky removed": lambda L: L.cholesky(L.eye(2), upper=True),
    "Tensor.qr removed": lambda L: L.ones(3, 2).qr(some=False),
    "solve of a list": lambda L: L.linalg.solve(L.eye(2), [1.0, 2.0]),
    "lstsq of a list": lambda L: L.linalg.lstsq(L.eye(2), [1.0, 2.0]),
    "svd of a list": lambda L: L.linalg.svd([[1.0, 2.0]]),
    "vector_norm of a list": lambda L: L.linalg.vector_norm([1.0]),
    "lstsq rows": lambda L: L.linalg.lstsq(L.zeros(3, 4), L.zeros(4, 2)),
    "vector_norm of ints": lambda L: L.linalg.vector_norm(L.ones(3, dtype=L.int64)),
    "vector_norm inf of empty": lambda L: L.linalg.vector_norm(L.ones(0), math.inf),
    "matrix_norm of a vector": lambda L: L.linalg.matrix_norm(L.ones(3)),
    "matrix_norm order": lambda L: L.linalg.matrix_norm(L.ones(3, 3), ord=3),
    "norm 3d with ord": lambda L: L.linalg.norm(L.ones(3, 3, 3), ord=2),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_match_torch(name):
    with pytest.raises(Exception) as ref:
        ERRORS[name](torch)
    with pytest.raises(Exception) as ours:
        ERRORS[name](cb)
    want = type(ref.value)
    if want.__name__ == "_LinAlgError":
        assert isinstance(ours.value, cb.linalg.LinAlgError) and isinstance(ours.value, RuntimeError)
    else:
        assert type(ours.value) is want, (ours.value, ref.value)
    assert str(ours.value) == str(ref.value)


def test_half_precision_decompositions_are_refused_like_torch():
    with pytest.raises(NotImplementedError, match="not implemented for 'Half'"):
        torch.linalg.svd(torch.ones(2, 2, dtype=torch.half))
    with pytest.raises(NotImplementedError, match="not implemented for 'Half'"):
        cb.linalg.svd(cb.ones(2, 2, dtype=cb.float16))


def test_out_arguments_are_written_and_returned():
    a = to_cb(well((3, 3), "float64"))
    out = cb.empty(3, 3, dtype=cb.float64)
    assert cb.linalg.inv(a, out=out) is out
    np.testing.assert_allclose(to_np(out), np.linalg.inv(to_np(a)))
    u, s, vh = (cb.empty(3, 3, dtype=cb.float64), cb.empty(3, dtype=cb.float64), cb.empty(3, 3, dtype=cb.float64))
    result = cb.linalg.svd(a, out=(u, s, vh))
    assert type(result).__name__ == "linalg_svd" and result.S is s
    np.testing.assert_allclose(to_np(s), np.linalg.svd(to_np(a), compute_uv=False))


# ---- the factorizations with pivots / info codes, Householder products, matrix functions ----


@pytest.mark.parametrize("dtype", F)
@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5), (2, 3, 4, 4), (0, 3), (2, 0, 0)])
def test_lu_family(dtype, shape):
    a = make(shape, dtype)
    run(lambda L, a: tuple(L.linalg.lu_factor(a)), a, dtype=dtype)
    run(lambda L, a: tuple(L.linalg.lu_factor_ex(a)), a, dtype=dtype)
    run(lambda L, a: tuple(L.linalg.lu(a)), a, dtype=dtype)
    run(lambda L, a: tuple(L.lu_unpack(*L.linalg.lu_factor(a))), a, dtype=dtype)
    run(lambda L, a: tuple(L.lu(a, get_infos=True)), a, dtype=dtype)
    run(lambda L, a: tuple(a.lu()), a, dtype=dtype)


def test_lu_factor_of_a_large_matrix_uses_the_blocked_path():
    a = make((2, 100, 90), "float64")  # past the 32-column panel: recursive halves
    run(lambda L, a: tuple(L.linalg.lu_factor(a)), a, dtype="float64")


@pytest.mark.parametrize("dtype", F)
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("adjoint", [True, False])
def test_lu_solve(dtype, left, adjoint):
    a, b = well((2, 4, 4), dtype), make((2, 4, 3) if left else (2, 3, 4), dtype, seed=1)
    run(lambda L, a, b: L.linalg.lu_solve(*L.linalg.lu_factor(a), b, left=left, adjoint=adjoint), a, b, dtype=dtype)
    if left and not adjoint:
        run(lambda L, a, b: (L.lu_solve(b, *L.linalg.lu_factor(a)), b.lu_solve(*L.linalg.lu_factor(a))), a, b,
            dtype=dtype)


@pytest.mark.parametrize("dtype", F)
def test_singular_lu(dtype):
    a = torch.tensor([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]], dtype=getattr(torch, dtype))
    run(lambda L, a: tuple(L.linalg.lu_factor_ex(a)), a, dtype=dtype)
    with pytest.raises(RuntimeError, match=r"U\[3,3\] is zero"):
        cb.linalg.lu_factor(to_cb(a))
    with pytest.raises(RuntimeError, match="without pivoting"):
        cb.linalg.lu_factor(to_cb(a), pivot=False)


@pytest.mark.parametrize("dtype", F)
@pytest.mark.parametrize("n", [1, 4, 7])
def test_ldl(dtype, n):
    a = make((2, n, n), dtype)
    a = a + a.mT  # symmetric indefinite: 1x1 and 2x2 pivots
    b = make((2, n, 2), dtype, seed=1)
    run(lambda L, a: tuple(L.linalg.ldl_factor(a)), a, dtype=dtype)
    run(lambda L, a: tuple(L.linalg.ldl_factor_ex(a)), a, dtype=dtype)
    run(lambda L, a, b: L.linalg.ldl_solve(*L.linalg.ldl_factor(a), b), a, b, dtype=dtype)


@pytest.mark.parametrize("dtype", F)
def test_cholesky_ex_solve_inverse(dtype):
    a, b = spd((2, 4, 4), dtype), make((2, 4, 3), dtype, seed=1)
    run(lambda L, a: tuple(L.linalg.cholesky_ex(a)), a, dtype=dtype)
    run(lambda L, a: tuple(L.linalg.cholesky_ex(a, upper=True)), a, dtype=dtype)
    run(lambda L, a: tuple(L.linalg.cholesky_ex(-a)), a, dtype=dtype)  # info 1, torch's partial factor
    for upper in (False, True):
        run(lambda L, a, b: L.cholesky_solve(b, L.linalg.cholesky(a, upper=upper), upper=upper), a, b, dtype=dtype)
        run(lambda L, a: L.cholesky_inverse(L.linalg.cholesky(a, upper=upper), upper=upper), a, dtype=dtype)
    run(lambda L, a, b: b.cholesky_solve(L.linalg.cholesky(a)), a, b, dtype=dtype)


@pytest.mark.parametrize("dtype", F)
@pytest.mark.parametrize("shape", [(5, 3), (4, 4), (2, 6, 2)])
def test_householder(dtype, shape):
    a = make(shape, dtype)
    c = make(shape[:-1] + (3,), dtype, seed=1)
    run(lambda L, a: tuple(L.geqrf(a)), a, dtype=dtype)
    run(lambda L, a: L.linalg.householder_product(*L.geqrf(a)), a, dtype=dtype)
    run(lambda L, a: L.orgqr(*L.geqrf(a)), a, dtype=dtype)
    for transpose in (False, True):
        run(lambda L, a, c: L.ormqr(*L.geqrf(a), c, transpose=transpose), a, c, dtype=dtype)
        run(lambda L, a, c: L.ormqr(*L.geqrf(a), c.mT, left=False, transpose=transpose), a, c, dtype=dtype)


@pytest.mark.parametrize("dtype", F)
def test_ex_variants_and_triangular_solve(dtype):
    a, b = well((2, 4, 4), dtype), make((2, 4, 3), dtype, seed=1)
    run(lambda L, a: tuple(L.linalg.inv_ex(a)), a, dtype=dtype)
    run(lambda L, a, b: tuple(L.linalg.solve_ex(a, b)), a, b, dtype=dtype)
    run(lambda L, a, b: tuple(L.linalg.solve_ex(a, b[..., 0])), a, b, dtype=dtype)
    for upper, transpose, unit in ((True, False, False), (False, True, False), (True, True, True)):
        run(lambda L, a, b: tuple(L.triangular_solve(b, a, upper, transpose, unit)), a, b, dtype=dtype)
    run(lambda L, a, b: tuple(b.triangular_solve(a)), a, b, dtype=dtype)


@pytest.mark.parametrize("dtype", F)
def test_eig_eigvals(dtype):
    a = make((2, 4, 4), dtype)
    w, v = cb.linalg.eig(to_cb(a))
    rw, rv = torch.linalg.eig(a)
    assert str(w.dtype) == str(rw.dtype) and str(v.dtype) == str(rv.dtype)
    assert tuple(w.shape) == tuple(rw.shape) and tuple(v.shape) == tuple(rv.shape)
    wn, vn = w.numpy(), v.numpy()
    np.testing.assert_allclose(a.numpy().astype(vn.dtype) @ vn, vn * wn[..., None, :], atol=1e-4)
    # the same eigenvalues (the order of LAPACK's geev on both sides)
    np.testing.assert_allclose(wn, rw.numpy(), atol=1e-4)
    np.testing.assert_allclose(cb.linalg.eigvals(to_cb(a)).numpy(), rw.numpy(), atol=1e-4)


@pytest.mark.parametrize("dtype", F)
def test_matrix_functions(dtype):
    a = make((2, 4, 4), dtype)
    run(lambda L, a: (L.linalg.matrix_exp(a), L.matrix_exp(a * 3), a.matrix_exp()), a * 0.5, dtype=dtype)
    run(lambda L, a: L.linalg.matrix_exp(a), torch.zeros(3, 0, 0, dtype=getattr(torch, dtype)), dtype=dtype)
    run(lambda L, a: L.linalg.matrix_sqrth(a), spd((2, 4, 4), dtype), dtype=dtype)
    run(lambda L, a: tuple(L.linalg.polar(a)), make((2, 5, 3), dtype), dtype=dtype)
    run(lambda L, a: [L.linalg.cond(a, p) for p in (None, 2, -2, "fro", "nuc", 1, -1, math.inf, -math.inf)],
        well((2, 4, 4), dtype), dtype=dtype)
    run(lambda L, a: (L.linalg.cond(a), L.linalg.cond(a, 1)), torch.zeros(2, 2, dtype=getattr(torch, dtype)),
        dtype=dtype)


@pytest.mark.parametrize("dtype", F)
def test_tensor_helpers(dtype):
    a = make((2, 3, 6), dtype) + torch.eye(6, dtype=getattr(torch, dtype))[:2 * 3].reshape(2, 3, 6) * 4
    run(lambda L, a: L.linalg.tensorinv(a, ind=2), a, dtype=dtype)
    b = make((2, 3), dtype, seed=1)
    run(lambda L, a, b: L.linalg.tensorsolve(a.reshape(2, 3, 2, 3), b), a, b, dtype=dtype)
    run(lambda L, a, b: L.linalg.tensorsolve(a.reshape(2, 3, 2, 3).permute(2, 3, 0, 1), b, dims=(0, 1)), a, b,
        dtype=dtype)
    x = make((2, 4), dtype)
    run(lambda L, x: (L.linalg.vander(x), L.linalg.vander(x, N=6), L.linalg.vander(x[0, 0], N=3)), x, dtype=dtype)
    run(lambda L, x: (L.linalg.diagonal(x), L.linalg.diagonal(x, offset=1), L.linalg.matmul(x, x.mT)), x,
        dtype=dtype)


def test_norm_nuclear_and_empty_matrix_norms():
    a = make((2, 3, 4), "float64")
    run(lambda L, a: (L.norm(a[0], p="nuc"), a.norm(p="nuc", dim=(1, 2)), a.norm(p="nuc", dim=(0, 2), keepdim=True)), a,
        dtype="float64")
    for shape in [(0, 0), (5, 0), (0, 5)]:
        run(lambda L, a: [L.linalg.matrix_norm(a, o) for o in ("fro", "nuc", 1, math.inf, 2)],
            torch.zeros(shape, dtype=torch.float64), dtype="float64")


NEW_ERRORS = {
    "vander N": lambda L: L.linalg.vander(L.ones(3), N=1),
    "polar wide": lambda L: L.linalg.polar(L.ones(2, 3)),
    "cond ord": lambda L: L.linalg.cond(L.ones(2, 3), 1),
    "empty -inf norm": lambda L: L.linalg.vector_norm(L.ones(0), -1),
    "empty -2 matrix norm": lambda L: L.linalg.matrix_norm(L.ones(0, 0), -2),
    "empty -1 matrix norm": lambda L: L.linalg.matrix_norm(L.ones(5, 0), -1),
    "lu without pivots": lambda L: L.linalg.lu_factor(L.eye(3), pivot=False),
    "tensorinv shape": lambda L: L.linalg.tensorinv(L.ones(2, 3, 4), ind=1),
}


@pytest.mark.parametrize("name", sorted(NEW_ERRORS))
def test_new_errors_match_torch(name):
    with pytest.raises(Exception) as ref:
        NEW_ERRORS[name](torch)
    with pytest.raises(Exception) as ours:
        NEW_ERRORS[name](cb)
    assert type(ours.value) is type(ref.value) and str(ours.value) == str(ref.value), (ours.value, ref.value)


def test_float32_lapack_runs_in_single_precision():
    """float32 goes through LAPACK's single-precision routines (as torch), not numpy.linalg's double."""
    a = to_cb(well((8, 8), "float32"))
    for out in (cb.linalg.inv(a), cb.linalg.solve(a, a), *cb.linalg.eigh(a), *cb.linalg.svd(a), cb.linalg.det(a)):
        assert out.dtype == cb.float32
