import math
import operator

import numpy as np
import pytest
import torch

import candle_bind as cb
from conftest import assert_same, make, to_cb, DTYPES

ARITH = [operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv, operator.mod]
CMP = [operator.eq, operator.ne, operator.lt, operator.le, operator.gt, operator.ge]
NUMERIC = ["float32", "float64", "float16", "bfloat16", "int64", "int32", "uint8"]


def nonzero(t):
    return torch.where(t == 0, torch.ones_like(t), t)


@pytest.mark.parametrize("op", ARITH + CMP, ids=lambda o: o.__name__)
@pytest.mark.parametrize("dtype", NUMERIC)
def test_binary_same_dtype(op, dtype):
    a, b = make((3, 4), dtype, seed=1), nonzero(make((3, 4), dtype, seed=2))
    assert_same(op(to_cb(a), to_cb(b)), op(a, b))


@pytest.mark.parametrize("op", ARITH + CMP, ids=lambda o: o.__name__)
@pytest.mark.parametrize("shapes", [((2, 3, 4), (4,)), ((2, 1, 4), (3, 1)), ((1,), (5,)), ((), (2, 3)), ((4, 1), ())])
def test_binary_broadcast(op, shapes):
    a, b = make(shapes[0], seed=3), nonzero(make(shapes[1], seed=4))
    assert_same(op(to_cb(a), to_cb(b)), op(a, b))


@pytest.mark.parametrize("op", ARITH + CMP + [operator.pow], ids=lambda o: o.__name__)
@pytest.mark.parametrize("dtype", ["float32", "int64", "int32", "uint8", "float16"])
@pytest.mark.parametrize("scalar", [2, 2.5, -3, True])
def test_binary_scalars_both_sides(op, dtype, scalar):
    a = nonzero(make((2, 5), dtype, seed=5))
    if op is operator.pow and dtype != "float32":
        a = a.abs() if dtype != "uint8" else a
    if op is operator.pow and isinstance(scalar, int) and scalar < 0 and not a.dtype.is_floating_point:
        with pytest.raises(RuntimeError):
            op(to_cb(a), scalar)
        return
    if op in (operator.floordiv, operator.mod, operator.truediv) and scalar is True:
        pass
    if op is operator.sub and scalar is True:
        with pytest.raises(RuntimeError, match="bool"):
            to_cb(a) - scalar
        return
    assert_same(op(to_cb(a), scalar), op(a, scalar), rtol=1e-3 if op is operator.pow else None)
    if op is operator.pow:
        return
    assert_same(op(scalar, to_cb(a)), op(scalar, a))


@pytest.mark.parametrize("pair", [("int64", "float32"), ("int32", "int64"), ("uint8", "int32"), ("float16", "bfloat16"),
                                  ("float16", "float32"), ("bool", "int32"), ("bool", "float64"), ("uint8", "bool")])
def test_promotion_tensor_tensor(pair):
    a, b = make((3,), pair[0], seed=6), make((3,), pair[1], seed=7)
    assert_same(to_cb(a) + to_cb(b), a + b)
    assert_same(to_cb(a) * to_cb(b), a * b)
    assert cb.result_type(to_cb(a), to_cb(b)) == getattr(cb, str(torch.result_type(a, b)).split(".")[1])


def test_promotion_zero_dim_and_int_division():
    a = torch.tensor([1, 2, 3])
    assert_same(to_cb(a) / 2, a / 2)  # int / int -> float
    assert_same(to_cb(a) + torch_like(torch.tensor(2.5, dtype=torch.float64)), a + torch.tensor(2.5, dtype=torch.float64))
    f = torch.tensor([1.0, 2.0])
    assert_same(to_cb(f) + torch_like(torch.tensor(2, dtype=torch.float64)), f + torch.tensor(2, dtype=torch.float64))
    u = torch.tensor([250, 3], dtype=torch.uint8)
    assert_same(to_cb(u) + 10, u + 10)  # wraps like torch
    b = torch.tensor([True, False])
    assert_same(to_cb(b) + to_cb(b), b + b)
    assert_same(to_cb(b) * 3, b * 3)
    assert_same(to_cb(b) + 1.5, b + 1.5)


