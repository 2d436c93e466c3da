"""RNN, LSTM (proj_size), GRU and their cells with torch's parameter names, shapes and outputs.

The input projection of every time step runs as one matmul per layer and direction; the recurrence
then walks the steps. Packed sequences are run padded with a per-row length mask, so each row
stops (and, reversed, starts) at its own length.
"""

from __future__ import annotations

import math

from ... import _C
from .. import functional as F
from .. import init
from ..parameter import Parameter
from ..utils.rnn import PackedSequence, pad_packed_sequence
from .module import Module

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


def _step(mode, gi, h, c, w_hh, b_hh, w_hr):
    """One time step given the precomputed input projection `gi` (N, G·H)."""
    gh = h.matmul(w_hh.t())
    if b_hh is not None:
        gh += b_hh
    if mode in ("RNN_TANH", "RNN_RELU"):
        pre = gi + gh
        return (pre.tanh() if mode == "RNN_TANH" else pre.relu()), None
    if mode == "LSTM":
        i, f, g, o = (gi + gh).chunk(4, -1)
        c2 = f.sigmoid() * c + i.sigmoid() * g.tanh()
        h2 = o.sigmoid() * c2.tanh()
        if w_hr is not None:
            h2 = h2.matmul(w_hr.t())
        return h2, c2
    ir, iz, inn = gi.chunk(3, -1)
    hr, hz, hn = gh.chunk(3, -1)
    r = (ir + hr).sigmoid()
    z = (iz + hz).sigmoid()
    n = (inn + r * hn).tanh()
    return (1 - z) * n + z * h, None


