"""torch.<name> functions beside their Tensor methods: torch.<op>_ in-place forms, nn ops under torch.*,
tensor predicates, Tensor.fill_diagonal_, clamp's bound checks; each against live torch."""

import warnings

import pytest
import torch

import candle_bind as cb
from conftest import to_cb


def _pair(x):
    return x.clone(), to_cb(x)


def _same(ref, got, **tol):
    assert tuple(got.shape) == tuple(ref.shape) and str(got.dtype) == str(ref.dtype)
    if ref.dtype == torch.bfloat16:
        got, ref = got.float(), ref.float()
    torch.testing.assert_close(torch.from_numpy(got.cpu().numpy()), ref, equal_nan=True, **tol)


UNARY_INPLACE = ["abs_", "acos_", "acosh_", "arccos_", "arccosh_", "arcsin_", "arcsinh_", "arctan_", "arctanh_",
                 "asin_", "asinh_", "atan_", "atanh_", "ceil_", "cos_", "cosh_", "deg2rad_", "erf_", "erfc_", "exp2_",
                 "exp_", "expm1_", "fix_", "floor_", "frac_", "i0_", "log10_", "log1p_", "log2_", "log_", "logit_",
                 "nan_to_num_", "neg_", "negative_", "rad2deg_", "reciprocal_", "round_", "rsqrt_", "sigmoid_", "sin_",
                 "sinc_", "sinh_", "sqrt_", "square_", "tan_", "tanh_", "trunc_", "zero_", "relu_", "selu_", "celu_"]