def torch_like(t):
    return to_cb(t)


def test_integer_division_by_zero_raises():
    a = cb.tensor([1, 2])
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        a // cb.tensor([1, 0])
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        a % 0
    assert_same(cb.tensor([1.0, -1.0, 0.0]) / 0, torch.tensor([1.0, -1.0, 0.0]) / 0)


@pytest.mark.parametrize("op", [operator.and_, operator.or_, operator.xor], ids=lambda o: o.__name__)
@pytest.mark.parametrize("dtype", ["bool", "int64", "int32", "uint8"])
def test_bitwise(op, dtype):
    a, b = make((4, 3), dtype, seed=8), make((4, 3), dtype, seed=9)
    assert_same(op(to_cb(a), to_cb(b)), op(a, b))
    assert_same(~to_cb(a), ~a)


def test_bitwise_float_raises():
    with pytest.raises((TypeError, RuntimeError)):
        cb.tensor([1.0]) & cb.tensor([1.0])
    with pytest.raises(TypeError):
        ~cb.tensor([1.0])


def test_unary_minus_and_abs():
    for dtype in NUMERIC:
        a = make((2, 3), dtype, seed=10)
        if dtype != "uint8":
            assert_same(-to_cb(a), -a)
        assert_same(abs(to_cb(a)), abs(a))
    with pytest.raises(RuntimeError, match="bool"):
        -cb.tensor([True])


FLOAT_FNS = ["exp", "log", "log1p", "expm1", "sqrt", "rsqrt", "sin", "cos", "tan", "tanh", "sigmoid", "erf",
             "reciprocal", "log2", "log10", "asin", "acos", "atan", "sinh", "cosh"]


@pytest.mark.parametrize("fn", FLOAT_FNS)
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int64", "bool"])
def test_unary_float_fns(fn, dtype):
    if fn in ("asin", "acos"):
        a = make((3, 7), dtype, low=-0.99, high=0.99, seed=11)
    elif fn in ("log", "log1p", "sqrt", "rsqrt", "log2", "log10"):
        a = make((3, 7), dtype, low=0.01, high=5.0, seed=11)
        if dtype == "int64":
            a = a.abs() + 1
    else:
        a = make((3, 7), dtype, seed=11)
    assert_same(getattr(to_cb(a), fn)(), getattr(a, fn)())
    assert_same(getattr(cb, fn)(to_cb(a)), getattr(torch, fn)(a))


