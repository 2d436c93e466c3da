"""LSTM and GRU language models written as ordinary PyTorch code, in the shape of PyTorch's
word_language_model example: embedding, multi-layer RNN, decoder tied to the embedding, hidden state
from `weight.new_zeros`, and its generate loop (`input.fill_`, multinomial over `exp(output / T)`).

    python rnn_lm.py save ckpt.pt  |  python rnn_lm.py ckpt.pt  |  python -m candle_bind run rnn_lm.py ckpt.pt
"""

import sys

import torch
import torch.nn as nn
import torch.nn.functional as F


class RNNModel(nn.Module):
    """Container module with an encoder, a recurrent module, and a decoder."""

    def __init__(self, rnn_type, ntoken, ninp, nhid, nlayers, dropout=0.5, tie_weights=False):
        super().__init__()
        self.ntoken = ntoken
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        if rnn_type in ["LSTM", "GRU"]:
            self.rnn = getattr(nn, rnn_type)(ninp, nhid, nlayers, dropout=dropout)
        else:
            nonlinearity = {"RNN_TANH": "tanh", "RNN_RELU": "relu"}[rnn_type]
            self.rnn = nn.RNN(ninp, nhid, nlayers, nonlinearity=nonlinearity, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)
        if tie_weights:
            if nhid != ninp:
                raise ValueError("When using the tied flag, nhid must be equal to emsize")
            self.decoder.weight = self.encoder.weight
        self.init_weights()
        self.rnn_type = rnn_type
        self.nhid = nhid
        self.nlayers = nlayers

    def init_weights(self):
        initrange = 0.1
        nn.init.uniform_(self.encoder.weight, -initrange, initrange)
        nn.init.zeros_(self.decoder.bias)
        nn.init.uniform_(self.decoder.weight, -initrange, initrange)

    def forward(self, input, hidden):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        output = self.drop(output)
        decoded = self.decoder(output)
        decoded = decoded.view(-1, self.ntoken)
        return F.log_softmax(decoded, dim=1), hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        if self.rnn_type == "LSTM":
            return (weight.new_zeros(self.nlayers, bsz, self.nhid), weight.new_zeros(self.nlayers, bsz, self.nhid))
        return weight.new_zeros(self.nlayers, bsz, self.nhid)


NTOKENS, EMSIZE, NLAYERS = 2000, 256, 2


def models():
    return {kind: RNNModel(kind, NTOKENS, EMSIZE, EMSIZE, NLAYERS, dropout=0.2, tie_weights=True)
            for kind in ("LSTM", "GRU")}


def save_checkpoint(path):
    torch.manual_seed(0)
    built = models()
    with torch.no_grad():  # wider weights than the init, so that the models have preferences
        for model in built.values():
            for p in model.parameters():
                p.mul_(4)
    torch.save({kind: m.state_dict() for kind, m in built.items()}, path)


def load(path):
    checkpoint = torch.load(path, map_location="cpu")
    built = models()
    for kind, model in built.items():
        model.load_state_dict(checkpoint[kind])
        model.eval()
    return built


@torch.no_grad()
def generate(model, words, temperature=1.0, greedy=True, seed=1111):
    torch.manual_seed(seed)
    hidden = model.init_hidden(1)
    input = torch.randint(NTOKENS, (1, 1), dtype=torch.long) if not greedy else torch.tensor([[7]])
    out = []
    for _ in range(words):
        output, hidden = model(input, hidden)
        if greedy:
            word_idx = output.argmax(dim=-1)[0]
        else:
            word_weights = output.squeeze().div(temperature).exp().cpu()
            word_idx = torch.multinomial(word_weights, 1)[0]
        input.fill_(word_idx)
        out.append(word_idx.item())
    return out


@torch.no_grad()
def infer(models):
    result = {}
    for kind, model in models.items():
        batch = (torch.arange(35 * 4).view(35, 4) * 37) % NTOKENS  # (seq, batch), like batchify's
        output, hidden = model(batch, model.init_hidden(4))
        result[f"logits_{kind}"] = output[-4:, :8].flatten().tolist()
        result[f"tokens_{kind}"] = generate(model, 30)
        result[f"sampled_{kind}"] = len(generate(model, 10, greedy=False))
    return result


if __name__ == "__main__":
    if sys.argv[1] == "save":
        save_checkpoint(sys.argv[2])
    else:
        for k, v in infer(load(sys.argv[1])).items():
            print(k, v)
