"""Indexing, assignment and selection on (8, 32000) logits: torch vs candle_bind in one run, as ratios.

    python benches/bench_indexing.py [--threads N]
"""

from harness import header, row, setup

torch, cb = setup(__doc__)
header("op")

h = torch.randn(8, 16, 32000)
ch = cb.from_numpy(h.numpy())
row("x[:, -1, :] (8,16,32000)", lambda: h[:, -1, :], lambda: ch[:, -1, :], 20000)
logits = torch.randn(8, 32000)
cl = cb.from_numpy(logits.numpy())
mask, cmask = logits > 1.0, cl > 1.0
row("x[mask] = -inf (8,32000)", lambda: logits.__setitem__(mask, float("-inf")),
    lambda: cl.__setitem__(cmask, float("-inf")), 200)
logits = torch.randn(8, 32000)
cl = cb.from_numpy(logits.numpy())
row("topk(50) (8,32000)", lambda: logits.topk(50), lambda: cl.topk(50), 200)
v, _ = logits.topk(50)
cv, _ = cl.topk(50)
row("x[x < v[:, [-1]]] = -inf (8,32000)", lambda: logits.__setitem__(logits < v[:, [-1]], -float("inf")),
    lambda: cl.__setitem__(cl < cv[:, [-1]], -float("inf")), 200)
probs, cprobs = logits.softmax(-1), cl.softmax(-1)
row("multinomial(1) (8,32000)", lambda: torch.multinomial(probs, 1), lambda: cb.multinomial(cprobs, 1), 200)
row("sort(descending) (8,32000)", lambda: logits.sort(descending=True), lambda: cl.sort(descending=True), 50)
idx = torch.randint(0, 32000, (8, 50))
cidx = cb.from_numpy(idx.numpy())
row("gather(-1, idx) (8,32000)->(8,50)", lambda: logits.gather(-1, idx), lambda: cl.gather(-1, cidx), 2000)
row("x[:, 1:4] = y (8,32000)", lambda: logits.__setitem__((slice(None), slice(1, 4)), 0.0),
    lambda: cl.__setitem__((slice(None), slice(1, 4)), 0.0), 5000)
row("x += 1 (8,32000)", lambda: logits.add_(1), lambda: cl.add_(1), 2000)