@pytest.mark.parametrize("fn", ["exp", "tanh", "sigmoid", "erf"])
def test_vectorised_math_accuracy_large(fn):
    a = torch.linspace(-20, 20, 100_003)
    assert_same(getattr(to_cb(a), fn)(), getattr(a, fn)(), atol=2e-6, rtol=2e-6)
    special = torch.tensor([float("nan"), float("inf"), -float("inf"), 0.0, -0.0, 88.0, 89.0, -100.0, -104.0])
    assert_same(getattr(to_cb(special), fn)(), getattr(special, fn)(), atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("fn", ["floor", "ceil", "round", "trunc", "sign", "abs", "relu", "square"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32"])
def test_keep_dtype_unary(fn, dtype):
    a = make((4, 5), dtype, seed=12)
    if dtype.startswith("float"):
        a = torch.cat([a, torch.tensor([[0.5, 1.5, 2.5, -0.5, -2.5]], dtype=a.dtype)])
    assert_same(getattr(to_cb(a), fn)(), getattr(a, fn)())


def test_round_decimals():
    a = make((10,), "float64", seed=13) * 100
    assert_same(to_cb(a).round(decimals=2), a.round(decimals=2))


@pytest.mark.parametrize("dtype", ["float32", "int64", "float16"])
def test_clamp(dtype):
    a = make((5, 4), dtype, seed=14)
    ca = to_cb(a)
    assert_same(ca.clamp(-1, 2), a.clamp(-1, 2))
    assert_same(ca.clamp(min=0), a.clamp(min=0))
    assert_same(ca.clamp(max=1), a.clamp(max=1))
    assert_same(ca.clip(-1, 1), a.clip(-1, 1))
    lo, hi = make((4,), dtype, seed=15), make((5, 1), dtype, seed=16) + 2
    assert_same(ca.clamp(to_cb(lo), to_cb(hi)), a.clamp(lo, hi))
    assert_same(cb.clamp(ca, min=-0.5), torch.clamp(a, min=-0.5))
    # A 0-d tensor beside a number is a Scalar bound (DeBERTa: clamp(pos + span, 0, span * 2 - 1))
    span = torch.tensor(1, dtype=a.dtype)
    assert_same(cb.clamp(ca, 0, to_cb(span)), torch.clamp(a, 0, span))
    assert_same(ca.clamp(to_cb(span) - 2, 1), a.clamp(span - 2, 1))
    with pytest.raises(RuntimeError, match="At least one"):
        ca.clamp()


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_relu_keeps_nan_and_negative_zero(dtype):
    a = torch.tensor([float("nan"), -float("inf"), float("inf"), -0.0, 0.0, -2.0, 3.0] * 3, dtype=getattr(torch, dtype))
    for x in (a, a[::2]):
        got = torch.tensor(to_cb(x).relu().float().tolist())
        want = x.relu().float()
        assert torch.equal(got.isnan(), want.isnan()) and torch.equal(got.nan_to_num(), want.nan_to_num())
        assert torch.equal(got.signbit(), want.signbit())


def test_clamp_keeps_nan():
    a = torch.tensor([float("nan"), 1.0, -5.0])
    assert_same(to_cb(a).clamp(-1, 1), a.clamp(-1, 1))


def test_maximum_minimum_where_lerp():
    a, b = make((3, 4), seed=17), make((4,), seed=18)
    a[0, 0] = float("nan")
    assert_same(cb.maximum(to_cb(a), to_cb(b)), torch.maximum(a, b))
    assert_same(cb.minimum(to_cb(a), to_cb(b)), torch.minimum(a, b))
    cond = a > 0
    assert_same(cb.where(to_cb(cond), to_cb(a), to_cb(b)), torch.where(cond, a, b))
    assert_same(cb.where(to_cb(cond), to_cb(a), 0.0), torch.where(cond, a, 0.0))
    assert_same(cb.where(to_cb(cond), 1, 0), torch.where(cond, 1, 0))
    assert_same(to_cb(a).where(to_cb(cond), to_cb(b)), a.where(cond, b))
    s, e = make((5,), seed=19), make((5,), seed=20)
    assert_same(to_cb(s).lerp(to_cb(e), 0.3), s.lerp(e, 0.3))
    w = torch.rand(5)
    assert_same(cb.lerp(to_cb(s), to_cb(e), to_cb(w)), torch.lerp(s, e, w))


def test_nan_to_num_and_tests():
    a = torch.tensor([float("nan"), float("inf"), -float("inf"), 1.0])
    ca = to_cb(a)
    assert_same(ca.nan_to_num(), a.nan_to_num())
    assert_same(ca.nan_to_num(nan=1.0, posinf=2.0, neginf=-2.0), a.nan_to_num(nan=1.0, posinf=2.0, neginf=-2.0))
    for fn in ("isnan", "isinf", "isfinite", "isposinf", "isneginf"):
        assert_same(getattr(ca, fn)(), getattr(a, fn)())
    assert_same(cb.tensor([1, 2]).isnan(), torch.tensor([1, 2]).isnan())


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_pow_fast_exponents(dtype):
    """The exponents computed as products and roots (1, 2, 3, 4, +-0.5, -1, -2), on values with
    zeros, negatives, infinities and NaN, strided input, and ints promoted by a float exponent."""
    a = torch.tensor([0.0, -0.0, 1.5, -2.0, 3.0, float("inf"), -float("inf"), float("nan")], dtype=getattr(torch, dtype))
    for e in (1.0, 2.0, 3.0, 4.0, 0.5, -0.5, -1.0, -2.0, 2, 3, 1.7):
        assert_same(to_cb(a) ** e, a ** e)
        assert_same(cb.pow(to_cb(a)[::2], e), torch.pow(a[::2], e))
    assert_same(to_cb(torch.arange(5)) ** 2.0, torch.arange(5) ** 2.0)


def test_named_arith_and_alpha():
    a, b = make((3,), seed=21), make((3,), seed=22)
    ca, cbb = to_cb(a), to_cb(b)
    assert_same(ca.add(cbb, alpha=2), a.add(b, alpha=2))
    assert_same(cb.sub(ca, cbb, alpha=0.5), torch.sub(a, b, alpha=0.5))
    assert_same(ca.div(cbb, rounding_mode="floor"), a.div(b, rounding_mode="floor"))
    assert_same(ca.div(cbb, rounding_mode="trunc"), a.div(b, rounding_mode="trunc"))
    i = torch.tensor([7, -7])
    assert_same(to_cb(i).div(2, rounding_mode="trunc"), i.div(2, rounding_mode="trunc"))
    assert_same(to_cb(i).div(2, rounding_mode="floor"), i.div(2, rounding_mode="floor"))
    assert_same(cb.pow(ca, 2), torch.pow(a, 2))
    assert_same(ca ** cbb.abs(), a ** b.abs())
    assert_same(2 ** ca, 2 ** a)


def test_non_contiguous_inputs():
    a = make((4, 6), seed=23)
    ca = to_cb(a)
    assert_same(ca.t() + 1, a.t() + 1)
    assert_same(ca[:, 1:4] * ca[:, 2:5], a[:, 1:4] * a[:, 2:5])
    assert_same(ca.t().exp(), a.t().exp())
    assert_same(ca.t().sum(0), a.t().sum(0), atol=1e-5)
    assert_same(ca.expand(3, 4, 6) + ca, a.expand(3, 4, 6) + a)


def test_empty_tensors():
    a = torch.zeros(0, 3)
    ca = to_cb(a)
    assert_same(ca + 1, a + 1)
    assert_same(ca.exp(), a.exp())
    assert_same(ca.sum(0), a.sum(0))
    assert_same(ca.sum(), a.sum())
    assert_same(ca.mean(1), a.mean(1))


@pytest.mark.parametrize("shapes", [((3, 4), (4, 5)), ((4,), (4, 5)), ((3, 4), (4,)), ((4,), (4,)),
                                    ((2, 3, 4), (4, 5)), ((2, 3, 4), (2, 4, 5)), ((1, 3, 4), (5, 4, 2)), ((5, 3, 4), (4,))])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_matmul(shapes, dtype):
    a, b = make(shapes[0], dtype, seed=24), make(shapes[1], dtype, seed=25)
    assert_same(to_cb(a) @ to_cb(b), a @ b, atol=1e-4)
    assert_same(cb.matmul(to_cb(a), to_cb(b)), torch.matmul(a, b), atol=1e-4)


def test_matmul_family_and_errors():
    a, b, v = make((3, 4), seed=26), make((4, 5), seed=27), make((4,), seed=28)
    assert_same(cb.mm(to_cb(a), to_cb(b)), torch.mm(a, b), atol=1e-5)
    assert_same(to_cb(a).mv(to_cb(v)), a.mv(v), atol=1e-5)
    assert_same(cb.dot(to_cb(v), to_cb(v)), torch.dot(v, v), atol=1e-5)
    assert_same(cb.outer(to_cb(v), to_cb(v)), torch.outer(v, v))
    x, y = make((2, 3, 4), seed=29), make((2, 4, 5), seed=30)
    assert_same(cb.bmm(to_cb(x), to_cb(y)), torch.bmm(x, y), atol=1e-5)
    assert_same(to_cb(a).t() @ to_cb(a), a.t() @ a, atol=1e-5)
    with pytest.raises(RuntimeError, match=r"\(3x4 and 5x4\)"):
        to_cb(a) @ to_cb(b.t())
    with pytest.raises(RuntimeError):
        to_cb(a) @ cb.tensor([[1, 2]])


def test_broadcast_error_names_both_sizes():
    with pytest.raises(RuntimeError, match=r"size of tensor a \(3\) must match the size of tensor b \(4\)"):
        cb.ones(3) + cb.ones(4)
    with pytest.raises(cb.ShapeError):
        cb.ones(2, 3) * cb.ones(3, 2)


def test_operand_type_errors():
    with pytest.raises(TypeError):
        cb.ones(2) + "a"
    with pytest.raises(TypeError):
        cb.ones(2).mul(None)


@pytest.mark.parametrize("m,k,n", [(1, 768, 300), (3, 128, 70), (2, 0, 3), (0, 4, 5), (64, 64, 64), (17, 300, 520),
                                   (70, 512, 600), (5, 1, 7), (100, 1200, 300), (197, 3072, 768), (700, 300, 70),
                                   (250, 2000, 40), (600, 1024, 100), (530, 1100, 45), (1030, 70, 50),
                                   (1100, 96, 200), (1040, 64, 1100), (300, 200, 100), (130, 2100, 200),
                                   (197, 1536, 100), (90, 2600, 37)])
@pytest.mark.parametrize("layout", ["plain", "w_t", "a_t", "batched_bcast"])
def test_matmul_paths(m, k, n, layout):
    """Every route of the CPU matmul: dot products for few rows against Wᵀ, split gemm, threaded gemm, and a
    column-major result transposed once (few rows against Wᵀ with a long inner dim); x @ Wᵀ with W read in
    place, in passes over x's rows (250 of 2000: three, the last one short), or packed for many rows (700 of
    300 and 600 of 1024: k in one slice, several row blocks; 530 of 1100: k in slices); 1030 and 1100 rows, and
    300 rows into 100 outputs, go to gemm's own kernels on Intel, split by rows over the threads (1040 rows into 1100: by columns); 130 of 2100
    into 200: the column-major result with W's rows split over the threads, the last share short."""
    a, w = make((m, k), seed=31), make((n, k), seed=32)
    if layout == "plain":
        x, y = a, w.t().contiguous()
    elif layout == "w_t":
        x, y = a, w.t()
    elif layout == "a_t":
        x, y = a.t().contiguous().t(), w.t()
    else:
        x, y = a.expand(3, m, k), w.t()
    cx = to_cb(x) if layout != "a_t" else to_cb(a.t()).t()
    cy = to_cb(w).t() if layout != "plain" else to_cb(y)
    if layout == "batched_bcast":
        cx = to_cb(a).expand(3, m, k)
    assert_same(cx @ cy, x @ y, atol=1e-3, rtol=1e-4)
    assert_same(cx.double() @ cy.double(), x.double() @ y.double(), atol=1e-9)
    # 16-bit floats accumulate in f32 and round once, as torch does on CPU.
    for dt in ("bfloat16", "float16"):
        tdt, cdt = getattr(torch, dt), getattr(cb, dt)
        assert_same(cx.to(cdt) @ cy.to(cdt), x.to(tdt) @ y.to(tdt), atol=2e-2 if dt == "bfloat16" else 2e-3,
                    rtol=1e-2)


@pytest.mark.parametrize("dt", ["bfloat16", "float16"])
@pytest.mark.parametrize("m,k,n,batch", [(5, 7, 3, ()), (13, 31, 33, ()), (12, 64, 32, ()), (25, 65, 70, ()),
                                         (40, 1, 40, ()), (130, 577, 100, ()), (20, 1100, 40, ()), (16, 64, 16, (9,)), (3, 40, 5, (2, 3))])
@pytest.mark.parametrize("layout", ["w_t", "plain", "strided"])
def test_half_matmul_tiles(dt, m, k, n, batch, layout):
    """16-bit products in register tiles (bf16 dot products, or f32 blocks): tails of every tile dim, odd and
    short inner dims, batches run one per thread, B as Wᵀ (read in place) or row-major, A strided."""
    tdt, cdt = getattr(torch, dt), getattr(cb, dt)
    a = make((*batch, m, 2 * k), seed=41)[..., ::2] if layout == "strided" else make((*batch, m, k), seed=41)
    w = make((*batch, n, k), seed=42)
    y = w.transpose(-1, -2) if layout != "plain" else w.transpose(-1, -2).contiguous()
    want = a.to(tdt) @ y.to(tdt)
    ca = to_cb(make((*batch, m, 2 * k), seed=41)).to(cdt)[..., ::2] if layout == "strided" else to_cb(a).to(cdt)
    cy = to_cb(w).to(cdt).transpose(-1, -2) if layout != "plain" else to_cb(y).to(cdt)
    got = ca @ cy
    # Both accumulate in f32 and round once: at most one 16-bit ulp apart (summation order).
    assert_same(got, want, atol=1e-2 if dt == "bfloat16" else 1e-3, rtol=1e-2 if dt == "bfloat16" else 2e-3)


@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
def test_half_matmul_reads_special_values(dt):
    """The decode path and the tiles read 16-bit weights as they are: subnormals, infinities, NaN, max."""
    vals = torch.tensor([0.0, -0.0, 1e-7, -6e-8, 6e-5, 65504.0, math.inf, -math.inf, math.nan, 3.14] * 7)
    w = torch.diag(vals).to(getattr(torch, dt))
    for rows in (1, 16):
        x = torch.ones(rows, 70, dtype=w.dtype)
        assert_same(to_cb(x) @ to_cb(w).t(), x @ w.t())


@pytest.mark.parametrize("n,start", [(17, 0), (40003, 3), (300000, 1)])
def test_exp_contiguous_kernel(n, start):
    """exp over contiguous float32 (the slice kernel on AVX-512: one scaling instruction) keeps the engine's
    bits on a strided view of the same values, within 1.05 ulp of float64's exp from subnormal results
    (x near -104) to overflow (88.73), NaN and ±inf as torch; views at an offset and short tails."""
    x = np.linspace(-106, 90, n + start, dtype=np.float32)
    x[start:start + 6] = [np.nan, np.inf, -np.inf, 0.0, 88.72, -103.9]
    cx = cb.from_numpy(x)[start:]
    got = cx.exp().numpy()
    strided = cb.from_numpy(np.repeat(x, 2))[2 * start::2].exp().numpy()
    np.testing.assert_array_equal(got, strided)
    ref = torch.from_numpy(x[start:]).exp().numpy()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(ref))
    exact = np.exp(x[start:].astype(np.float64))
    fin = np.isfinite(exact) & (exact < 3.4e38)
    ulp = np.spacing(exact[fin].astype(np.float32)).astype(np.float64)
    assert (np.abs(got[fin] - exact[fin]) / ulp).max() <= 1.05


def assert_same_bits_strided_and_one_thread(fn, x, got):
    """`fn` of float32 `x` gives `got`'s bits on a stride-2 view of the same values and at one thread."""
    np.testing.assert_array_equal(getattr(cb.from_numpy(np.repeat(x, 2))[::2], fn)().numpy(), got)
    before = cb.get_num_threads()
    try:
        cb.set_num_threads(1)
        np.testing.assert_array_equal(getattr(cb.from_numpy(x), fn)().numpy(), got)
    finally:
        cb.set_num_threads(before)


@pytest.mark.parametrize("fn", ["sin", "cos"])
@pytest.mark.parametrize("scale", [1e-3, 3.0, 1e4, 3e5, 1e8])
def test_sin_cos_kernel(fn, scale):
    """sin/cos over float32 (one vectorised polynomial after the reduction by π/2; libm past |x| = 2^20):
    within 3 ulp of float64's from tiny arguments to 10^8 (torch within 1), the same bits on a strided
    view and at every thread count, NaN/±inf to NaN and sin(-0.0) = -0.0 as torch; 16-bit inputs widened
    and rounded once."""
    rng = np.random.default_rng(int(scale))
    x = (rng.standard_normal(40003) * scale).astype(np.float32)
    x[:8] = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-42, -1e-30, np.pi]
    got = getattr(cb.from_numpy(x), fn)().numpy()
    ref = getattr(torch.from_numpy(x), fn)().numpy()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    fin = ~np.isnan(ref)
    np.testing.assert_array_equal(np.signbit(got[fin]), np.signbit(ref[fin]))
    exact = getattr(np, fn)(x[fin].astype(np.float64))
    ulp = np.spacing(np.abs(exact).astype(np.float32)).astype(np.float64)
    assert (np.abs(got[fin] - exact) / ulp).max() <= 3.0
    assert_same_bits_strided_and_one_thread(fn, x, got)
    for dt in ("float16", "bfloat16"):
        h = torch.from_numpy(x[8:]).clamp(-6e4, 6e4).to(getattr(torch, dt))
        assert_same(getattr(to_cb(h), fn)(), getattr(h, fn)())


@pytest.mark.parametrize("fn", ["log", "log2", "log10"])
def test_log_kernels(fn):
    """log/log2/log10 of float32 (vectorised: exponent split, one polynomial; no libm): within 3 ulp of
    float64's from subnormals to 3e38 (torch within 1), exact at powers of two (log2) and of ten (log10 of
    1000), ±0 to -inf, negatives and NaN to NaN, +inf to +inf; strided, 16-bit and float64 inputs too."""
    rng = np.random.default_rng(1)
    x = np.concatenate([np.abs(rng.standard_normal(3000)).astype(np.float32) * s for s in (1e-42, 1e-39, 1e-3, 1, 1e3, 1e35)])
    x[:10] = [0.0, -0.0, np.inf, -np.inf, np.nan, -1.0, 1.0, 1024.0, 0.125, 1000.0]
    got = getattr(cb.from_numpy(x), fn)().numpy()
    ref = getattr(torch.from_numpy(x), fn)().numpy()
    np.testing.assert_array_equal(got[:7], ref[:7])
    assert got[7] == {"log": np.float32(np.log(1024.0)), "log2": 10.0, "log10": ref[7]}[fn]
    if fn == "log10":
        assert got[9] == 3.0
    with np.errstate(divide="ignore"):
        exact = getattr(np, fn)(x[10:].astype(np.float64))
    ok = np.isfinite(exact) & (exact != 0)
    ulp = np.spacing(np.abs(exact[ok]).astype(np.float32)).astype(np.float64)
    assert (np.abs(got[10:][ok] - exact[ok]) / ulp).max() <= 3.0
    np.testing.assert_array_equal(getattr(cb.from_numpy(np.repeat(x, 2))[::2], fn)().numpy(), got)
    for dt in ("float16", "bfloat16", "float64"):
        h = torch.from_numpy(x[10:]).clamp(1e-4, 6e4).to(getattr(torch, dt))
        assert_same(getattr(to_cb(h), fn)(), getattr(h, fn)())


# Arguments per function: its domain's interior from tiny to large, the edges, and past them.
INVERSE_ARGS = {
    "tan": [1e-30, 1e-3, 0.7, 3.0, 100.0, 1e4, 3e5, 2e6, 1e8],
    "atan": [1e-30, 1e-3, 0.3, 1.0, 3.0, 100.0, 1e8, 1e30],
    "asin": [1e-30, 1e-3, 0.3, 0.6],
    "acos": [1e-30, 1e-3, 0.3, 0.6],
    "log1p": [1e-30, 1e-6, 1e-3, 0.3, 0.9, 3.0, 1e4, 1e30],
    "expm1": [1e-30, 1e-6, 1e-3, 0.3, 3.0, 30.0],
    "sinh": [1e-30, 1e-3, 0.3, 3.0, 30.0, 89.4],
    "cosh": [1e-30, 1e-3, 0.3, 3.0, 30.0, 89.4],
}
SPECIAL_ARGS = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 1e-42, -1e-40, 1.5, -1.5, 1.0000001, -1.0000001,
                0.99999994, -0.99999994, 0.5, -0.5, 88.7, 89.0, -18.5, -100.0, 1.5707964, 3e38, -3e38]


