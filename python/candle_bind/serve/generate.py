"""Text generation for the chat and completions endpoints, on the worker thread: the sampling loop
over a GGUF model's KV cache, text released as it becomes final (whole UTF-8 characters, nothing that
might turn out to start a stop string), stop strings cut out, and log-probabilities."""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

import numpy as np

from .. import _C
from .engine import Job, Worker
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


class Generator:
    """Runs `GenTask`s on one GGUF model, one sequence at a time (the KV cache holds one)."""

    def __init__(self, llm, ctx_size: int):
        self.llm = llm
        self.model = llm._model
        self.tok = llm.tokenizer
        self.ctx_size = ctx_size
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

    def __call__(self, worker: Worker, jobs: List[Job]) -> None:
        for job in jobs:
            self.run(worker, job)

    def run(self, worker: Worker, job: Job) -> None:
        task: GenTask = job.payload
        s = task.sampling
        prompt_tokens = completion_tokens = 0
        for p, prompt in enumerate(task.prompts):
            prompt_tokens += len(prompt)
            for j in range(s.n):
                index = p * s.n + j
                if task.echo[p]:
                    job.emit("token", {"index": index, "text": task.echo[p], "logprobs": None})
                seed = (s.seed + index) if s.seed is not None else random.getrandbits(63)
                got = self._one(worker, job, prompt, task.max_tokens[p], s, index, seed, len(task.echo[p]))
                if got is None:
                    return
                completion_tokens += got
        job.emit("done", {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                          "total_tokens": prompt_tokens + completion_tokens})

    def _one(self, worker: Worker, job: Job, prompt: List[int], budget: int, s: Sampling, index: int,
             seed: int, offset: int) -> Optional[int]:
        """One choice: emits its tokens and its end; the number of new tokens, None when stopped."""
        greedy = s.temperature == 0.0 or s.top_p == 0.0 or s.top_k == 1
        sampler = _C.Sampler(0.0 if greedy else s.temperature, s.top_k or None,
                             s.top_p if s.top_p is not None and s.top_p < 1.0 else None, s.repeat_penalty, seed)
        adjust = bool(s.presence_penalty or s.frequency_penalty or s.logit_bias)
        bias_ids = np.fromiter(s.logit_bias.keys(), dtype=np.int64, count=len(s.logit_bias))
        bias_vals = np.fromiter(s.logit_bias.values(), dtype=np.float32, count=len(s.logit_bias))
        counts: Dict[int, int] = {}
        context = list(prompt)
        out = TextOut(self.tok, s.stop)
        if worker.should_stop(job):
            return None
        logits = self.model.step(prompt, 0)
        reason, n = "length", 0
        while n < budget:
            if worker.should_stop(job):
                return None
            scores = logits
            if adjust:
                arr = logits.numpy().copy()
                if counts:
                    ids = np.fromiter(counts.keys(), dtype=np.int64, count=len(counts))
                    arr[ids] -= s.presence_penalty + s.frequency_penalty * np.fromiter(counts.values(), dtype=np.float32, count=len(counts))
                if len(bias_ids):
                    arr[bias_ids] += bias_vals
                scores = _C.from_numpy(arr)
            token = sampler.sample(scores, context if s.repeat_penalty != 1.0 else [])
            if token in self.stop_ids:
                reason = "stop"
                break
            lp = self._logprobs(logits, token, s.logprobs) if s.logprobs is not None else None
            n += 1
            context.append(token)
            counts[token] = counts.get(token, 0) + 1
            at = offset + len(out.text)
            text, hit = out.push(token)
            if job.first_token is None:
                job.first_token = time.perf_counter()
            job.emit("token", {"index": index, "text": text, "logprobs": lp, "offset": at})
            if hit:
                reason = "stop"
                break
            if n < budget:
                logits = self.model.step([token], len(context) - 1)
        rest = out.finish(reason == "stop")
        if rest:
            job.emit("token", {"index": index, "text": rest, "logprobs": None})
        job.emit("end", {"index": index, "finish_reason": reason})
        return n

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
