"""A tiny Llama with grouped-query attention (num_key_value_heads < num_attention_heads): logits,
greedy generate, and sampling (which only has to run and give valid tokens: the RNG streams differ).

    python llama.py MODEL_DIR [section ...]   |   python -m candle_bind run llama.py MODEL_DIR [section ...]
"""

import sys

import torch

from common import causal_lm, main, prompt_inputs, section

PROMPT = [[1, 17, 42, 8, 23, 61, 7], [1, 9, 33, 5, 70, 12, 4]]


@section
def gqa(path):
    model = causal_lm(path)
    config = model.config
    yield "model_class", type(model).__name__
    yield "heads", [config.num_attention_heads, config.num_key_value_heads]
    out = model(**prompt_inputs(PROMPT), use_cache=True)
    yield "logits", out.logits[:, -3:]
    key = out.past_key_values.layers[0].keys
    yield "cache_key_shape", list(key.shape)


@section
def greedy(path):
    model = causal_lm(path)
    out = model.generate(**prompt_inputs(PROMPT), max_new_tokens=12, do_sample=False)
    yield "tokens", out
    out = model.generate(**prompt_inputs(PROMPT), max_new_tokens=12, do_sample=False, use_cache=False)
    yield "tokens_no_cache", out


@section
def sample(path):
    model = causal_lm(path)
    torch.manual_seed(0)
    out = model.generate(**prompt_inputs(PROMPT), max_new_tokens=10, min_new_tokens=10, do_sample=True, top_k=20, top_p=0.9,
                         temperature=0.8, num_return_sequences=2)
    yield "shape", list(out.shape)
    yield "dtype", str(out.dtype)
    yield "prompt_kept", out[:, :len(PROMPT[0])].tolist() == [row for row in PROMPT for _ in range(2)]
    yield "ids_in_vocab", bool(((out >= 0) & (out < model.config.vocab_size)).all())
    torch.manual_seed(0)
    again = model.generate(**prompt_inputs(PROMPT), max_new_tokens=10, min_new_tokens=10, do_sample=True, top_k=20, top_p=0.9,
                           temperature=0.8, num_return_sequences=2)
    yield "same_seed_same_tokens", again.tolist() == out.tolist()


if __name__ == "__main__":
    main(sys.argv[1])
