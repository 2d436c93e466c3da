"""Quantized GGUF language models on our Rust forward (`src/models/`) over Candle's quantized
matmuls, with KV caches per sequence, batched generation, sampling in Rust and the file's tokenizer."""

from __future__ import annotations

import os
from typing import Iterable, Iterator, List, Optional, Sequence, Union

from .. import _C
from .batching import ContinuousBatcher
from .gguf_tokenizer import GGUFTokenizer


def _is_batch(ids) -> bool:
    # A list of prompts (strings or token lists), not one prompt (a string or a list of ints).
    return not isinstance(ids, str) and isinstance(ids, (list, tuple)) and len(ids) > 0 \
        and all(isinstance(p, (str, list, tuple)) for p in ids)


def _per_prompt(value, n: int, name: str) -> list:
    if isinstance(value, (list, tuple)):
        if len(value) != n:
            raise ValueError(f"{name}: {len(value)} values for {n} prompts")
        return list(value)
    return [value] * n


class GGUFCausalLM:
    """A GGUF causal LM: `llm(input_ids, start_pos=0)` gives the last position's logits,
    `generate`/`stream` produce tokens, `tokenizer` encodes and decodes text."""

    def __init__(self, path, device=None, kv_dtype=None):
        # device: "cpu" (default) or "cuda[:n]" (a CUDA build): the weights stay in the file's
        # quantization there, the KV cache lives on the device, logits come back as device tensors.
        # kv_dtype: the CPU's KV cache elements, float16 (default, as llama.cpp) or float32 (exact
        # keys and values at twice the memory); a GPU's cache is float32.
        self.path = os.fspath(path)
        self.device = _C.device(str(device)) if device is not None else _C.device("cpu")
        self.kv_dtype = kv_dtype
        self._model = _C.GgufLlama(self.path, self.device, kv_dtype)
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
        return (GGUFCausalLM, (self.path, str(self.device), self.kv_dtype))

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

    def batcher(self, max_batch: int = 8, prefill_chunk: int = 256, kv_cache_limit: Optional[int] = None):
        """A `ContinuousBatcher` over this model: requests join and leave between steps (see
        `candle_bind.models.batching`)."""
        return ContinuousBatcher(self, max_batch=max_batch, prefill_chunk=prefill_chunk, kv_cache_limit=kv_cache_limit)

    @property
    def kv_cache_bytes(self) -> int:
        """Bytes the KV caches hold now (every sequence's)."""
        return self._model.kv_cache_bytes

    def stream(self, ids, max_new_tokens: Union[int, Sequence[int]] = 256, temperature: float = 0.0,
               top_k: Optional[int] = None, top_p: Optional[float] = None, repetition_penalty: float = 1.0,
               seed: Union[None, int, Sequence[Optional[int]]] = None, stop: Optional[Iterable[Union[int, str]]] = None,
               max_batch: int = 8, prefill_chunk: int = 256, kv_cache_limit: Optional[int] = None) -> Iterator:
        """Yields new tokens one by one as they are computed. `ids` is the prompt (token ids, or text
        to encode); `temperature=0.0` is greedy; `stop` holds token ids (not yielded; the EOS token is
        one by default) and strings (generation ends once the new text contains one).

        A list of prompts decodes them together (continuous batching: at most `max_batch` at once, a
        finished one's place taken by the next) and yields `(index, token)` pairs; `max_new_tokens`
        and `seed` may then be lists, one per prompt (an int seed gives prompt i `seed + i`). Prompts
        are fed in chunks of `prefill_chunk` tokens; `kv_cache_limit` bounds the caches' bytes."""
        batched = _is_batch(ids)
        prompts = list(ids) if batched else [ids]
        n = len(prompts)
        news = _per_prompt(max_new_tokens, n, "max_new_tokens")
        if seed is None or isinstance(seed, int):
            seeds = [None if seed is None else seed + i for i in range(n)]
        else:
            seeds = _per_prompt(seed, n, "seed")
        stop = None if stop is None else list(stop)
        b = self.batcher(max_batch=max_batch, prefill_chunk=prefill_chunk, kv_cache_limit=kv_cache_limit)
        rids = [b.add(p, news[i], temperature, top_k, top_p, repetition_penalty, seeds[i], stop)
                for i, p in enumerate(prompts)]
        index = {rid: i for i, rid in enumerate(rids)}
        try:
            for rid, token, _ in b:
                if token is not None:
                    yield (index[rid], token) if batched else token
        finally:
            b.close()  # an abandoned stream frees its caches

    def generate(self, ids, max_new_tokens: Union[int, Sequence[int]] = 256, temperature: float = 0.0,
                 top_k: Optional[int] = None, top_p: Optional[float] = None, repetition_penalty: float = 1.0,
                 seed: Union[None, int, Sequence[Optional[int]]] = None, stop: Optional[Iterable[Union[int, str]]] = None,
                 max_batch: int = 8, prefill_chunk: int = 256, kv_cache_limit: Optional[int] = None) -> List:
        """The new tokens only (the prompt is not repeated); for a list of prompts, one list of new
        tokens per prompt, decoded together. Arguments as `stream`."""
        out = self.stream(ids, max_new_tokens, temperature, top_k, top_p, repetition_penalty, seed, stop,
                          max_batch, prefill_chunk, kv_cache_limit)
        if not _is_batch(ids):
            return list(out)
        tokens: List[List[int]] = [[] for _ in ids]
        for i, token in out:
            tokens[i].append(token)
        return tokens

    def chat(self, messages, max_new_tokens: int = 256, **kwargs) -> str:
        """The assistant's reply to `messages` ([{"role": "user", "content": ...}]), through the file's
        chat template; `kwargs` as `generate`."""
        prompt = self.tokenizer.apply_chat_template(messages, add_generation_prompt=True)
        return self.tokenizer.decode(self.generate(prompt, max_new_tokens, **kwargs), skip_special_tokens=True)

    def __repr__(self) -> str:
        name = self.metadata.get("general.name", os.path.basename(self.path))
        return f"GGUFCausalLM({name!r}, architecture={self.architecture!r}, vocab_size={self.vocab_size})"