class RNNBase(Module):
    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__()
        self.mode = mode
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.bias, self.batch_first, self.dropout = bias, batch_first, float(dropout)
        self.bidirectional, self.proj_size = bidirectional, proj_size
        if not 0 <= dropout <= 1:
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of an element being zeroed")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        gate = _GATES[mode] * hidden_size
        real_hidden = proj_size if proj_size > 0 else hidden_size
        dirs = 2 if bidirectional else 1
        self._flat_weights_names = []
        kw = dict(device=device, dtype=dtype)
        for layer in range(num_layers):
            for d in range(dirs):
                sfx = "_reverse" if d == 1 else ""
                layer_in = input_size if layer == 0 else real_hidden * dirs
                names = [f"weight_ih_l{layer}{sfx}", f"weight_hh_l{layer}{sfx}"]
                params = [Parameter(_C.empty(gate, layer_in, **kw)), Parameter(_C.empty(gate, real_hidden, **kw))]
                if bias:
                    names += [f"bias_ih_l{layer}{sfx}", f"bias_hh_l{layer}{sfx}"]
                    params += [Parameter(_C.empty(gate, **kw)), Parameter(_C.empty(gate, **kw))]
                if proj_size > 0:
                    names.append(f"weight_hr_l{layer}{sfx}")
                    params.append(Parameter(_C.empty(proj_size, hidden_size, **kw)))
                for n, p in zip(names, params):
                    setattr(self, n, p)
                self._flat_weights_names.extend(names)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for w in self.parameters():
            init.uniform_(w, -stdv, stdv)

    def extra_repr(self) -> str:
        s = "{input_size}, {hidden_size}"
        if self.proj_size != 0:
            s += ", proj_size={proj_size}"
        if self.num_layers != 1:
            s += ", num_layers={num_layers}"
        if self.bias is not True:
            s += ", bias={bias}"
        if self.batch_first is not False:
            s += ", batch_first={batch_first}"
        if self.dropout != 0:
            s += ", dropout={dropout}"
        if self.bidirectional is not False:
            s += ", bidirectional={bidirectional}"
        return s.format(**self.__dict__)

    def _weights(self, layer, d):
        sfx = "_reverse" if d == 1 else ""
        get = lambda n: getattr(self, f"{n}_l{layer}{sfx}") if self.bias or "bias" not in n else None  # noqa: E731
        w_hr = getattr(self, f"weight_hr_l{layer}{sfx}") if self.proj_size > 0 else None
        return get("weight_ih"), get("weight_hh"), get("bias_ih"), get("bias_hh"), w_hr

    def forward(self, input, hx=None):
        packed = isinstance(input, PackedSequence)
        lengths = None
        if packed:
            padded, lengths_t = pad_packed_sequence(input, batch_first=False)
            lengths = lengths_t.tolist()
            x = padded
            sorted_indices = input.sorted_indices
            batched = True
        else:
            batched = input.dim() == 3
            if input.dim() not in (2, 3):
                raise ValueError(f"{type(self).__name__}: Expected input to be 2D or 3D, got {input.dim()}D instead")
            x = input if batched else input.unsqueeze(1)
            if batched and self.batch_first:
                x = x.transpose(0, 1)
        L, N = x.shape[0], x.shape[1]
        if x.shape[2] != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, got {x.shape[2]}")
        dirs = 2 if self.bidirectional else 1
        real_hidden = self.proj_size if self.proj_size > 0 else self.hidden_size
        is_lstm = self.mode == "LSTM"
        h0, c0 = (hx if hx is not None else (None, None)) if is_lstm else (hx, None)
        if h0 is not None and not batched:
            h0 = h0.unsqueeze(1)
            c0 = c0.unsqueeze(1) if c0 is not None else None
        exp_h = (self.num_layers * dirs, N, real_hidden)
        if h0 is None:
            h0 = _C.zeros(*exp_h, dtype=x.dtype, device=x.device)
        elif tuple(h0.shape) != exp_h:
            raise RuntimeError(f"Expected hidden size {exp_h}, got {list(h0.shape)}")
        if is_lstm:
            exp_c = (self.num_layers * dirs, N, self.hidden_size)
            if c0 is None:
                c0 = _C.zeros(*exp_c, dtype=x.dtype, device=x.device)
            elif tuple(c0.shape) != exp_c:
                raise RuntimeError(f"Expected hidden size {exp_c}, got {list(c0.shape)}")
        mask = None
        if lengths is not None:
            t_idx = _C.arange(L, device=x.device).unsqueeze(1)
            mask = (t_idx < _C.tensor(lengths, device=x.device).unsqueeze(0)).unsqueeze(-1).to(x.dtype)  # (L, N, 1)
        h_n, c_n = [], []
        layer_in = x
        for layer in range(self.num_layers):
            outs = []
            for d in range(dirs):
                w_ih, w_hh, b_ih, b_hh, w_hr = self._weights(layer, d)
                gi_all = F.linear(layer_in, w_ih, b_ih)  # all steps at once: (L, N, G·H)
                h = h0[layer * dirs + d]
                c = c0[layer * dirs + d] if is_lstm else None
                if gi_all.dtype != _C.float64:
                    # The time loop in Rust (f32 math on the CPU, the input's dtype elsewhere);
                    # float64 keeps the exact loop below.
                    m2 = mask.reshape(L, N) if mask is not None else None
                    out, h, c = _C.rnn_scan(self.mode, gi_all.contiguous(), h.contiguous(), c.contiguous() if c is not None else None,
                                            w_hh, b_hh, w_hr, m2, d == 1)
                    outs.append(out)
                    h_n.append(h)
                    if is_lstm:
                        c_n.append(c)
                    continue
                steps = [None] * L
                order = range(L - 1, -1, -1) if d == 1 else range(L)
                for t in order:
                    h2, c2 = _step(self.mode, gi_all[t], h, c, w_hh, b_hh, w_hr)
                    if mask is not None:
                        m = mask[t]
                        h2 = h2 * m + h * (1 - m)
                        if c2 is not None:
                            c2 = c2 * m + c * (1 - m)
                        steps[t] = h2 * m
                    else:
                        steps[t] = h2
                    h, c = h2, c2
                outs.append(_C.stack(steps, 0))
                h_n.append(h)
                if is_lstm:
                    c_n.append(c)
            layer_out = outs[0] if dirs == 1 else _C.cat(outs, -1)
            if self.dropout > 0 and self.training and layer < self.num_layers - 1:
                layer_out = F.dropout(layer_out, self.dropout, True)
            layer_in = layer_out
        output = layer_in
        h_n = _C.stack(h_n, 0)
        c_n = _C.stack(c_n, 0) if is_lstm else None
        if packed:
            # Re-pack in the input's own order (its batch_sizes and sorted_indices).
            order = sorted_indices.tolist() if sorted_indices is not None else list(range(N))
            data = [output[t].index_select(0, _C.tensor(order[:bs], dtype=_C.int64, device=output.device))
                    for t, bs in enumerate(input.batch_sizes.tolist())]
            output = PackedSequence(_C.cat(data, 0), input.batch_sizes, input.sorted_indices, input.unsorted_indices)
        elif not batched:
            output = output.squeeze(1)
            h_n = h_n.squeeze(1)
            c_n = c_n.squeeze(1) if c_n is not None else None
        elif self.batch_first:
            output = output.transpose(0, 1)
        return (output, (h_n, c_n)) if is_lstm else (output, h_n)


