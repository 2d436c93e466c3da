"""A tiny GPT-style decoder written as ordinary PyTorch code (causal SDPA, weight tying, top-k
sampling); prints logits and greedy tokens. Run under torch and under `python -m candle_bind run`."""

import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import Tensor


class Block(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(approximate="tanh"), nn.Linear(4 * d, d))
        self.h = h

    def forward(self, x: Tensor) -> Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (z.view(b, t, self.h, d // self.h).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).contiguous().view(b, t, d))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, vocab=64, d=32, h=4, layers=2, ctx=32):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(ctx, d)
        self.blocks = nn.ModuleList([Block(d, h) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        self.lm_head.weight = self.wte.weight  # tied

    def forward(self, idx):
        pos = torch.arange(idx.shape[1])
        x = self.wte(idx) + self.wpe(pos)
        for blk in self.blocks:
            x = blk(x)
        return self.lm_head(self.ln_f(x))


@torch.no_grad()
def main(path):
    model = GPT()
    model.load_state_dict(torch.load(path, map_location="cpu", weights_only=True))
    model.eval()
    idx = torch.tensor([[1, 5, 9]])
    logits = model(idx)
    print("logits", " ".join(f"{v:.5f}" for v in logits[0, -1, :8].tolist()))
    for _ in range(8):
        nxt = model(idx)[:, -1, :]
        v, _ = torch.topk(nxt, 5)
        nxt[nxt < v[:, [-1]]] = -float("inf")
        idx = torch.cat([idx, nxt.argmax(-1, keepdim=True)], dim=1)
    print("tokens", idx[0].tolist())


if __name__ == "__main__":
    main(sys.argv[1])
