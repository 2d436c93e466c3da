"""torch.ao.quantization.quantize_dynamic against live torch: the same float model (seeded torch weights
loaded into ours) quantized on both sides must give torch's quantized weights, state dict, repr and,
since the int8 kernels follow fbgemm's numerics step for step, torch's outputs bit for bit (whichever
kernel runs: VNNI, AVX2 or portable; `test_every_kernel` forces each)."""

import copy
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest
import torch

import candle_bind as cb
from candle_bind import nn

# torch's own: torch.ao.quantization and its quantized tensors are deprecated in favour of torchao.
pytestmark = [pytest.mark.filterwarnings("ignore::DeprecationWarning"),
              pytest.mark.filterwarnings("ignore:.*quantized tensor creation functions:UserWarning")]
tnn = torch.nn
TQ, CQ = torch.ao.quantization, cb.ao.quantization


def _pair(k=16, n=12, bias=True, hidden=None, seed=0):
    """A torch float model and ours with its weights: Linear, or Linear-ReLU-Linear."""
    torch.manual_seed(seed)
    if hidden is None:
        tm, cm = tnn.Sequential(tnn.Linear(k, n, bias=bias)), nn.Sequential(nn.Linear(k, n, bias=bias))
    else:
        tm = tnn.Sequential(tnn.Linear(k, hidden, bias=bias), tnn.ReLU(), tnn.Linear(hidden, n, bias=bias))
        cm = nn.Sequential(nn.Linear(k, hidden, bias=bias), nn.ReLU(), nn.Linear(hidden, n, bias=bias))
    cm.load_state_dict({key: cb.from_numpy(v.detach().numpy().copy()) for key, v in tm.state_dict().items()})
    return tm.eval(), cm


def _c(x):
    return cb.from_numpy(np.ascontiguousarray(x.numpy()))


def _specs():
    return {
        "per_tensor": ({tnn.Linear}, {nn.Linear}),
        "per_channel": ({tnn.Linear: TQ.per_channel_dynamic_qconfig}, {nn.Linear: CQ.per_channel_dynamic_qconfig}),
        "affine": ({tnn.Linear: TQ.QConfig(activation=TQ.default_dynamic_quant_observer,
                                           weight=TQ.MinMaxObserver.with_args(dtype=torch.qint8))},
                   {nn.Linear: CQ.QConfig(activation=CQ.default_dynamic_quant_observer,
                                          weight=CQ.MinMaxObserver.with_args(dtype=cb.qint8))}),
    }


@pytest.mark.parametrize("spec", ["per_tensor", "per_channel", "affine"])
@pytest.mark.parametrize("shape, k, n, bias", [((5, 16), 16, 12, True), ((3, 7, 33), 33, 70, False),
                                               ((64, 96), 96, 130, True), ((1, 40), 40, 8, True),
                                               ((0, 16), 16, 12, True), ((2, 0, 16), 16, 5, False)])
def test_matches_torch_bit_for_bit(spec, shape, k, n, bias):
    ts, cs = _specs()[spec]
    tm, cm = _pair(k, n, bias=bias, hidden=24)
    tq, cq = TQ.quantize_dynamic(tm, ts, dtype=torch.qint8), CQ.quantize_dynamic(cm, cs, dtype=cb.qint8)
    torch.manual_seed(1)
    x = torch.randn(*shape) * 3 + 0.5
    want, got = tq(x), cq(_c(x))
    assert tuple(got.shape) == tuple(want.shape) and got.dtype == cb.float32
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    for i in (0, 2):
        np.testing.assert_array_equal(cq[i].weight().int_repr().numpy(), tq[i].weight().int_repr().numpy())
        assert repr(cq[i].weight().qscheme()) == repr(tq[i].weight().qscheme())


def test_inputs_that_stress_the_quantizer():
    """All-zero, constant, one-signed, tiny (the small-scale cutoff), huge, and rows that land on .5
    ties when quantized (a 4096-row input has some)."""
    tm, cm = _pair(96, 64)
    tq, cq = TQ.quantize_dynamic(tm, {tnn.Linear}), CQ.quantize_dynamic(cm, {nn.Linear})
    torch.manual_seed(2)
    for x in (torch.zeros(3, 96), torch.full((2, 96), 2.5), -torch.rand(4, 96), torch.randn(3, 96) * 1e-6,
              torch.rand(3, 96) * 1e-7, torch.randn(3, 96) * 1e4, torch.randn(4096, 96) * 3 + 0.5):
        np.testing.assert_array_equal(cq(_c(x)).numpy(), tq(x).numpy())


