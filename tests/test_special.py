"""torch.special and the top-level special functions (candle_bind/special.py, _special_ops.py, Rust
src/tensor/special/): the same call on torch and candle_bind, compared on shape, dtype and values (float32
rtol 1e-5, float64 1e-8: torch's igamma asymptotic series is off by ~1e-9, half types their own eps), with edge values (0, ±inf, NaN, negatives, poles),
0-d, empty and non-contiguous inputs, broadcasting and torch's errors."""

import math

import numpy as np
import pytest
import torch

import candle_bind as cb
from conftest import dtype_name, to_cb, to_np

TOL = {"float32": (1e-5, 1e-5), "float64": (1e-8, 1e-12), "float16": (2e-3, 1e-3), "bfloat16": (1.6e-2, 1e-2)}

EDGES = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.5, 3.7, 8.0, 8.5, 25.0, -7.3, 60.0, 1e-6, -1e-6, 1e3,
         math.inf, -math.inf, math.nan]

UNARY = ["digamma", "erfc", "erfcx", "ndtr", "log_ndtr", "ndtri", "i0", "i0e", "i1", "i1e", "entr", "sinc",
         "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_i0", "modified_bessel_i1",
         "modified_bessel_k0", "modified_bessel_k1", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
         "spherical_bessel_j0", "airy_ai", "gammaln", "psi", "expit", "exp2", "expm1", "log1p", "erf", "erfinv"]
POLYS = ["chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w",
         "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
         "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
         "laguerre_polynomial_l", "legendre_polynomial_p"]


def same(ours, ref):
    assert isinstance(ours, cb.Tensor), type(ours)
    assert tuple(ours.shape) == tuple(ref.shape), (ours.shape, ref.shape)
    assert dtype_name(ours.dtype) == dtype_name(ref.dtype), (ours.dtype, ref.dtype)
    a, b = to_np(ours).astype(np.float64), to_np(ref).astype(np.float64)
    rtol, atol = TOL[dtype_name(ref.dtype)]
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, equal_nan=True)


def run(fn, *inputs):
    """fn(lib, *inputs) on torch and on candle_bind: the same values, or the same error type."""
    conv = [to_cb(x) if isinstance(x, torch.Tensor) else x for x in inputs]
    try:
        ref = fn(torch, *inputs)
    except Exception as e:  # noqa: BLE001 - the same exception type is wanted from ours
        with pytest.raises(type(e)):
            fn(cb, *conv)
        return
    same(fn(cb, *conv), ref)


def edges(dtype):
    gen = torch.Generator().manual_seed(0)
    rand = (torch.rand(40, generator=gen, dtype=torch.float64) * 24 - 12)
    return torch.cat([torch.tensor(EDGES, dtype=torch.float64), rand]).to(dtype)


@pytest.mark.parametrize("name", UNARY)
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int64", "bool"])
def test_unary(name, dtype):
    if dtype in ("int64", "bool"):
        x = torch.tensor([0, 1, 2, 5, -3, 12])
        x = x.bool() if dtype == "bool" else x
    else:
        x = edges(getattr(torch, dtype))
    if name in ("ndtri", "erfinv") and dtype not in ("int64", "bool"):
        x = torch.cat([x, torch.linspace(0, 1, 23, dtype=x.dtype), -torch.linspace(0, 1, 9, dtype=x.dtype)])
    run(lambda lib, t: getattr(lib.special, name)(t), x)


@pytest.mark.parametrize("name", ["digamma", "lgamma", "erfc", "sinc"])
def test_top_level_and_methods(name):
    x = edges(torch.float32).reshape(6, 10).t()  # non-contiguous
    run(lambda lib, t: getattr(lib, name)(t), x)
    run(lambda lib, t: getattr(t, name)(), x)
    run(lambda lib, t: getattr(t.clone(), name + "_")(), x)
    run(lambda lib, t: getattr(lib, name)(t), torch.tensor(2.5))  # 0-d
    run(lambda lib, t: getattr(lib, name)(t), torch.zeros(0, 3))  # empty
    run(lambda lib, t: getattr(t, name + "_")(), torch.arange(4))  # int in-place: float result can't be cast


@pytest.mark.parametrize("n", [0, 1, 2, 3, 5])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_polygamma(n, dtype):
    x = edges(torch.float64).clamp(-30, 30).to(getattr(torch, dtype))
    run(lambda lib, t: lib.polygamma(n, t), x)
    run(lambda lib, t: lib.special.polygamma(n, t), x)
    run(lambda lib, t: t.polygamma(n), x)


def test_polygamma_errors():
    run(lambda lib, t: lib.polygamma(-1, t), torch.ones(3))


@pytest.mark.parametrize("p", [1, 2, 3, 5])
def test_mvlgamma(p):
    x = torch.linspace(3, 9, 7, dtype=torch.float64)
    run(lambda lib, t: lib.mvlgamma(t, p), x)
    run(lambda lib, t: lib.special.multigammaln(t.float(), p), x)
    run(lambda lib, t: t.mvlgamma(p), x)
    run(lambda lib, t: lib.mvlgamma(t, p), torch.tensor([0.1, 5.0]))  # below (p-1)/2
    run(lambda lib, t: lib.mvlgamma(t, 0), x)


