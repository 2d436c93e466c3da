"""Semantic search with the real all-MiniLM-L6-v2 weights, written as a plain PyTorch script
(`import torch`, `safetensors.torch.load_file`, `torch.no_grad`). Run it on torch, or unchanged on
Candle:

    python examples/swap/embed.py                        # torch
    python -m candle_bind run examples/swap/embed.py     # candle_bind (torch need not be installed)
"""

import os
import sys

import torch
from safetensors.torch import load_file

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from minilm import build_bert, load_config, model_dir, sentence_embeddings, tokenize  # noqa: E402

corpus = [
    "A man is eating food.",
    "A man is riding a horse.",
    "The new movie is awesome.",
    "A monkey is playing drums.",
    "Two men pushed carts through the woods.",
]
queries = ["Someone is having a meal.", "A film everyone loves.", "An animal makes music."]

model = build_bert(torch, load_config())
model.load_state_dict(load_file(os.path.join(model_dir(), "model.safetensors")))
model.eval()

with torch.no_grad():
    ids, mask = tokenize(corpus + queries)
    emb = sentence_embeddings(torch, model, torch.tensor(ids), torch.tensor(mask))
    docs, qs = emb[: len(corpus)], emb[len(corpus):]
    scores = qs @ docs.T
    best = scores.topk(2, dim=1)

for q, score_row, idx_row in zip(queries, best.values.tolist(), best.indices.tolist()):
    print(f"# {q!r} -> {corpus[idx_row[0]]!r} ({score_row[0]:.3f})")
print("logits", [round(v, 6) for v in scores.flatten().tolist()])
print("tokens", best.indices.tolist())