def test_non_contiguous_input():
    tm, cm = _pair(16, 12)
    tq, cq = TQ.quantize_dynamic(tm, {tnn.Linear}), CQ.quantize_dynamic(cm, {nn.Linear})
    x = torch.randn(16, 5).t()
    got = cq(_c(x.contiguous()).t().contiguous().t())  # a transposed view of ours too
    assert not _c(x.contiguous()).t().contiguous().t().is_contiguous()
    np.testing.assert_array_equal(got.numpy(), tq(x).numpy())


def test_error_within_torch_own_quantization_error():
    """What the task promises: |ours - f32| is torch's |int8 - f32| (here: equal)."""
    tm, cm = _pair(64, 48, hidden=128)
    x = torch.randn(32, 64)
    ref = tm(x).detach().numpy()
    tq, cq = TQ.quantize_dynamic(tm, {tnn.Linear}), CQ.quantize_dynamic(cm, {nn.Linear})
    err_torch, err_ours = np.abs(tq(x).numpy() - ref).max(), np.abs(cq(_c(x)).numpy() - ref).max()
    assert 0 < err_ours <= err_torch * 1.0001


def test_module_surface_matches_torch():
    tm, cm = _pair(8, 4, hidden=6)
    tq, cq = TQ.quantize_dynamic(tm, {tnn.Linear}), CQ.quantize_dynamic(cm, {nn.Linear})
    assert repr(cq) == repr(tq)
    lin = cq[0]
    assert isinstance(lin, cb.ao.nn.quantized.dynamic.Linear) and isinstance(lin, cb.ao.nn.quantized.Linear)
    assert type(lin).__module__ == "candle_bind.ao.nn.quantized.dynamic.modules.linear"
    assert cb.nn.quantized.dynamic.Linear is cb.ao.nn.quantized.dynamic.Linear
    assert lin.weight().dtype is cb.qint8 and lin.weight().is_quantized
    assert lin.weight().q_scale() == tq[0].weight().q_scale() and lin.weight().q_zero_point() == 0
    assert repr(lin.weight()) == repr(tq[0].weight())
    assert lin._packed_params.dtype is cb.qint8 and lin.bias() is lin.bias()  # the bias object kept, as torch's
    np.testing.assert_array_equal(lin.bias().numpy(), tq[0].bias().detach().numpy())
    assert not hasattr(lin, "qconfig") and not hasattr(cm[0], "qconfig")
    assert list(cq.parameters()) == []


def test_state_dict_matches_torch():
    tm, cm = _pair(8, 4, hidden=6, bias=False)
    tq, cq = TQ.quantize_dynamic(tm, {tnn.Linear}), CQ.quantize_dynamic(cm, {nn.Linear})
    tsd, csd = tq.state_dict(), cq.state_dict()
    assert list(csd) == list(tsd)
    assert csd["0._packed_params.dtype"] is cb.qint8
    w, b = csd["0._packed_params._packed_params"]
    assert b is None and float(csd["0.scale"]) == 1.0 and int(csd["0.zero_point"]) == 0
    np.testing.assert_array_equal(w.int_repr().numpy(), tsd["0._packed_params._packed_params"][0].int_repr().numpy())
    assert csd._metadata["0"]["version"] == tsd._metadata["0"]["version"] == 4


