"""quantize_dynamic on transformers models under the shim (tests/hf/quantized.py run once under torch,
once under candle_bind): the same quantized modules, state dict keys, int8 weights and, the int8
kernels following torch's fbgemm numerics, outputs within float noise of torch's int8 outputs."""

import os

import pytest
import torch

from shim_runs import Runs, compare

pytest.importorskip("transformers")
HF = os.path.join(os.path.dirname(os.path.abspath(__file__)), "hf")


@pytest.fixture(scope="module")
def runs():
    return Runs(HF)


@pytest.fixture(scope="module")
def dirs(tmp_path_factory):
    from transformers import BertConfig, BertModel, Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(0)
    bert = BertModel(BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                intermediate_size=64, max_position_embeddings=64, pad_token_id=0)).eval()
    qwen2 = Qwen2ForCausalLM(Qwen2Config(vocab_size=100, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                                         initializer_range=0.3, bos_token_id=1, eos_token_id=2, pad_token_id=0,
                                         tie_word_embeddings=False)).eval()
    paths = str(tmp_path_factory.mktemp("bert")), str(tmp_path_factory.mktemp("qwen2"))
    bert.save_pretrained(paths[0])
    qwen2.save_pretrained(paths[1])
    return paths


def test_bert_int8(runs, dirs):
    want, got = runs.section("bert_int8", "quantized.py", *dirs)
    for key in ("query", "query_class", "original_untouched", "layer0_keys", "weight_int", "weight_scale"):
        assert got.pop(key) == want.pop(key), key
    # The outputs: a float difference upstream can move an activation across a rounding boundary of
    # its quantization step, so int8 outputs agree to about one step, not to float32's last bits.
    compare(want, got, rtol=1e-3, atol=2e-3)


def test_bert_float16_weights(runs, dirs):
    want, got = runs.section("bert_fp16", "quantized.py", *dirs)
    assert got.pop("query") == want.pop("query")
    compare(want, got)


def test_qwen2_int8(runs, dirs):
    want, got = runs.section("qwen2_int8", "quantized.py", *dirs)
    assert got.pop("q_proj") == want.pop("q_proj")
    assert got.pop("greedy") == want.pop("greedy")
    compare(want, got, rtol=1e-3, atol=2e-3)


def test_state_dict_roundtrip(runs, dirs):
    want, got = runs.section("state_dict_roundtrip", "quantized.py", *dirs)
    assert got == want == {"load": [[], []], "same_output": True}
