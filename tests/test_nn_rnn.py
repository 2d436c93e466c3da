"""RNN, LSTM, GRU and cells against torch: layers, directions, batch_first, projections, initial
states, unbatched and packed inputs."""

import pytest
import torch

import candle_bind as cb
from candle_bind import nn
from conftest import assert_same, make, to_cb


def pair(name, *args, **kwargs):
    torch.manual_seed(0)
    return getattr(torch.nn, name)(*args, **kwargs), getattr(nn, name)(*args, **kwargs)


def compare(t, c, *inputs, atol=1e-5):
    assert list(c.state_dict()) == list(t.state_dict())
    c.load_state_dict(t.state_dict())
    with torch.no_grad():
        ref = t(*inputs)
    conv = lambda x: tuple(conv(i) for i in x) if isinstance(x, tuple) else (to_cb(x) if isinstance(x, torch.Tensor) else x)  # noqa: E731
    ours = c(*[conv(i) for i in inputs])
    assert_same(ours, ref, atol=atol)


CONFIGS = [{}, {"num_layers": 2}, {"bidirectional": True}, {"num_layers": 2, "bidirectional": True, "batch_first": True},
           {"bias": False}]


@pytest.mark.parametrize("name", ["RNN", "LSTM", "GRU"])
@pytest.mark.parametrize("kw", CONFIGS, ids=[str(i) for i in range(len(CONFIGS))])
def test_recurrent_layers(name, kw):
    t, c = pair(name, 5, 7, **kw)
    t.eval(), c.eval()
    x = make((3, 6, 5) if kw.get("batch_first") else (6, 3, 5), seed=1)
    compare(t, c, x)
    d = (2 if kw.get("bidirectional") else 1) * kw.get("num_layers", 1)
    h0 = make((d, 3, 7), seed=2)
    compare(t, c, x, (h0, make((d, 3, 7), seed=3)) if name == "LSTM" else h0)
    compare(t, c, x[:, 0] if kw.get("batch_first") else x[:, 0])  # unbatched


@pytest.mark.filterwarnings("ignore:LSTM with projections")
def test_rnn_relu_lstm_proj():
    t, c = pair("RNN", 4, 6, nonlinearity="relu", num_layers=2)
    compare(t, c, make((5, 2, 4), seed=4))
    t, c = pair("LSTM", 4, 8, proj_size=3, num_layers=2, bidirectional=True)
    compare(t, c, make((5, 2, 4), seed=5))


@pytest.mark.parametrize("name", ["LSTM", "GRU"])
def test_packed_sequences(name):
    t, c = pair(name, 4, 5, bidirectional=True, batch_first=True)
    x = make((3, 6, 4), seed=6)
    lengths = [4, 6, 2]
    tp = torch.nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
    cp = nn.utils.rnn.pack_padded_sequence(to_cb(x), lengths, batch_first=True, enforce_sorted=False)
    c.load_state_dict(t.state_dict())
    with torch.no_grad():
        ro, rh = t(tp)
    co, ch = c(cp)
    assert_same(co.data, ro.data, atol=1e-5)
    assert_same(ch, rh, atol=1e-5)
    pad_c, _ = nn.utils.rnn.pad_packed_sequence(co, batch_first=True)
    pad_t, _ = torch.nn.utils.rnn.pad_packed_sequence(ro, batch_first=True)
    assert_same(pad_c, pad_t, atol=1e-5)


@pytest.mark.parametrize("name", ["RNNCell", "LSTMCell", "GRUCell"])
def test_cells(name):
    t, c = pair(name, 4, 6)
    x = make((3, 4), seed=7)
    compare(t, c, x)
    h = make((3, 6), seed=8)
    compare(t, c, x, (h, make((3, 6), seed=9)) if name == "LSTMCell" else h)
    compare(t, c, x[0])


def test_rnn_errors():
    m = nn.LSTM(4, 5)
    with pytest.raises(RuntimeError, match="input_size"):
        m(cb.zeros(3, 2, 7))
    with pytest.raises(RuntimeError, match="Expected hidden size"):
        m(cb.zeros(3, 2, 4), (cb.zeros(2, 2, 5), cb.zeros(1, 2, 5)))
    with pytest.raises(ValueError):
        nn.LSTM(4, 5, proj_size=5)
    # The native time loop checks every shape it is handed (an error, never a panic).
    gi, h0, c0, w = cb.zeros(3, 2, 20), cb.zeros(2, 5), cb.zeros(2, 5), cb.zeros(20, 5)
    bad = [dict(h0=cb.zeros(2, 6), w_hh=cb.zeros(20, 6)),  # h wider than the gates' units, no projection
           dict(b_hh=cb.zeros(7)), dict(mask=cb.ones(2, 2)), dict(w_hr=cb.zeros(5, 3))]
    for kw in bad:
        args = dict(gi=gi, h0=h0, c0=c0, w_hh=w, b_hh=None, w_hr=None, mask=None) | kw
        with pytest.raises(RuntimeError, match="rnn_scan"):
            cb._C.rnn_scan("LSTM", args["gi"], args["h0"], args["c0"], args["w_hh"], args["b_hh"], args["w_hr"],
                           args["mask"], False)


@pytest.mark.filterwarnings("ignore:LSTM with projections")
@pytest.mark.parametrize("name", ["RNN", "LSTM", "GRU"])
@pytest.mark.parametrize("batch", [1, 2, 5, 33])
def test_recurrent_step_paths(name, batch):
    """Each step's h·W_hhᵀ: gemv for one row, W repacked in column panels (4 rows per pass, a
    partial last panel at hidden 37) up to 32 rows, gemm beyond; with and without projections."""
    t, c = pair(name, 12, 37, num_layers=2)
    t.eval(), c.eval()
    compare(t, c, make((7, batch, 12), seed=6), atol=2e-5)
    if name == "LSTM":
        t, c = pair(name, 12, 37, proj_size=19)
        compare(t, c, make((7, batch, 12), seed=7), atol=2e-5)


@pytest.mark.parametrize("name", ["LSTM", "GRU"])
def test_recurrent_weights_changed_between_calls(name):
    """W_hh's panels are kept per weight content: in-place writes, a loaded state_dict and a fresh
    layer of the same shape each give torch's answer."""
    t, c = pair(name, 16, 32, num_layers=2)
    x = make((7, 3, 16), seed=9)
    compare(t, c, x)
    with torch.no_grad():
        t.weight_hh_l0[5, 3] += 1.0
        t.weight_hh_l1.mul_(0.5)
    compare(t, c, x)
    t2, c2 = pair(name, 16, 32, num_layers=2)
    with torch.no_grad():
        for p in t2.parameters():
            p.add_(0.25)
    compare(t2, c2, x)
