"""Text generation for the chat and completions endpoints, on the worker thread: continuous batching
over a GGUF model's KV cache slots, the sampling of each choice, text released as it becomes final (whole UTF-8 characters, nothing that
might turn out to start a stop string), stop strings cut out, and log-probabilities."""

from __future__ import annotations

import random
import time
from collections import deque
from dataclasses import dataclass
from typing import Deque, Dict, List, Optional, Tuple

import numpy as np

from .. import _C
from .engine import Job, Worker
from .errors import APIError
from .protocol import Sampling


@dataclass
class GenTask:
    prompts: List[List[int]]       # token ids, one list per prompt
    max_tokens: List[int]          # new tokens allowed for each prompt
    sampling: Sampling
    echo: List[str]                # text put before each prompt's completions ("" without echo)


def _byte_decoder() -> Dict[str, int]:
    """GPT-2's byte-level alphabet reversed: a token piece's characters to the bytes they stand for."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(bs, cs)}


class TextOut:
    """Decodes one choice's tokens into text released piece by piece: a piece is held back while it
    ends in half a UTF-8 character or could be the start of a stop string; a stop string ends it."""

    def __init__(self, tokenizer, stops: List[str]):
        self.tok = tokenizer
        self.stops = stops
        self.ids: List[int] = []
        self.text = ""            # decoded so far
        self.sent = 0             # characters of `text` released
        self._prefix = 0          # ids[_prefix:_read] decode to the tail of `text` (context for the next piece)
        self._read = 0

    def _decode(self, ids: List[int]) -> str:
        return self.tok.decode(ids, skip_special_tokens=True)

    def push(self, token: int) -> Tuple[str, bool]:
        """(newly released text, whether a stop string was reached)."""
        self.ids.append(token)
        before = self._decode(self.ids[self._prefix:self._read])
        after = self._decode(self.ids[self._prefix:])
        if len(after) > len(before) and not after.endswith("\ufffd"):
            searched = len(self.text)
            self.text += after[len(before):]
            self._prefix, self._read = self._read, len(self.ids)
            if self.stops:
                longest = max(len(s) for s in self.stops)
                start = max(0, searched - longest + 1)
                hits = [i for i in (self.text.find(s, start) for s in self.stops) if i >= 0]
                if hits:
                    self.text = self.text[:min(hits)]
                    return self._release(len(self.text)), True
        return self._release(len(self.text) - self._held()), False

    def _held(self) -> int:
        for n in range(min(len(self.text), max((len(s) for s in self.stops), default=1) - 1), 0, -1):
            tail = self.text[-n:]
            if any(s.startswith(tail) for s in self.stops):
                return n
        return 0

    def _release(self, upto: int) -> str:
        upto = max(upto, self.sent)
        piece = self.text[self.sent:upto]
        self.sent = upto
        return piece

    def finish(self, stopped: bool) -> str:
        """The rest of the text once generation ended (a trailing half character included)."""
        if not stopped:
            rest = self._decode(self.ids[self._prefix:])[len(self._decode(self.ids[self._prefix:self._read])):]
            self.text += rest
        return self._release(len(self.text))


class _Choice:
    """One choice of one request in the batch: its prompt, KV slot, sampler and text. The generator
    feeds its prompt in chunks, then one token a step; `take` samples from its row of a step's logits."""

    def __init__(self, gen: "Generator", state: "_JobState", prompt: List[int], budget: int, index: int,
                 seed: int, offset: int):
        s = state.task.sampling
        self.gen, self.state, self.job = gen, state, state.job
        self.prompt, self.budget, self.index, self.offset = prompt, budget, index, offset
        self.s = s
        greedy = s.temperature == 0.0 or s.top_p == 0.0 or s.top_k == 1
        self.sampler = _C.Sampler(0.0 if greedy else s.temperature, s.top_k or None,
                                  s.top_p if s.top_p is not None and s.top_p < 1.0 else None, s.repeat_penalty, seed)
        self.adjust = bool(s.presence_penalty or s.frequency_penalty or s.logit_bias)
        self.bias_ids = np.fromiter(s.logit_bias.keys(), dtype=np.int64, count=len(s.logit_bias))
        self.bias_vals = np.fromiter(s.logit_bias.values(), dtype=np.float32, count=len(s.logit_bias))
        self.counts: Dict[int, int] = {}
        self.context = list(prompt)
        self.out = TextOut(gen.tok, s.stop)
        self.fed = 0                      # positions written to its cache slot
        self.n = 0                        # tokens generated
        self.slot: Optional[int] = None

    def entry(self, chunk: int) -> Tuple[List[int], int]:
        """(tokens, first position) for this step: the next prompt chunk of `chunk` tokens (chunks fall
        at the same places alone or batched, so the numbers do too), or the last token."""
        if self.fed < len(self.prompt):
            return self.prompt[self.fed:self.fed + chunk], self.fed
        return [self.context[-1]], len(self.context) - 1

    def take(self, logits) -> Optional[str]:
        """Samples and emits this step's token; the finish reason when the choice ended."""
        s = self.s
        scores = logits
        if self.adjust:
            arr = logits.numpy().copy()
            if self.counts:
                ids = np.fromiter(self.counts.keys(), dtype=np.int64, count=len(self.counts))
                arr[ids] -= s.presence_penalty + s.frequency_penalty * np.fromiter(self.counts.values(), dtype=np.float32,
                                                                                    count=len(self.counts))
            if len(self.bias_ids):
                arr[self.bias_ids] += self.bias_vals
            scores = _C.from_numpy(arr)
        token = self.sampler.sample(scores, self.context if s.repeat_penalty != 1.0 else [])
        if token in self.gen.stop_ids:
            return "stop"
        lp = self.gen._logprobs(logits, token, s.logprobs) if s.logprobs is not None else None
        self.n += 1
        self.context.append(token)
        self.counts[token] = self.counts.get(token, 0) + 1
        at = self.offset + len(self.out.text)
        text, hit = self.out.push(token)
        if self.job.first_token is None:
            self.job.first_token = time.perf_counter()
        self.job.emit("token", {"index": self.index, "text": text, "logprobs": lp, "offset": at})
        if hit:
            return "stop"
        return "length" if self.n >= self.budget else None

    def end(self, reason: str) -> None:
        rest = self.out.finish(reason == "stop")
        if rest:
            self.job.emit("token", {"index": self.index, "text": rest, "logprobs": None})
        self.job.emit("end", {"index": self.index, "finish_reason": reason})


