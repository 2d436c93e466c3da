"""Dynamic int8 quantization (torch.ao.quantization.quantize_dynamic) of transformers models: a tiny
BERT (AutoModel) and a tiny Qwen2 decoder (biased q/k/v projections, grouped-query attention): the
quantized modules, outputs, greedy generation, and a quantized state dict through torch.save/load.

    python quantized.py BERT_DIR QWEN2_DIR [section ...]   |   python -m candle_bind run quantized.py ...
"""

import io
import sys

import torch
from transformers import AutoModel

from common import causal_lm, main, prompt_inputs, section

IDS = [[2, 45, 17, 88, 9, 31, 64, 3], [2, 71, 5, 12, 3, 0, 0, 0]]
MASK = [[1, 1, 1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 1, 0, 0, 0]]
PROMPT = [[1, 17, 42, 8, 23, 61, 7], [1, 9, 33, 5, 70, 12, 4]]


def bert_inputs():
    return {"input_ids": torch.tensor(IDS), "attention_mask": torch.tensor(MASK)}


@section
def bert_int8(bert, qwen2):
    model = AutoModel.from_pretrained(bert).eval()
    ref = model(**bert_inputs()).last_hidden_state
    q = torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)
    query = q.encoder.layer[0].attention.self.query
    yield "query", repr(query)
    yield "query_class", f"{type(query).__module__.replace('candle_bind', 'torch')}.{type(query).__qualname__}"
    yield "original_untouched", type(model.encoder.layer[0].attention.self.query).__name__
    yield "layer0_keys", [k for k in q.state_dict() if k.startswith("encoder.layer.0.attention.self.query")]
    yield "weight_int", query.weight().int_repr()
    yield "weight_scale", query.weight().q_scale()
    out = q(**bert_inputs()).last_hidden_state
    yield "last_hidden_state", out
    yield "error_vs_float", float((out - ref).abs().max())


@section
def bert_fp16(bert, qwen2):
    model = AutoModel.from_pretrained(bert).eval()
    q = torch.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.float16)
    yield "query", repr(q.encoder.layer[0].attention.self.query)
    yield "last_hidden_state", q(**bert_inputs()).last_hidden_state


@section
def qwen2_int8(bert, qwen2):
    model = causal_lm(qwen2)
    q = torch.ao.quantization.quantize_dynamic(model, dtype=torch.qint8)  # the default spec
    yield "q_proj", repr(q.model.layers[0].self_attn.q_proj)
    yield "q_proj_bias", q.model.layers[0].self_attn.q_proj.bias()
    yield "logits", q(**prompt_inputs(PROMPT)).logits[:, -3:]
    yield "greedy", q.generate(**prompt_inputs(PROMPT), max_new_tokens=8, do_sample=False)


@section
def state_dict_roundtrip(bert, qwen2):
    q = torch.ao.quantization.quantize_dynamic(AutoModel.from_pretrained(bert).eval(), {torch.nn.Linear})
    buf = io.BytesIO()
    torch.save(q.state_dict(), buf)
    fresh = torch.ao.quantization.quantize_dynamic(AutoModel.from_pretrained(bert).eval(), {torch.nn.Linear})
    for layer in fresh.encoder.layer:  # different weights until the checkpoint is loaded
        layer.attention.self.query.set_weight_bias(torch.quantize_per_tensor(torch.zeros(32, 32), 0.1, 0, torch.qint8), None)
    buf.seek(0)
    result = fresh.load_state_dict(torch.load(buf, weights_only=True))
    yield "load", [result.missing_keys, result.unexpected_keys]
    yield "same_output", torch.equal(fresh(**bert_inputs()).last_hidden_state, q(**bert_inputs()).last_hidden_state)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
