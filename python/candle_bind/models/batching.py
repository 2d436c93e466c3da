"""Continuous batching for GGUF language models: many sequences decoded together, one forward per
step over all live sequences, each with its own KV cache slot.

Sequences join and leave between steps: a finished one frees its slot (and its cache's memory) at
once, and a waiting one takes it at the next step. Prompts are fed in fixed chunks of
`prefill_chunk` tokens, so a long prompt does not stall the sequences already decoding; how many
prompt tokens one step takes is bounded by the same figure. The KV caches' memory is bounded by
`kv_cache_limit` (bytes): a sequence joins only when its worst case (prompt plus `max_new_tokens`
positions, as the cache grows) fits beside the live ones' worst cases.

A sequence's numbers do not depend on its neighbours (each row of the quantized products is computed
alone, attention reads only its own cache, the chunking of its prompt is the same alone or batched),
so greedy decoding gives a sequence the same tokens in any batch as alone. (Weights stored as F32,
F16 or BF16 go through a float gemm whose blocking depends on the row count: there the last bits
may differ.)
"""

from __future__ import annotations

from collections import deque
from typing import Deque, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

from .. import _C

Prompt = Union[str, Sequence[int]]


class _Request:
    __slots__ = ("rid", "prompt", "max_new", "sampler", "penalise", "stop_ids", "stop_texts",
                 "new", "fed", "slot", "finish_reason", "need")

    def __init__(self, rid, prompt, max_new, sampler, penalise, stop_ids, stop_texts, need):
        self.rid = rid
        self.prompt: List[int] = prompt
        self.max_new: int = max_new
        self.sampler = sampler
        self.penalise: bool = penalise
        self.stop_ids = stop_ids
        self.stop_texts = stop_texts
        self.new: List[int] = []
        self.fed = 0                      # positions written to the cache
        self.slot: Optional[int] = None
        self.finish_reason: Optional[str] = None
        self.need = need                  # KV bytes at its longest