class _JobState:
    """A request's choices still running and the tokens counted for its usage."""

    def __init__(self, job: Job):
        self.job = job
        self.task: GenTask = job.payload
        self.left = 0
        self.prompt_tokens = sum(len(p) for p in self.task.prompts)
        self.completion_tokens = 0


class Generator:
    """Runs `GenTask`s on one GGUF model with continuous batching: up to `slots` sequences (choices
    of any requests) decode together, one forward per step over all of them, each in its own KV cache
    slot. Requests join between steps as slots free up, so a short request is not stuck behind a long
    one. Prompts go in chunks of at most `prefill_chunk` tokens per step, so a long prompt does not
    stall the sequences already decoding. Greedy output does not depend on the batch (each row of the
    quantized products is computed alone)."""

    def __init__(self, llm, ctx_size: int, slots: int = 1, prefill_chunk: int = 256):
        self.llm = llm
        self.model = llm._model
        self.tok = llm.tokenizer
        self.ctx_size = ctx_size
        self.slots = max(1, int(slots))
        self.prefill_chunk = max(1, int(prefill_chunk))
        eos = llm.metadata.get("tokenizer.ggml.eos_token_id")
        self.stop_ids = set() if eos is None else {int(eos)}
        # Chat models end turns with their own token (<|im_end|>, <|eot_id|>): stop on those as well.
        tokens = llm.metadata.get("tokenizer.ggml.tokens") or []
        for name in ("<|im_end|>", "<|eot_id|>", "<|end|>", "<end_of_turn>", "<|endoftext|>"):
            try:
                self.stop_ids.add(tokens.index(name))
            except ValueError:
                pass
        self._pieces = tokens
        self._bytes = _byte_decoder()
        self._piece_cache: Dict[int, Tuple[str, List[int]]] = {}

    def piece(self, token: int) -> Tuple[str, List[int]]:
        """A token's text and its bytes, for log-probabilities."""
        got = self._piece_cache.get(token)
        if got is None:
            p = self._pieces[token] if 0 <= token < len(self._pieces) else ""
            if p and all(c in self._bytes for c in p):
                raw = bytes(self._bytes[c] for c in p)
            else:  # special tokens are written as themselves
                raw = p.encode("utf-8")
            got = (raw.decode("utf-8", errors="replace"), list(raw))
            if len(self._piece_cache) < 200_000:
                self._piece_cache[token] = got
        return got

    def _admit(self, job: Job, states: Dict[Job, _JobState], waiting: Deque[_Choice]) -> None:
        state = _JobState(job)
        task, s = state.task, state.task.sampling
        for p, prompt in enumerate(task.prompts):
            for j in range(s.n):
                index = p * s.n + j
                if task.echo[p]:
                    job.emit("token", {"index": index, "text": task.echo[p], "logprobs": None})
                seed = (s.seed + index) if s.seed is not None else random.getrandbits(63)
                c = _Choice(self, state, prompt, task.max_tokens[p], index, seed, len(task.echo[p]))
                state.left += 1
                if c.budget <= 0:
                    self._finish(c, "length", states)
                else:
                    waiting.append(c)
        if state.left:
            states[job] = state
        else:
            self._done(state)

    def _done(self, state: _JobState) -> None:
        state.job.emit("done", {"prompt_tokens": state.prompt_tokens, "completion_tokens": state.completion_tokens,
                                "total_tokens": state.prompt_tokens + state.completion_tokens})

    def _finish(self, c: _Choice, reason: str, states: Dict[Job, _JobState]) -> None:
        if c.slot is not None:
            self.model.release(c.slot)
            c.slot = None
        c.end(reason)
        state = c.state
        state.completion_tokens += c.n
        state.left -= 1
        if state.left == 0:
            states.pop(state.job, None)
            self._done(state)

    def __call__(self, worker: Worker, jobs: List[Job]) -> None:
        states: Dict[Job, _JobState] = {}
        waiting: Deque[_Choice] = deque()
        live: List[_Choice] = []
        try:
            for job in jobs:
                self._admit(job, states, waiting)
            while live or waiting:
                # Requests whose client left, or past the shutdown grace: their slots free at once.
                for job in [j for j in states if worker.should_stop(j)]:
                    del states[job]
                    for c in [c for c in live if c.job is job]:
                        live.remove(c)
                        if c.slot is not None:
                            self.model.release(c.slot)
                    for c in [c for c in waiting if c.job is job]:
                        waiting.remove(c)
                used = {c.slot for c in live}
                while waiting and len(live) < self.slots:
                    c = waiting.popleft()
                    c.slot = next(i for i in range(1, self.slots + 2) if i not in used)
                    used.add(c.slot)
                    live.append(c)
                worker.running = len(states)
                if not live:
                    break
                entries, owners, prompt_tokens = [], [], 0
                for c in live:
                    tokens, start = c.entry(self.prefill_chunk)
                    if c.fed < len(c.prompt):
                        # Prompt tokens per step are bounded: a chunk waits if it would pass the bound.
                        if prompt_tokens and prompt_tokens + len(tokens) > self.prefill_chunk:
                            continue
                        prompt_tokens += len(tokens)
                    entries.append((c.slot, tokens, start))
                    owners.append(c)
                logits = self.model.step_batch(entries)
                for row, (c, (_, chunk, _)) in enumerate(zip(owners, entries)):
                    c.fed += len(chunk)
                    if c.fed < len(c.prompt):
                        continue  # more of its prompt to come
                    reason = c.take(logits[row])
                    if reason is not None:
                        live.remove(c)
                        self._finish(c, reason, states)
                # Newly queued requests join between steps while there are free slots.
                free = self.slots - len(live) - len(waiting)
                if free > 0:
                    for job in worker.take_more(free):
                        job.started = time.perf_counter()
                        self._admit(job, states, waiting)
        except BaseException as e:  # noqa: BLE001 - every request in the batch gets the error, not just the first
            err = e if isinstance(e, APIError) else APIError(500, f"internal error: {type(e).__name__}: {e}",
                                                             code="internal_error")
            for job in states:
                if not job.finished:
                    job.fail(err)
            states.clear()
        finally:
            for c in live:
                if c.slot is not None:
                    self.model.release(c.slot)
            worker.running = 0

    def _logprobs(self, logits, token: int, top: int):
        """(token, logprob, bytes, [(token, logprob, bytes)] of the `top` likeliest) under the model."""
        x = logits.numpy().astype(np.float64)
        m = x.max()
        lp = x - (m + np.log(np.exp(x - m).sum()))
        alts = []
        if top:
            idx = np.argpartition(-lp, top - 1)[:top]
            idx = idx[np.argsort(-lp[idx], kind="stable")]
            alts = [(*self.piece(int(i)), float(lp[i])) for i in idx]
        text, raw = self.piece(token)
        return {"token": text, "bytes": raw, "logprob": float(lp[token]),
                "top": [{"token": t, "bytes": b, "logprob": v} for t, b, v in alts]}
