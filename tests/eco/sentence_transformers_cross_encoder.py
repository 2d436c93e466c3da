"""sentence-transformers' CrossEncoder over tiny BERT classifiers saved by real torch (one score, and
three labels) with the real all-MiniLM-L6-v2 tokenizer: predict (numpy, tensors, softmax) and rank.

    python sentence_transformers_cross_encoder.py ONE_LABEL_DIR THREE_LABEL_DIR [section ...]
"""

import sys

from sentence_transformers import CrossEncoder

from harness import main, section

QUERY = "How many people live in Berlin?"
DOCS = ["Berlin has a population of 3,520,031 registered inhabitants.",
        "New York City is famous for the Metropolitan Museum of Art.",
        "Berlin is well known for its museums.",
        "Candles burn."]


@section
def score(one_label, three_labels):
    model = CrossEncoder(one_label, device="cpu")
    scores = model.predict([(QUERY, d) for d in DOCS])
    yield "type", [type(scores).__name__, str(scores.dtype), list(scores.shape)]
    yield "scores", scores.tolist()
    yield "tensor_scores", model.predict([(QUERY, d) for d in DOCS], convert_to_tensor=True)
    yield "single", float(model.predict((QUERY, DOCS[0])))
    ranked = model.rank(QUERY, DOCS, return_documents=True)
    yield "rank_ids", [r["corpus_id"] for r in ranked]
    yield "rank_scores", [float(r["score"]) for r in ranked]
    yield "rank_texts", [r["text"] for r in ranked]
    yield "top_2", [r["corpus_id"] for r in model.rank(QUERY, DOCS, top_k=2)]


@section
def labels(one_label, three_labels):
    model = CrossEncoder(three_labels, device="cpu")
    pairs = [(QUERY, d) for d in DOCS]
    yield "logits", model.predict(pairs).tolist()
    yield "softmax", model.predict(pairs, apply_softmax=True).tolist()
    yield "argmax", model.predict(pairs).argmax(axis=1).tolist()


if __name__ == "__main__":
    main(*sys.argv[1:3])