@pytest.mark.parametrize("spec", ["per_tensor", "per_channel"])
def test_checkpoints_both_ways(spec, tmp_path):
    ts, cs = _specs()[spec]
    tq = TQ.quantize_dynamic(_pair(8, 4, hidden=6)[0], ts)
    cq = CQ.quantize_dynamic(_pair(8, 4, hidden=6, seed=5)[1], cs)
    x = torch.randn(3, 8)
    # torch.save from torch (qint8 tensors: _rebuild_qtensor) -> our quantized model
    torch.save(tq.state_dict(), tmp_path / "torch.pt")
    cq.load_state_dict(cb.load(tmp_path / "torch.pt"))
    np.testing.assert_array_equal(cq(_c(x)).numpy(), tq(x).numpy())
    # ours -> torch.load(weights_only=True) -> torch's quantized model
    cq2 = CQ.quantize_dynamic(_pair(8, 4, hidden=6, seed=7)[1], cs)
    cb.save(cq2.state_dict(), tmp_path / "ours.pt")
    tq.load_state_dict(torch.load(tmp_path / "ours.pt", weights_only=True))
    np.testing.assert_array_equal(cq2(_c(x)).numpy(), tq(x).numpy())


def test_copies_keep_working():
    cq = CQ.quantize_dynamic(_pair(8, 4, hidden=6)[1], {nn.Linear})
    x = cb.randn(2, 8)
    want = cq(x).numpy()
    np.testing.assert_array_equal(copy.deepcopy(cq)(x).numpy(), want)
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(cq))(x).numpy(), want)


def test_qconfig_spec_forms_and_inplace():
    tm, cm = _pair(8, 4, hidden=6)
    # names instead of types; the rest stays float (torch's rule, as its result shows)
    tq, cq = TQ.quantize_dynamic(tm, {"2"}), CQ.quantize_dynamic(cm, {"2"})
    assert repr(cq) == repr(tq)
    assert type(cq[0]) is nn.Linear and type(cm[2]) is nn.Linear  # a copy by default
    # a parent named in the spec hands its qconfig to its children
    torch.manual_seed(0)
    tnest = tnn.Sequential(tnn.Sequential(tnn.Linear(4, 4)), tnn.Linear(4, 2))
    cnest = nn.Sequential(nn.Sequential(nn.Linear(4, 4)), nn.Linear(4, 2))
    assert repr(CQ.quantize_dynamic(cnest, {"0": CQ.default_dynamic_qconfig})) == \
        repr(TQ.quantize_dynamic(tnest, {"0": TQ.default_dynamic_qconfig}))
    # the top module itself is never swapped, as torch's
    assert type(CQ.quantize_dynamic(nn.Linear(4, 4), {nn.Linear})) is nn.Linear
    # inplace=True converts the model given
    out = CQ.quantize_dynamic(cm, dtype=cb.qint8, inplace=True)
    assert out is cm and type(cm[0]).__name__ == "Linear" and cm[0]._get_name() == "DynamicQuantizedLinear"
    assert cb.quantization.quantize_dynamic is CQ.quantize_dynamic


def test_float16_weights():
    tm, cm = _pair(16, 12, hidden=20)
    tq, cq = TQ.quantize_dynamic(tm, {tnn.Linear}, dtype=torch.float16), CQ.quantize_dynamic(cm, {nn.Linear},
                                                                                              dtype=cb.float16)
    assert repr(cq) == repr(tq)
    np.testing.assert_array_equal(cq[0].weight().numpy(), tq[0].weight().numpy())
    x = torch.randn(5, 16)
    np.testing.assert_allclose(cq(_c(x)).numpy(), tq(x).numpy(), rtol=1e-5, atol=1e-6)


def test_layers_without_quantized_kernels_stay_float():
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(4, 4), nn.LSTM(4, 4))
    with pytest.warns(UserWarning, match="no dynamic quantized LSTM"):
        q = CQ.quantize_dynamic(m, dtype=cb.qint8)
    assert type(q[1]) is nn.LSTM and q[0]._get_name() == "DynamicQuantizedLinear"


def _raises(fn_t, fn_c):
    with pytest.raises(Exception) as want:
        fn_t()
    with pytest.raises(type(want.value)) as got:
        fn_c()
    assert str(got.value).split(" (Could")[0].strip() == str(want.value).split(" (Could")[0].strip()
    return got