class ContinuousBatcher:
    """Decodes the requests `add`ed to it together. `step()` runs one forward over every live
    sequence and returns that step's events, `(request id, token, finish_reason)`: a new token with
    `finish_reason` None, or `token` None and a reason ("stop": a stop token or text, "length":
    `max_new_tokens` reached, "cancelled") when the request ends. Iterating runs steps until every
    request has ended. Thread-compatible, not thread-safe: one thread drives it."""

    def __init__(self, llm, max_batch: int = 8, prefill_chunk: int = 256, kv_cache_limit: Optional[int] = None):
        if max_batch < 1:
            raise ValueError(f"max_batch must be >= 1, got {max_batch}")
        if prefill_chunk < 1:
            raise ValueError(f"prefill_chunk must be >= 1, got {prefill_chunk}")
        if kv_cache_limit is not None and kv_cache_limit <= 0:
            raise ValueError(f"kv_cache_limit must be a positive number of bytes, got {kv_cache_limit}")
        self.llm = llm
        self.max_batch = int(max_batch)
        self.prefill_chunk = int(prefill_chunk)
        self.kv_cache_limit = kv_cache_limit
        self._waiting: Deque[_Request] = deque()
        self._live: List[_Request] = []
        self._requests: Dict[int, _Request] = {}
        self._next_id = 0
        self._ended: List[Tuple[int, Optional[int], Optional[str]]] = []

    # -- requests ---------------------------------------------------------------------------------
    def add(self, prompt: Prompt, max_new_tokens: int = 256, temperature: float = 0.0, top_k: Optional[int] = None,
            top_p: Optional[float] = None, repetition_penalty: float = 1.0, seed: Optional[int] = None,
            stop: Optional[Iterable[Union[int, str]]] = None) -> int:
        """Queues one request (arguments as `GGUFCausalLM.stream`); returns its id."""
        llm = self.llm
        ids = llm.tokenizer.encode(prompt) if isinstance(prompt, str) else [int(i) for i in prompt]
        if not ids:
            raise ValueError("generate: the prompt has no tokens")
        if max_new_tokens < 0:
            raise ValueError(f"max_new_tokens must be >= 0, got {max_new_tokens}")
        bad = next((i for i in ids if i < 0 or i >= llm.vocab_size), None)
        if bad is not None:
            raise IndexError(f"token id {bad} is out of range for a vocabulary of {llm.vocab_size}")
        if len(ids) > llm.context_length:
            raise ValueError(f"the prompt has {len(ids)} tokens, the model holds {llm.context_length} positions")
        # The sequence stops at the model's context at the latest.
        max_new = min(int(max_new_tokens), llm.context_length - len(ids) + 1)
        eos = llm.metadata.get("tokenizer.ggml.eos_token_id")
        stop = ([] if eos is None else [eos]) if stop is None else list(stop)
        sampler = _C.Sampler(float(temperature), top_k, top_p, float(repetition_penalty), seed)
        need = llm._model.kv_bytes_for(len(ids) + max(max_new - 1, 0))  # the cache's own growth rule
        if self.kv_cache_limit is not None and need > self.kv_cache_limit:
            raise ValueError(f"this request's KV cache needs up to {need} bytes, above kv_cache_limit={self.kv_cache_limit}")
        rid = self._next_id
        self._next_id += 1
        req = _Request(rid, ids, max_new, sampler, repetition_penalty != 1.0,
                       {int(s) for s in stop if not isinstance(s, str)}, [s for s in stop if isinstance(s, str)], need)
        self._requests[rid] = req
        self._waiting.append(req)
        return rid

    def cancel(self, rid: int) -> None:
        """Ends request `rid` now (its slot is free for the next step); unknown or ended ids are ignored."""
        req = self._requests.get(rid)
        if req is not None and req.finish_reason is None:
            if req in self._waiting:
                self._waiting.remove(req)
            self._finish(req, "cancelled")

    def tokens(self, rid: int) -> List[int]:
        """The tokens request `rid` has generated so far."""
        return list(self._requests[rid].new)

    @property
    def pending(self) -> int:
        """Requests that have not ended (waiting or live)."""
        return len(self._waiting) + len(self._live)

    @property
    def live(self) -> int:
        return len(self._live)

    @property
    def kv_cache_bytes(self) -> int:
        """Bytes the model's KV caches hold now."""
        return self.llm._model.kv_cache_bytes

    # -- stepping ---------------------------------------------------------------------------------
    def _finish(self, req: _Request, reason: str) -> None:
        req.finish_reason = reason
        if req in self._live:
            self._live.remove(req)
        if req.slot is not None:
            self.llm._model.release(req.slot)
            req.slot = None
        self._ended.append((req.rid, None, reason))

    def _admit(self) -> None:
        used = {r.slot for r in self._live}
        budget = None if self.kv_cache_limit is None else self.kv_cache_limit - sum(r.need for r in self._live)
        while self._waiting and len(self._live) < self.max_batch:
            req = self._waiting[0]
            if budget is not None and req.need > budget:
                break  # first come, first served: the head waits for memory
            self._waiting.popleft()
            if req.max_new == 0:
                self._finish(req, "length")
                continue
            # Slot 0 is GGUFCausalLM.__call__'s own cache.
            req.slot = next(s for s in range(1, len(used) + 2) if s not in used)
            used.add(req.slot)
            self._live.append(req)
            if budget is not None:
                budget -= req.need

    def step(self) -> List[Tuple[int, Optional[int], Optional[str]]]:
        """One forward over the live sequences (after letting waiting ones join); its events."""
        self._admit()
        events, self._ended = self._ended, []
        if not self._live:
            return events
        entries, owners = [], []
        prompt_tokens = 0
        for req in self._live:
            if req.fed < len(req.prompt):
                # A prompt chunk, if this step still has room for prompt tokens (one at least).
                chunk = req.prompt[req.fed:req.fed + self.prefill_chunk]
                if prompt_tokens and prompt_tokens + len(chunk) > self.prefill_chunk:
                    continue
                prompt_tokens += len(chunk)
            else:
                chunk = [req.new[-1]]
            entries.append((req.slot, chunk, req.fed))
            owners.append(req)
        logits = self.llm._model.step_batch(entries)
        for row, (req, (_, chunk, _)) in enumerate(zip(owners, entries)):
            req.fed += len(chunk)
            if req.fed < len(req.prompt):
                continue  # more of the prompt to come
            token = req.sampler.sample(logits[row], req.prompt + req.new if req.penalise else [])
            if token in req.stop_ids:
                self._finish(req, "stop")
                continue
            req.new.append(token)
            events.append((req.rid, token, None))
            if req.stop_texts and any(s in self.llm.tokenizer.decode(req.new) for s in req.stop_texts):
                self._finish(req, "stop")
            elif len(req.new) >= req.max_new:
                self._finish(req, "length")
        events += self._ended
        self._ended = []
        return events

    def __iter__(self) -> Iterator[Tuple[int, Optional[int], Optional[str]]]:
        while self.pending or self._ended:
            yield from self.step()

    def close(self) -> None:
        """Cancels what is left and frees every slot."""
        for req in list(self._waiting) + list(self._live):
            self.cancel(req.rid)
        self._ended = []
