"""BERT on candle-transformers' own implementation (`bert::BertModel`): a Hugging Face BERT folder
(config.json + model.safetensors) with the whole forward in Rust."""

from __future__ import annotations

import os

from .. import _C


class Bert:
    """`Bert.from_pretrained(folder)(input_ids, attention_mask=None, token_type_ids=None)` gives the
    last hidden state (batch, seq, hidden), as transformers' `BertModel(...).last_hidden_state`."""

    def __init__(self, weights, config_json: str):
        self._weights, self._config_json = os.fspath(weights), config_json
        self._model = _C.Bert(self._weights, config_json)
        self.hidden_size: int = self._model.hidden_size

    def __reduce__(self):
        # Pickles as its files (Ray and multiprocessing ship models this way); loaded again on the other side.
        return (Bert, (self._weights, self._config_json))

    @classmethod
    def from_pretrained(cls, folder) -> "Bert":
        folder = os.fspath(folder)
        with open(os.path.join(folder, "config.json"), encoding="utf-8") as f:
            config = f.read()
        return cls(os.path.join(folder, "model.safetensors"), config)

    def __call__(self, input_ids, attention_mask=None, token_type_ids=None):
        def as_tensor(x):
            return x if x is None or isinstance(x, _C.Tensor) else _C.tensor(x)

        return self._model.forward(as_tensor(input_ids), as_tensor(attention_mask), as_tensor(token_type_ids))

    forward = __call__

    def __repr__(self) -> str:
        return f"Bert(hidden_size={self.hidden_size})"