@pytest.mark.parametrize("fn", sorted(INVERSE_ARGS))
def test_vectorised_trig_log1p_expm1(fn):
    """tan/atan/asin/acos/log1p/expm1/sinh/cosh of float32 (vectorised polynomials, no libm up to tan's |x| = 2^20):
    within 3 ulp of float64's over each domain from tiny arguments up (torch within 1), the specials
    (±0, ±inf, NaN, the domain's edges and past them, overflow) as torch; the same bits strided and at
    one thread; 16-bit inputs widened and rounded once, float64 by libm."""
    rng = np.random.default_rng(len(fn))
    parts = [rng.uniform(-s, s, 4001) if s < 1 or fn not in ("asin", "acos") else rng.uniform(-1, 1, 4001)
             for s in INVERSE_ARGS[fn]]
    x = np.concatenate(parts).astype(np.float32)
    if fn == "log1p":
        x = np.maximum(x, np.float32(-0.999))
    if fn == "expm1":
        x = np.minimum(x, np.float32(88.0))
    x = np.concatenate([np.array(SPECIAL_ARGS, np.float32), x])
    got = getattr(cb.from_numpy(x), fn)().numpy()
    ref = getattr(torch.from_numpy(x), fn)().numpy()
    k = len(SPECIAL_ARGS)
    sp, sr = got[:k], ref[:k]
    np.testing.assert_array_equal(np.isnan(sp), np.isnan(sr))
    fin = ~np.isnan(sr)
    # torch flushes log1p of a subnormal to 0; ours keeps it (log1p(x) = x there), which is exact.
    keep = fin & ~((np.abs(x[:k]) < 1.2e-38) & (x[:k] != 0))
    np.testing.assert_array_equal(np.signbit(sp[keep]), np.signbit(sr[keep]))
    np.testing.assert_allclose(sp[fin], sr[fin], rtol=4e-7, atol=0)
    with np.errstate(all="ignore"):
        exact = getattr(np, {"asin": "arcsin", "acos": "arccos", "atan": "arctan"}.get(fn, fn))(x[k:].astype(np.float64))
    ok = np.isfinite(exact) & (np.abs(exact) < 3.4e38)
    ulp = np.spacing(np.abs(exact[ok]).astype(np.float32)).astype(np.float64)
    err = np.abs(got[k:][ok] - exact[ok]) / ulp
    assert err.max() <= 3.0, (fn, float(err.max()), x[k:][ok][err.argmax()])
    assert_same_bits_strided_and_one_thread(fn, x, got)
    for dt in ("float16", "bfloat16", "float64"):
        h = torch.from_numpy(x[k:]).clamp(-6e4, 6e4).to(getattr(torch, dt))
        if fn in ("expm1", "sinh", "cosh"):
            h = h.clamp(-10.0, 10.0)
        assert_same(getattr(to_cb(h), fn)(), getattr(h, fn)())