class RNN(RNNBase):
    def __init__(self, input_size, hidden_size, num_layers=1, nonlinearity="tanh", bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, device=None, dtype=None):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        self.nonlinearity = nonlinearity
        super().__init__("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", input_size, hidden_size, num_layers, bias,
                         batch_first, dropout, bidirectional, 0, device, dtype)


class LSTM(RNNBase):
    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         proj_size, device, dtype)


class GRU(RNNBase):
    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, device=None, dtype=None):
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional, 0,
                         device, dtype)


class _CellBase(Module):
    _mode = "RNN_TANH"

    def __init__(self, input_size, hidden_size, bias=True, num_chunks=1, device=None, dtype=None):
        super().__init__()
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        kw = dict(device=device, dtype=dtype)
        self.weight_ih = Parameter(_C.empty(num_chunks * hidden_size, input_size, **kw))
        self.weight_hh = Parameter(_C.empty(num_chunks * hidden_size, hidden_size, **kw))
        if bias:
            self.bias_ih = Parameter(_C.empty(num_chunks * hidden_size, **kw))
            self.bias_hh = Parameter(_C.empty(num_chunks * hidden_size, **kw))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        stdv = 1.0 / math.sqrt(hidden_size) if hidden_size > 0 else 0
        for w in self.parameters():
            init.uniform_(w, -stdv, stdv)

    def extra_repr(self) -> str:
        s = "{input_size}, {hidden_size}"
        if self.bias is not True:
            s += ", bias={bias}"
        return s.format(**self.__dict__)

    def _run(self, input, h, c):
        batched = input.dim() == 2
        x = input if batched else input.unsqueeze(0)
        if h is None:
            h = _C.zeros(x.shape[0], self.hidden_size, dtype=x.dtype, device=x.device)
        elif not batched:
            h = h.unsqueeze(0)
        if self._mode == "LSTM":
            if c is None:
                c = _C.zeros(x.shape[0], self.hidden_size, dtype=x.dtype, device=x.device)
            elif not batched:
                c = c.unsqueeze(0)
        gi = F.linear(x, self.weight_ih, self.bias_ih)
        h2, c2 = _step(self._mode, gi, h, c, self.weight_hh, self.bias_hh, None)
        if not batched:
            h2 = h2.squeeze(0)
            c2 = c2.squeeze(0) if c2 is not None else None
        return h2, c2


class RNNCell(_CellBase):
    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)
        self.nonlinearity = nonlinearity
        self._mode = "RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU"

    def forward(self, input, hx=None):
        return self._run(input, hx, None)[0]


class LSTMCell(_CellBase):
    _mode = "LSTM"

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input, hx=None):
        h, c = hx if hx is not None else (None, None)
        return self._run(input, h, c)


class GRUCell(_CellBase):
    _mode = "GRU"

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input, hx=None):
        return self._run(input, hx, None)[0]
