"""peft, unmodified, on candle_bind: adapters of every kind peft has for a causal LM (LoRA, IA3, LoHa,
LoKr, AdaLoRA, VeRA, OFT, BOFT, FourierFT, HRA, LN tuning, prompt / prefix / p-tuning) on a tiny Llama
are made and saved by real torch, their trainable weights randomised so they change the outputs;
tests/eco/peft_adapters.py loads them under torch and under the shim, and the two runs must agree
(logits within rtol 1e-3 / atol 1e-4, generated token ids exactly)."""

import os

import pytest
import torch

from shim_runs import Runs, compare

peft = pytest.importorskip("peft")
pytest.importorskip("transformers")

ECO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "eco")
BY_HAND = ("lora", "ia3", "loha", "lokr", "adalora", "vera", "oft", "boft", "fourierft", "hra", "ln_tuning",
           "prompt_tuning", "prefix_tuning", "p_tuning")


def adapter_configs():
    attn = {"target_modules": ["q_proj", "v_proj"]}
    return {
        "lora": peft.LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj", "down_proj"], lora_dropout=0.0,
                                task_type="CAUSAL_LM"),
        "ia3": peft.IA3Config(target_modules=["k_proj", "v_proj", "down_proj"], feedforward_modules=["down_proj"],
                              task_type="CAUSAL_LM"),
        "loha": peft.LoHaConfig(r=4, **attn),
        "lokr": peft.LoKrConfig(r=4, **attn),
        "adalora": peft.AdaLoraConfig(init_r=4, total_step=10, **attn),
        "vera": peft.VeraConfig(r=4, **attn),
        "oft": peft.OFTConfig(oft_block_size=8, r=0, **attn),
        "boft": peft.BOFTConfig(boft_block_size=8, **attn),
        "fourierft": peft.FourierFTConfig(n_frequency=16, **attn),
        "hra": peft.HRAConfig(r=4, **attn),
        "ln_tuning": peft.LNTuningConfig(target_modules=["input_layernorm"]),
        "prompt_tuning": peft.PromptTuningConfig(task_type="CAUSAL_LM", num_virtual_tokens=4),
        "prefix_tuning": peft.PrefixTuningConfig(task_type="CAUSAL_LM", num_virtual_tokens=4),
        "p_tuning": peft.PromptEncoderConfig(task_type="CAUSAL_LM", num_virtual_tokens=4, encoder_hidden_size=16),
    }


@pytest.fixture(scope="module")
def runs():
    return Runs(ECO)


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    from transformers import LlamaConfig, LlamaForCausalLM

    root = tmp_path_factory.mktemp("peft")
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=100, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                         initializer_range=0.3, bos_token_id=1, eos_token_id=2, pad_token_id=0,
                         tie_word_embeddings=False)
    LlamaForCausalLM(config).eval().save_pretrained(root / "base")
    for name, adapter in adapter_configs().items():
        torch.manual_seed(1)
        model = get_peft_model(root, adapter)
        with torch.no_grad():  # most adapters start as the identity: move every trainable weight off it
            for p in model.parameters():
                if p.requires_grad:
                    p.add_(0.3 * torch.randn_like(p))
        model.save_pretrained(root / name)
    return str(root)


def get_peft_model(root, adapter):
    from transformers import LlamaForCausalLM

    return peft.get_peft_model(LlamaForCausalLM.from_pretrained(root / "base"), adapter)


@pytest.mark.parametrize("name", ["lora", "ia3"])
def test_from_pretrained(runs, root, name):
    want, got = runs.section(name, "peft_adapters.py", root)
    compare(want, got)
    assert got["logits"] != got["disabled_logits"]  # the adapter matters
    assert got["type"] == "PeftModelForCausalLM" and got["merged_type"] == "LlamaForCausalLM"


@pytest.mark.parametrize("name", BY_HAND)
def test_adapter_by_hand(runs, root, name):
    compare(*runs.section(f"{name}_by_hand", "peft_adapters.py", root))


def test_lora_initialisations_that_factor_the_weights(runs, root):
    """PiSSA, OLoRA and randomized PiSSA run torch.linalg (svd, qr, svd_lowrank) inside peft."""
    compare(*runs.section("inits", "peft_adapters.py", root))


def test_the_torch_modules_peft_imports():
    """What peft reaches at import or in its fallbacks: RelaxedBernoulli (Poly's router), Wishart
    (MonteCLoRA: importable, building one says it is not served), torch.utils.cpp_extension (BOFT's
    kernel build, which must fail the way peft catches), torch.svd_lowrank."""
    import candle_bind as cb
    from candle_bind.distributions.relaxed_bernoulli import RelaxedBernoulli
    from candle_bind.distributions.wishart import Wishart
    from candle_bind.utils import cpp_extension

    logits = cb.tensor([[-30.0, 0.0, 30.0]])
    sample = RelaxedBernoulli(temperature=0.5, logits=logits).rsample((1000,))
    assert tuple(sample.shape) == (1000, 1, 3) and bool(((sample >= 0) & (sample <= 1)).all())
    means = sample.mean(0)[0].tolist()
    assert means[0] < 1e-6 and 0.4 < means[1] < 0.6 and means[2] > 1 - 1e-6
    assert RelaxedBernoulli(1.0, probs=cb.tensor([0.25])).logits.item() == pytest.approx(-1.0986123, abs=1e-6)
    with pytest.raises(NotImplementedError, match="Wishart is not supported by candle_bind"):
        Wishart(df=3.0, covariance_matrix=cb.eye(2))
    with pytest.raises(RuntimeError, match="cannot build C../CUDA extensions"):
        cpp_extension.load(name="fbd_cuda", sources=["fbd_cuda.cpp"])
    assert cb.svd_lowrank is cb.linalg.svd_lowrank and hasattr(cb, "TensorType")