@pytest.mark.parametrize("name", UNARY_INPLACE)
def test_unary_inplace_function(name):
    base = torch.linspace(-2.5, 2.5, 24).reshape(4, 6)
    ref, got = _pair(base)
    r = getattr(torch, name)(ref)
    g = getattr(cb, name)(got)
    assert r is ref and g is got  # the input itself, written
    _same(ref, got, rtol=1e-5, atol=1e-6)
    # through a view: the base's memory changes as torch's does
    ref, got = _pair(base)
    getattr(torch, name)(ref[:, 1::2])
    getattr(cb, name)(got[:, 1::2])
    _same(ref, got, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("call", [
    lambda t, x: t.clamp_(x, -0.5, 0.5), lambda t, x: t.clamp_min_(x, 0.1), lambda t, x: t.clamp_max_(x, 0.1),
    lambda t, x: t.clip_(x, max=0.3), lambda t, x: t.fill_(x, 2.5), lambda t, x: t.ldexp_(x, t.full_like(x, 2)),
    lambda t, x: t.xlogy_(x, t.full_like(x, 3.0)), lambda t, x: t.threshold_(x, 0.2, -9.0),
    lambda t, x: t.rrelu_(x), lambda t, x: t.dropout_(x, 0.5, False), lambda t, x: t.alpha_dropout_(x, 0.5, False),
    lambda t, x: t.feature_dropout_(x, 0.5, False), lambda t, x: t.feature_alpha_dropout_(x, 0.5, False),
    lambda t, x: t.nn.functional.elu_(x, 0.5), lambda t, x: t.nn.functional.leaky_relu_(x, 0.2),
    lambda t, x: t.nn.functional.hardtanh_(x, -0.3, 0.7), lambda t, x: t.nn.functional.relu_(x),
    lambda t, x: t.nn.functional.celu_(x), lambda t, x: t.nn.functional.selu_(x),
    lambda t, x: t.nn.functional.threshold_(x, 0.0, 1.0), lambda t, x: t.nn.functional.rrelu_(x),
])
def test_inplace_with_arguments(call):
    ref, got = _pair(torch.linspace(-2, 2, 15).reshape(3, 5))
    assert call(torch, ref) is ref and call(cb, got) is got
    _same(ref, got, rtol=1e-5, atol=1e-6)


def test_integer_inplace_functions():
    a, b = torch.tensor([12, 18, -8, 0]), torch.tensor([8, 12, 6, 5])
    for name in ("gcd_", "lcm_"):
        ref, got = _pair(a)
        getattr(torch, name)(ref, b)
        getattr(cb, name)(got, to_cb(b))
        _same(ref, got)
    with pytest.raises(TypeError):
        cb.range(3)


def test_nn_ops_under_torch():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 4, 6, 6, generator=g)
    seq = torch.randn(2, 4, 9, generator=g)
    w = torch.randn(5, 3, generator=g)
    idx = torch.tensor([[4, 0], [2, 2]])
    bw, bb = torch.randn(4, generator=g), torch.randn(4, generator=g)
    rm, rv = torch.randn(4, generator=g), torch.rand(4, generator=g) + 0.5
    cases = [
        ("celu", (x, 0.7)), ("selu", (x,)), ("threshold", (x, 0.1, 2.0)), ("prelu", (x, torch.full((4,), 0.2))),
        ("hardshrink", (x, 0.3)), ("pixel_shuffle", (x, 2)), ("pixel_unshuffle", (x, 2)), ("channel_shuffle", (x, 2)),
        ("native_channel_shuffle", (x, 2)), ("cosine_similarity", (x, x.flip(0))),
        ("pairwise_distance", (x[0, 0], x[1, 0])), ("pdist", (x[0, 0],)),
        ("bilinear", (seq[:, :, 0], seq[:, :, 1], torch.randn(3, 4, 4, generator=g), None)),
        ("adaptive_avg_pool1d", (seq, 4)), ("max_pool1d", (seq, 3, 2)), ("max_pool2d", (x, 2)),
        ("max_pool3d", (x.unsqueeze(0), 2)), ("avg_pool1d", (seq, 3, 2, 1)), ("rrelu", (x,)),
        ("embedding", (w, idx)), ("batch_norm", (x, bw, bb, rm, rv, False, 0.1, 1e-5, False)),
        ("instance_norm", (x, bw, bb, None, None, True, 0.1, 1e-5, False)),
        ("dropout", (x, 0.3, False)), ("alpha_dropout", (x, 0.3, False)), ("feature_dropout", (x, 0.3, False)),
        ("feature_alpha_dropout", (x, 0.3, False)),
    ]
    for name, args in cases:
        ref = getattr(torch, name)(*args)
        got = getattr(cb, name)(*[to_cb(a) if isinstance(a, torch.Tensor) else a for a in args])
        _same(ref, got, rtol=1e-5, atol=1e-5)
    for name, args in [("adaptive_max_pool1d", (seq, 4)), ("max_pool1d_with_indices", (seq, 3, 2))]:
        ref = getattr(torch, name)(*args)
        got = getattr(cb, name)(*[to_cb(a) if isinstance(a, torch.Tensor) else a for a in args])
        assert len(got) == 2
        for r, o in zip(ref, got):
            _same(r, o)
    # eval-mode dropout hands back the input; training-mode feature dropout drops whole channels
    t = to_cb(x)
    assert cb.dropout(t, 0.5, False) is t
    kept = cb.feature_dropout(cb.ones(8, 16, 3), 0.5, True).numpy()
    assert ((kept == 0) | (kept == 2)).all() and (kept == kept[:, :, :1]).all()
    with pytest.raises(RuntimeError, match="probability"):
        cb.dropout(t, 1.5, True)


