"""candle_bind demo: sentence embeddings with the real all-MiniLM-L6-v2 weights (safetensors),
a BERT written as ordinary PyTorch model code, running on Candle through `import candle_bind as torch`."""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import candle_bind as torch  # noqa: E402 - the whole point: torch's API, Candle underneath
from candle_bind.safetensors import load_file  # noqa: E402

from minilm import build_bert, load_config, model_dir, sentence_embeddings, tokenize  # noqa: E402

sentences = [
    "A man is eating food.",
    "A man is eating a piece of bread.",
    "The new movie is awesome.",
    "The new movie is so great.",
    "A monkey is playing drums.",
]

t0 = time.perf_counter()
model = build_bert(torch, load_config()).eval()
missing = model.load_state_dict(load_file(os.path.join(model_dir(), "model.safetensors")))
t1 = time.perf_counter()
ids, mask = tokenize(sentences)
with torch.no_grad():
    emb = sentence_embeddings(torch, model, torch.tensor(ids), torch.tensor(mask))
t2 = time.perf_counter()

print(f"loaded all-MiniLM-L6-v2 ({sum(p.numel() for p in model.parameters()) / 1e6:.1f}M parameters) in {t1 - t0:.2f} s; "
      f"embedded {len(sentences)} sentences in {(t2 - t1) * 1000:.1f} ms")
print("embeddings:", emb.shape, emb.dtype)
sim = emb @ emb.T
print("cosine similarity:")
for i, s in enumerate(sentences):
    best = max((j for j in range(len(sentences)) if j != i), key=lambda j: sim[i, j].item())
    row = " ".join(f"{sim[i, j].item():5.2f}" for j in range(len(sentences)))
    print(f"  {row}   {s!r:38} ~ {sentences[best]!r}")
