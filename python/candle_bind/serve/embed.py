"""Sentence embeddings from a Hugging Face encoder folder, as sentence-transformers computes them:
the folder's tokenizer (truncated at `max_seq_length`), BERT on candle_bind's nn layers (`bert.py`), the pooling of
`1_Pooling/config.json` and the `Normalize` module when `modules.json` lists one.

`Encoder.embed` is the whole computation (the Ray recipe calls it directly); `Encoder.__call__` is the
server worker's batch handler: the inputs of every queued request are merged, sorted by length and run
`batch_size` at a time, so concurrent small requests share forwards and pad little."""

from __future__ import annotations

import json
import os
from typing import Any, List, Sequence, Tuple, Union

import numpy as np

from .bert import BertEncoder

_POOLING_KEYS = ("pooling_mode_cls_token", "pooling_mode_mean_tokens", "pooling_mode_max_tokens",
                 "pooling_mode_mean_sqrt_len_tokens", "pooling_mode_lasttoken")


def _read_json(path: str, default: Any) -> Any:
    if not os.path.exists(path):
        return default
    with open(path, encoding="utf-8") as f:
        return json.load(f)


class Encoder:
    """`Encoder(folder).embed(["a sentence", ...])` -> (n, dim) float32, sentence-transformers' numbers."""

    def __init__(self, folder, batch_size: int = 32):
        self.folder = os.fspath(folder)
        self.batch_size = batch_size
        if not os.path.exists(os.path.join(self.folder, "config.json")):
            raise FileNotFoundError(f"{self.folder}: no config.json (expected a Hugging Face encoder folder)")
        try:
            from tokenizers import Tokenizer
        except ImportError:
            raise ImportError("embeddings need the `tokenizers` package: pip install 'candle-bind[serve]'") from None
        config = _read_json(os.path.join(self.folder, "config.json"), {})
        st = _read_json(os.path.join(self.folder, "sentence_bert_config.json"), {})
        modules = _read_json(os.path.join(self.folder, "modules.json"), [])
        limit = int(config.get("max_position_embeddings", 512))
        self.max_seq_length = min(int(st.get("max_seq_length") or limit), limit)
        pool_dir = next((m.get("path", "") for m in modules if m.get("type", "").endswith("Pooling")), "1_Pooling")
        pooling = _read_json(os.path.join(self.folder, pool_dir, "config.json"), {"pooling_mode_mean_tokens": True})
        self.pooling = [k for k in _POOLING_KEYS if pooling.get(k)] or ["pooling_mode_mean_tokens"]
        # sentence-transformers normalises only when the folder's pipeline says so.
        self.normalize = any(m.get("type", "").endswith("Normalize") for m in modules)
        self.tokenizer = Tokenizer.from_file(os.path.join(self.folder, "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(max_length=self.max_seq_length)
        self.pad_id = int(config.get("pad_token_id") or 0)
        self.vocab_size = int(config.get("vocab_size") or self.tokenizer.get_vocab_size())
        self.model = BertEncoder.from_pretrained(self.folder)
        self.dim = self.model.hidden_size * len(self.pooling)

    def __reduce__(self):
        # Ray ships models to its workers by pickling: the folder is enough to rebuild one.
        return (Encoder, (self.folder, self.batch_size))

    def tokenize(self, inputs: Sequence[Union[str, List[int]]]) -> List[List[int]]:
        texts = [(i, x) for i, x in enumerate(inputs) if isinstance(x, str)]
        out: List[List[int]] = [x[: self.max_seq_length] if not isinstance(x, str) else [] for x in inputs]
        if texts:
            for (i, _), enc in zip(texts, self.tokenizer.encode_batch([t for _, t in texts])):
                out[i] = enc.ids
        return out

    def embed_ids(self, ids: List[List[int]]) -> np.ndarray:
        """Embeddings of tokenized inputs, `batch_size` at a time in order of length."""
        result = np.empty((len(ids), self.dim), dtype=np.float32)
        order = sorted(range(len(ids)), key=lambda i: -len(ids[i]))
        for start in range(0, len(order), self.batch_size):
            chunk = order[start:start + self.batch_size]
            width = max(len(ids[i]) for i in chunk)
            tok = np.full((len(chunk), width), self.pad_id, dtype=np.int64)
            mask = np.zeros((len(chunk), width), dtype=np.int64)
            for r, i in enumerate(chunk):
                tok[r, : len(ids[i])] = ids[i]
                mask[r, : len(ids[i])] = 1
            hidden = self.model(tok, mask).numpy()
            result[chunk] = self._pool(hidden, mask)
        return result

    def embed(self, inputs: Sequence[Union[str, List[int]]]) -> np.ndarray:
        return self.embed_ids(self.tokenize(inputs))

    def _pool(self, hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
        m = mask[:, :, None].astype(np.float32)
        lengths = m.sum(1)
        parts = []
        for mode in self.pooling:
            if mode == "pooling_mode_cls_token":
                parts.append(hidden[:, 0])
            elif mode == "pooling_mode_max_tokens":
                parts.append(np.where(m > 0, hidden, -1e9).max(1))
            elif mode == "pooling_mode_lasttoken":
                parts.append(hidden[np.arange(len(hidden)), mask.sum(1) - 1])
            else:
                s = (hidden * m).sum(1)
                parts.append(s / np.maximum(lengths, 1e-9) if mode == "pooling_mode_mean_tokens"
                             else s / np.sqrt(np.maximum(lengths, 1e-9)))
        out = np.concatenate(parts, axis=1).astype(np.float32)
        if self.normalize:
            out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
        return out

    # the server worker's batch handler: payloads are token id lists, one list per input
    def __call__(self, worker, jobs) -> None:
        ids: List[List[int]] = []
        spans: List[Tuple[Any, int, int]] = []
        for job in jobs:
            spans.append((job, len(ids), len(ids) + len(job.payload)))
            ids.extend(job.payload)
        vectors = self.embed_ids(ids)
        for job, a, b in spans:
            if not job.cancelled:
                job.emit("done", (vectors[a:b], sum(len(x) for x in ids[a:b])))

    def __repr__(self) -> str:
        return f"Encoder({self.folder!r}, dim={self.dim}, pooling={self.pooling}, normalize={self.normalize})"

