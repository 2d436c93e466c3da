"""A tiny GPT-2 loaded with AutoModelForCausalLM: logits, greedy and beam-search generate, a
left-padded batch, a reused key/value cache, logits processors, stopping criteria and a streamer.

    python gpt2.py MODEL_DIR [section ...]   |   python -m candle_bind run gpt2.py MODEL_DIR [section ...]
"""

import sys

import torch
from transformers import StoppingCriteria, StoppingCriteriaList
from transformers.generation.streamers import BaseStreamer

from common import causal_lm, main, prompt_inputs, section

PROMPT = [[5, 17, 42, 8, 23, 61]]


@section
def logits(path):
    model = causal_lm(path)
    yield "model_class", type(model).__name__
    out = model(**prompt_inputs(PROMPT))
    yield "shape", list(out.logits.shape)
    yield "logits", out.logits[0]
    yield "argmax", out.logits.argmax(-1)


@section
def greedy(path):
    model = causal_lm(path)
    out = model.generate(**prompt_inputs(PROMPT), max_new_tokens=12, do_sample=False)
    yield "tokens", out
    out = model.generate(**prompt_inputs(PROMPT), max_new_tokens=4, do_sample=False, return_dict_in_generate=True,
                         output_scores=True, output_logits=True)
    yield "dict_tokens", out.sequences
    yield "scores_0", out.scores[0]
    yield "logits_3", out.logits[3]


@section
def beam(path):
    model = causal_lm(path)
    out = model.generate(**prompt_inputs(PROMPT), max_new_tokens=8, num_beams=3, do_sample=False)
    yield "tokens", out
    out = model.generate(**prompt_inputs(PROMPT), max_new_tokens=8, num_beams=3, num_return_sequences=2, do_sample=False,
                         return_dict_in_generate=True, output_scores=True, length_penalty=1.0)
    yield "sequences", out.sequences
    yield "sequences_scores", out.sequences_scores


@section
def left_padded(path):
    model = causal_lm(path)
    pad = model.config.pad_token_id
    ids = torch.tensor([[pad, pad, pad, 42, 8, 23], [5, 17, 42, 8, 23, 61]])
    mask = torch.tensor([[0, 0, 0, 1, 1, 1], [1, 1, 1, 1, 1, 1]])
    out = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=8, do_sample=False, pad_token_id=pad,
                         return_dict_in_generate=True, output_scores=True)
    yield "tokens", out.sequences
    yield "scores_0", out.scores[0]
    # the padded row generates what the unpadded prompt does
    alone = model.generate(input_ids=ids[:1, 3:], attention_mask=mask[:1, 3:], max_new_tokens=8, do_sample=False,
                           pad_token_id=pad)
    yield "alone", alone
    yield "padded_row_matches_alone", out.sequences[0, 3:].tolist() == alone[0].tolist()


@section
def past_key_values(path):
    model = causal_lm(path)
    ids = torch.tensor(PROMPT)
    out = model(input_ids=ids, use_cache=True)
    past = out.past_key_values
    yield "cache_type", type(past).__name__
    yield "cache_length", past.get_seq_length()
    nxt = out.logits[:, -1].argmax(-1, keepdim=True)
    step = model(input_ids=nxt, past_key_values=past, use_cache=True)
    yield "step_logits", step.logits[:, -1]
    yield "cache_length_after", step.past_key_values.get_seq_length()
    full = model(input_ids=torch.cat([ids, nxt], dim=-1)).logits[:, -1]
    yield "step_matches_full", bool(torch.allclose(step.logits[:, -1], full, atol=1e-4, rtol=1e-4))
    # the cache passed to generate() explicitly
    out = model(input_ids=ids[:, :-1], use_cache=True)
    gen = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), past_key_values=out.past_key_values,
                         max_new_tokens=5, do_sample=False)
    yield "generate_with_cache", gen


@section
def repetition_penalty(path):
    model = causal_lm(path)
    out = model.generate(**prompt_inputs(PROMPT), max_new_tokens=24, do_sample=False, repetition_penalty=1.05)
    yield "tokens", out


@section
def processors(path):
    """repetition_penalty and no_repeat_ngram_size together."""
    model = causal_lm(path)
    out = model.generate(**prompt_inputs(PROMPT), max_new_tokens=24, do_sample=False, repetition_penalty=1.05,
                         no_repeat_ngram_size=2)
    yield "tokens", out
    gen = out[0, len(PROMPT[0]):].tolist()
    full = out[0].tolist()
    pairs = list(zip(full, full[1:]))
    yield "no_repeated_bigram", len(pairs) == len(set(pairs))
    yield "new_tokens", len(gen)


class StopAfter(StoppingCriteria):
    """Stops each row once it holds `length` tokens; records the shapes it was called with."""

    def __init__(self, length):
        self.length = length
        self.calls = []

    def __call__(self, input_ids, scores, **kwargs):
        self.calls.append(input_ids.shape[-1])
        return torch.full((input_ids.shape[0],), input_ids.shape[-1] >= self.length, dtype=torch.bool)


@section
def stopping(path):
    model = causal_lm(path)
    stop = StopAfter(len(PROMPT[0]) + 5)
    out = model.generate(**prompt_inputs(PROMPT), max_new_tokens=20, do_sample=False, stopping_criteria=StoppingCriteriaList([stop]))
    yield "custom_tokens", out
    yield "custom_calls", stop.calls
    # eos: the 4th greedily generated token is made the end-of-sequence token
    greedy = model.generate(**prompt_inputs(PROMPT), max_new_tokens=12, do_sample=False)[0, len(PROMPT[0]):].tolist()
    eos = greedy[3]
    out = model.generate(**prompt_inputs(PROMPT), max_new_tokens=12, do_sample=False, eos_token_id=eos)
    yield "eos", eos
    yield "eos_tokens", out
    yield "eos_stopped_at_first", out[0, len(PROMPT[0]):].tolist() == greedy[:greedy.index(eos) + 1]


class Collector(BaseStreamer):
    def __init__(self):
        self.chunks = []
        self.ended = False

    def put(self, value):
        self.chunks.append(value.tolist())

    def end(self):
        self.ended = True


@section
def streamer(path):
    model = causal_lm(path)
    collector = Collector()
    out = model.generate(**prompt_inputs(PROMPT), max_new_tokens=8, do_sample=False, streamer=collector)
    yield "tokens", out
    yield "chunks", collector.chunks
    yield "ended", collector.ended
    flat = []
    for chunk in collector.chunks:
        flat.extend(chunk[0] if isinstance(chunk[0], list) else chunk)
    yield "streamed_equals_output", flat == out[0].tolist()


if __name__ == "__main__":
    main(sys.argv[1])