@pytest.mark.parametrize("name", ["igamma", "igammac"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_igamma(name, dtype):
    dt = getattr(torch, dtype)
    gen = torch.Generator().manual_seed(1)
    a = torch.cat([torch.tensor([0.0, 0.5, 1.0, 3.0, math.inf, -1.0, 25.0, 150.0, 300.0, math.nan]),
                   torch.rand(20, generator=gen) * 40]).to(dt)
    x = torch.cat([torch.tensor([1.0, 0.0, 2.5, 0.3, 1.0, 1.0, 24.0, 160.0, 290.0, 1.0]),
                   torch.rand(20, generator=gen) * 40]).to(dt)
    run(lambda lib, u, v: getattr(lib, name)(u, v), a, x)
    run(lambda lib, u, v: getattr(lib.special, "gammainc" if name == "igamma" else "gammaincc")(u, v), a, x)
    run(lambda lib, u, v: getattr(u, name)(v), a, x)
    run(lambda lib, u, v: getattr(lib, name)(u, v), a[:5].reshape(5, 1), x[:4])  # broadcast


def test_igamma_int_raises():
    run(lambda lib, u, v: lib.igamma(u, v), torch.tensor([1, 2]), torch.tensor([3, 4]))


@pytest.mark.parametrize("name", POLYS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_polynomials(name, dtype):
    dt = getattr(torch, dtype)
    x = torch.tensor([-1.0, -0.7, 0.0, 0.25, 0.5, 1.0, 1.5, -2.0, 3.0, math.nan], dtype=dt).reshape(10, 1)
    n = torch.tensor([-1, 0, 1, 2, 3, 5, 7, 9, 12], dtype=torch.int64)
    run(lambda lib, u, v: getattr(lib.special, name)(u, v), x, n)  # broadcast (10, 1) x (9,)
    run(lambda lib, u: getattr(lib.special, name)(u, 4), x)  # scalar degree
    run(lambda lib, v: getattr(lib.special, name)(0.3, v), n.to(dt))  # scalar x
    run(lambda lib, u, v: getattr(lib.special, name)(u, v), x, torch.tensor([math.nan, math.inf, -math.inf], dtype=dt))


def test_polynomials_half_raises():
    run(lambda lib, u: lib.special.chebyshev_polynomial_t(u, 2), torch.ones(3, dtype=torch.float16))


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_zeta_xlog1py(dtype):
    dt = getattr(torch, dtype)
    x = torch.tensor([1.0, 1.5, 2.0, 3.0, 0.5, 4.0, 10.0, math.inf]).to(dt) if dtype != "int64" else \
        torch.tensor([1, 2, 3, 4, 5, 6, 7, 8])
    q = torch.tensor([1.0, 2.0, 0.5, -1.0, 3.0, -2.5, 7.0, 2.0]).to(dt) if dtype != "int64" else \
        torch.tensor([1, 2, 0, -1, 3, -2, 7, 2])
    run(lambda lib, u, v: lib.special.zeta(u, v), x, q)
    run(lambda lib, u, v: lib.special.zeta(u, v), x.reshape(8, 1), q)
    run(lambda lib, u: lib.special.zeta(u, 2.0), x)
    run(lambda lib, v: lib.special.zeta(2.0, v), q)
    y = torch.tensor([0.0, 1.0, -0.5, math.nan, 3.0, -1.0, 2.0, 0.0]).to(dt) if dtype != "int64" else q
    run(lambda lib, u, v: lib.special.xlog1py(u, v), x * 0 if dtype != "int64" else x, y)
    run(lambda lib, u, v: lib.special.xlog1py(u, v), x, y)


def test_aliases():
    x = torch.randn(4, 5, generator=torch.Generator().manual_seed(2))
    for call in (lambda lib, t: lib.special.softmax(t, 1), lambda lib, t: lib.special.log_softmax(t, 0),
                 lambda lib, t: lib.special.logsumexp(t, 1), lambda lib, t: lib.special.logit(t.sigmoid()),
                 lambda lib, t: lib.special.round(t), lambda lib, t: lib.special.xlogy(t.abs(), t.abs())):
        run(call, x)


def test_large_parallel():
    """Above the parallel grain, chunked over the pool: the same values."""
    x = torch.linspace(-20, 20, 70_001, dtype=torch.float64)
    run(lambda lib, t: lib.special.bessel_j0(t), x)
    run(lambda lib, t: lib.special.digamma(t.float()), x)
    run(lambda lib, u, v: lib.special.zeta(u, v), x.abs() + 1, x.abs())


def test_missing_names_itself():
    with pytest.raises(AttributeError, match="not supported by candle_bind yet|has no attribute"):
        cb.special.no_such_function  # noqa: B018