def test_fill_diagonal_():
    for shape, wrap in [((3, 4), False), ((7, 3), True), ((7, 3), False), ((4, 3), True), ((3, 3, 3), False),
                        ((1, 5), True), ((0, 3), True)]:
        ref, got = _pair(torch.arange(float(torch.Size(shape).numel())).reshape(shape))
        assert ref.fill_diagonal_(-1.0, wrap=wrap) is ref and got.fill_diagonal_(-1.0, wrap=wrap) is got
        _same(ref, got)
    with pytest.raises(TypeError):
        cb.range(3)
    ref, got = _pair(torch.zeros(6, 6))
    ref[:, 1:].fill_diagonal_(5.0)
    got[:, 1:].fill_diagonal_(5.0)
    _same(ref, got)
    for bad in [(4,), (2, 3, 2)]:
        with pytest.raises(RuntimeError) as want:
            torch.zeros(bad).fill_diagonal_(1.0)
        with pytest.raises(RuntimeError, match=str(want.value)):
            cb.zeros(bad).fill_diagonal_(1.0)


def test_tensor_predicates():
    for dtype in (torch.float32, torch.uint8, torch.int8, torch.bool, torch.int64, torch.float16):
        t = torch.zeros(2, 3, dtype=dtype)
        c = to_cb(t)
        for name in ("is_signed", "is_conj", "is_neg", "is_inference"):
            assert getattr(cb, name)(c) == getattr(torch, name)(t), (name, dtype)
            assert getattr(c, name)() == getattr(t, name)(), (name, dtype)
        assert cb.typename(c) == torch.typename(t)
    assert cb.is_same_size(cb.zeros(2, 3), cb.ones(2, 3)) and not cb.zeros(2, 3).is_same_size(cb.ones(3, 2))
    assert cb.typename(3) == torch.typename(3) and cb.typename(cb.nn.Linear) == "candle_bind.nn.modules.linear.Linear"
    assert cb.is_storage(cb.zeros(2).untyped_storage()) and not cb.is_storage(cb.zeros(2))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int32,
                                   torch.uint8, torch.int8, torch.int64])
@pytest.mark.parametrize("bounds", [dict(max=1e39), dict(min=-1e39), dict(min=float("inf")), dict(max=2 ** 40),
                                    dict(min=2 ** 40), dict(max=-2 ** 40), dict(min=-2 ** 40, max=2 ** 40),
                                    dict(min=-300, max=300), dict(max=2 ** 63 - 1), dict(min=3, max=2 ** 31)])
def test_clamp_number_bounds_range(dtype, bounds):
    # bounds past a float result's range raise; an integer tensor's int bounds saturate to its range,
    # unless a min lies above it or a max below it
    x = torch.tensor([1, 100, 7], dtype=dtype)
    try:
        ref = torch.clamp(x, **bounds)
    except RuntimeError as e:
        with pytest.raises(RuntimeError, match=str(e).replace("+", r"\+").replace(".", r"\.")):
            cb.clamp(to_cb(x), **bounds)
        return
    _same(ref, cb.clamp(to_cb(x), **bounds))