def test_errors_as_torch():
    tm, cm = _pair(8, 4)
    tq, cq = TQ.quantize_dynamic(tm, {tnn.Linear})[0], CQ.quantize_dynamic(cm, {nn.Linear})[0]
    _raises(lambda: tq(torch.randn(8)), lambda: cq(cb.randn(8)))
    _raises(lambda: tq(torch.randn(2, 7)), lambda: cq(cb.randn(2, 7)))
    for t_dt, c_dt in ((torch.float64, cb.float64), (torch.bfloat16, cb.bfloat16), (torch.int64, cb.int64)):
        _raises(lambda: tq(torch.ones(2, 8, dtype=t_dt)), lambda: cq(cb.ones(2, 8, dtype=c_dt)))
    for t_dt, c_dt in ((torch.int8, cb.int8), (torch.float32, cb.float32), (torch.qint32, cb.qint32)):
        _raises(lambda: TQ.quantize_dynamic(tm, {tnn.Linear}, dtype=t_dt),
                lambda: CQ.quantize_dynamic(cm, {nn.Linear}, dtype=c_dt))
        _raises(lambda: TQ.quantize_dynamic(tm, dtype=t_dt), lambda: CQ.quantize_dynamic(cm, dtype=c_dt))
    _raises(lambda: TQ.quantize_dynamic(tm, {tnn.Linear}, dtype=torch.quint8),
            lambda: CQ.quantize_dynamic(cm, {nn.Linear}, dtype=cb.quint8))
    _raises(lambda: torch.promote_types(torch.qint8, torch.float32), lambda: cb.promote_types(cb.qint8, cb.float32))


def test_quantized_tensors():
    x = torch.randn(3, 5)
    for args in ((0.05, 3, "quint8"), (0.1, 0, "qint8"), (0.01, -7, "qint32")):
        s, z, d = args
        t, c = torch.quantize_per_tensor(x, s, z, getattr(torch, d)), cb.quantize_per_tensor(_c(x), s, z, getattr(cb, d))
        np.testing.assert_array_equal(c.int_repr().numpy(), t.int_repr().numpy())
        np.testing.assert_array_equal(c.dequantize().numpy(), t.dequantize().numpy())
        assert repr(c) == repr(t) and c.q_scale() == t.q_scale() and c.q_zero_point() == t.q_zero_point()
    t = torch.quantize_per_channel(x, torch.tensor([0.1, 0.2, 0.3]), torch.tensor([0, 1, 2]), 0, torch.qint8)
    c = cb.quantize_per_channel(_c(x), cb.tensor([0.1, 0.2, 0.3]), cb.tensor([0, 1, 2]), 0, cb.qint8)
    np.testing.assert_array_equal(c.int_repr().numpy(), t.int_repr().numpy())
    assert repr(c) == repr(t) and c.q_per_channel_axis() == 0
    _raises(lambda: t.q_scale(), lambda: c.q_scale())
    _raises(lambda: torch.quantize_per_tensor(x, 0.1, 0, torch.int8), lambda: cb.quantize_per_tensor(_c(x), 0.1, 0, cb.int8))
    _raises(lambda: torch.quantize_per_tensor(x.double(), 0.1, 0, torch.qint8),
            lambda: cb.quantize_per_tensor(_c(x).double(), 0.1, 0, cb.qint8))


@pytest.mark.skipif("CANDLE_BIND_ISA" in os.environ, reason="already a forced-level run")
@pytest.mark.parametrize("level, kernel", [("avx2", "avx2"), ("portable", "portable")])
def test_every_kernel(level, kernel):
    """The AVX2 and portable kernels (the VNNI one runs everywhere else here, on CPUs that have it)."""
    code = ("import candle_bind, sys; sys.path.insert(0, %r); import test_quantize_dynamic as t; "
            "assert candle_bind._C.qlinear_kernel() == %r, candle_bind._C.qlinear_kernel(); "
            "t.test_matches_torch_bit_for_bit('per_channel', (64, 96), 96, 130, True); "
            "t.test_inputs_that_stress_the_quantizer()") % (os.path.dirname(__file__), kernel)
    env = {**os.environ, "CANDLE_BIND_ISA": level}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]


def test_quantized_engine_flag():
    assert cb.backends.quantized.engine == torch.backends.quantized.engine == "x86"
    cb.backends.quantized.engine = "fbgemm"
    try:
        assert cb.backends.quantized.engine == "fbgemm"
        _raises(lambda: setattr(torch.backends.quantized, "engine", "foo"),
                lambda: setattr(cb.backends.quantized, "engine", "foo"))
    finally:
        cb.backends.quantized.engine = "x86"
