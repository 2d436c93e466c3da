"""Quantized GGUF language models on Candle's own implementation (candle-transformers'
`quantized_llama`), with a KV cache, sampling in Rust and the file's tokenizer."""

from __future__ import annotations

import os
from typing import Iterable, Iterator, List, Optional, Sequence, Union

from .. import _C
from .gguf_tokenizer import GGUFTokenizer


class GGUFCausalLM:
    """A GGUF causal LM: `llm(input_ids, start_pos=0)` gives the last position's logits,
    `generate`/`stream` produce tokens, `tokenizer` encodes and decodes text."""

    def __init__(self, path, device=None):
        # device: "cpu" (default) or "cuda[:n]" (a CUDA build): the weights stay in the file's
        # quantization there, the KV cache lives on the device, logits come back as device tensors.
        self.path = os.fspath(path)
        self.device = _C.device(str(device)) if device is not None else _C.device("cpu")
        self._model = _C.GgufLlama(self.path, self.device)
        self.metadata = self._model.metadata
        self.architecture: str = self.metadata.get("general.architecture", "")
        self.vocab_size: int = self._model.vocab_size
        # Positions the model takes: its trained context (the rotary tables span at most 32k; LongRoPE
        # files stop at their original context, where the short factors hold).
        self.context_length: int = self._model.max_positions
        self._tokenizer: Optional[GGUFTokenizer] = None

    def __reduce__(self):
        # Pickles as its path (Ray and multiprocessing ship models this way): the file is read again there,
        # with a fresh KV cache.
        return (GGUFCausalLM, (self.path, str(self.device)))

    @property
    def tokenizer(self) -> GGUFTokenizer:
        """The file's own tokenizer (built on first use; needs the `tokenizers` package)."""
        if self._tokenizer is None:
            self._tokenizer = GGUFTokenizer(self.metadata)
        return self._tokenizer

    def __call__(self, input_ids, start_pos: int = 0):
        """Logits (1, vocab) of the last position of `input_ids` ((seq,) or (1, seq) int tensor) placed
        at `start_pos`: the cache keeps earlier positions, and `start_pos=0` starts afresh. One
        sequence at a time (one KV cache)."""
        if start_pos < 0:
            raise ValueError(f"start_pos must be >= 0, got {start_pos}")
        if not isinstance(input_ids, _C.Tensor):
            input_ids = _C.tensor(input_ids)
        return self._model.forward(input_ids, int(start_pos))

    forward = __call__

    def reset(self) -> None:
        """Drops the KV cache (a call with start_pos=0 also starts a fresh one)."""
        self._model.clear_kv_cache()

    def stream(self, ids: Union[str, Sequence[int]], max_new_tokens: int = 256, temperature: float = 0.0,
               top_k: Optional[int] = None, top_p: Optional[float] = None, repetition_penalty: float = 1.0,
               seed: Optional[int] = None, stop: Optional[Iterable[Union[int, str]]] = None) -> Iterator[int]:
        """Yields new tokens one by one as they are computed. `ids` is the prompt (token ids, or text
        to encode); `temperature=0.0` is greedy; `stop` holds token ids (not yielded; the EOS token is
        one by default) and strings (generation ends once the new text contains one)."""
        prompt = self.tokenizer.encode(ids) if isinstance(ids, str) else [int(i) for i in ids]
        if not prompt:
            raise ValueError("generate: the prompt has no tokens")
        if max_new_tokens < 0:
            raise ValueError(f"max_new_tokens must be >= 0, got {max_new_tokens}")
        eos = self.metadata.get("tokenizer.ggml.eos_token_id")
        stop = ([] if eos is None else [eos]) if stop is None else list(stop)
        stop_texts = [s for s in stop if isinstance(s, str)]
        stop_ids = {int(s) for s in stop if not isinstance(s, str)}
        sampler = _C.Sampler(float(temperature), top_k, top_p, float(repetition_penalty), seed)
        penalise = repetition_penalty != 1.0
        context = list(prompt)
        new: List[int] = []
        logits = self._model.step(prompt, 0)
        for n in range(max_new_tokens):
            token = sampler.sample(logits, context if penalise else [])
            if token in stop_ids:
                return
            yield token
            new.append(token)
            context.append(token)
            if stop_texts and any(s in self.tokenizer.decode(new) for s in stop_texts):
                return
            if n + 1 < max_new_tokens:
                logits = self._model.step([token], len(context) - 1)

    def generate(self, ids: Union[str, Sequence[int]], max_new_tokens: int = 256, temperature: float = 0.0,
                 top_k: Optional[int] = None, top_p: Optional[float] = None, repetition_penalty: float = 1.0,
                 seed: Optional[int] = None, stop: Optional[Iterable[Union[int, str]]] = None) -> List[int]:
        """The new tokens only (the prompt is not repeated); arguments as `stream`."""
        return list(self.stream(ids, max_new_tokens, temperature, top_k, top_p, repetition_penalty, seed, stop))

    def chat(self, messages, max_new_tokens: int = 256, **kwargs) -> str:
        """The assistant's reply to `messages` ([{"role": "user", "content": ...}]), through the file's
        chat template; `kwargs` as `generate`."""
        prompt = self.tokenizer.apply_chat_template(messages, add_generation_prompt=True)
        return self.tokenizer.decode(self.generate(prompt, max_new_tokens, **kwargs), skip_special_tokens=True)

    def __repr__(self) -> str:
        name = self.metadata.get("general.name", os.path.basename(self.path))
        return f"GGUFCausalLM({name!r}, architecture={self.architecture!r}, vocab_size={self.vocab_size})"