def test_asarray_frombuffer_range():
    import numpy as np

    a = np.arange(6, dtype=np.float64).reshape(2, 3)
    for obj, kw in [(a, {}), (a, dict(dtype=torch.float32)), ([1, 2.5], {}), (3, {}), ([[True, False]], {}),
                    ((1, 2), dict(dtype=torch.int16))]:
        _same(torch.asarray(obj, **kw), cb.asarray(obj, **{k: getattr(cb, str(v).split(".")[-1]) for k, v in kw.items()}))
    x = cb.ones(2)
    assert cb.asarray(x) is x and cb.asarray(x, copy=True) is not x
    assert cb.asarray(x, dtype=cb.int64).dtype == cb.int64
    with pytest.raises(ValueError, match="can't alias tensor with dtype 'Float' into dtype 'Long'"):
        cb.asarray(x, dtype=cb.int64, copy=False)
    raw = bytes(range(16))
    for dtype, kw in [("int16", dict(count=3, offset=2)), ("float32", {}), ("uint8", dict(offset=5)),
                      ("bfloat16", dict(count=2)), ("int64", dict(offset=8))]:
        _same(torch.frombuffer(bytearray(raw), dtype=getattr(torch, dtype), **kw),
              cb.frombuffer(bytearray(raw), dtype=getattr(cb, dtype), **kw))
    for bad in [dict(buffer=b"", dtype="int16"), dict(buffer=raw, dtype="int64", offset=3),
                dict(buffer=raw, dtype="int32", count=5)]:
        with pytest.raises(ValueError):
            torch.frombuffer(bytearray(bad["buffer"]), dtype=getattr(torch, bad["dtype"]),
                             **{k: v for k, v in bad.items() if k not in ("buffer", "dtype")})
        with pytest.raises(ValueError):
            cb.frombuffer(bytearray(bad["buffer"]), dtype=getattr(cb, bad["dtype"]),
                          **{k: v for k, v in bad.items() if k not in ("buffer", "dtype")})
    for args, kw in [((0, 1, 0.25), {}), ((1, 4), {}), ((1, 4), dict(dtype="int64")), ((5, 1, -2), {})]:
        with pytest.warns(UserWarning, match="torch.range is deprecated"):
            got = cb.range(*args, **{k: getattr(cb, v) for k, v in kw.items()})
        with warnings.catch_warnings():  # torch warns once a process
            warnings.simplefilter("ignore")
            ref = torch.range(*args, **{k: getattr(torch, v) for k, v in kw.items()})
        _same(ref, got)
    with pytest.raises(TypeError):
        cb.range(3)


@pytest.mark.parametrize("dtype", ["int64", "int32", "int16", "int8", "uint8"])
def test_integer_trunc_division_exact_and_by_zero(dtype):
    # integers divide exactly (no float quotient), and a zero divisor raises as torch's ZeroDivisionError
    if dtype == "uint8":
        a, b = torch.tensor([7, 6, 0, 100, 255, 3], dtype=torch.uint8), torch.tensor([2, 4, 5, 7, 3, 3], dtype=torch.uint8)
    else:
        big = 2 ** 40 + 1 if dtype == "int64" else 100
        a = torch.tensor([7, -7, 6, -6, 0, big, -big, 9, -9]).to(getattr(torch, dtype))
        b = torch.tensor([2, 2, -3, -3, 5, -7, 3, 3, -4]).to(getattr(torch, dtype))
    ca, cb_ = to_cb(a), to_cb(b)
    _same(a.div(b, rounding_mode="trunc"), ca.div(cb_, rounding_mode="trunc"))
    _same(a.div(3, rounding_mode="trunc"), ca.div(3, rounding_mode="trunc"))
    _same(torch.fmod(a, b), cb.fmod(ca, cb_))
    for call in (lambda m, x: x.fmod(0), lambda m, x: x.div(m.zeros_like(x), rounding_mode="trunc"),
                 lambda m, x: x.fmod_(m.zeros(1, dtype=m.bool).expand(x.shape))):
        with pytest.raises(RuntimeError, match="ZeroDivisionError"):
            call(torch, a.clone())
        with pytest.raises(RuntimeError, match="ZeroDivisionError"):
            call(cb, to_cb(a))
    with pytest.raises(NotImplementedError, match="div_trunc_cpu"):
        cb.tensor([True]).div(cb.tensor([True]), rounding_mode="trunc")


def test_loss_argument_checks():
    F = cb.nn.functional
    with pytest.raises(RuntimeError, match="expected scalar type Long but found Float"):
        F.multilabel_margin_loss(cb.ones(5), cb.ones(5))
    with pytest.raises(RuntimeError, match="expected scalar type Long but found Int"):
        F.multi_margin_loss(cb.ones(2, 5), cb.ones(2, dtype=cb.int32))
    with pytest.raises(TypeError, match="argument 'target' .position 2. must be Tensor, not int"):
        F.poisson_nll_loss(cb.ones(3), 3)
    with pytest.raises(RuntimeError, match="different dtypes"):
        cb.ones(2).heaviside(cb.ones(2, dtype=cb.float16))
