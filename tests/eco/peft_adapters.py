"""peft adapters on a tiny Llama, made and saved by real torch (tests/test_peft.py), loaded here:
LoRA and IA3 through PeftModel.from_pretrained (the adapted forward, disable_adapter, merge_and_unload,
greedy generate); every adapter kind also put together by hand (get_peft_model + the saved config +
set_peft_model_state_dict, as training code resumes one); and the LoRA initialisations that factor the
base weights with torch.linalg.

    python peft_adapters.py ROOT [section ...]   |   python -m candle_bind run peft_adapters.py ROOT [section ...]

ROOT holds `base/` (the model) and one folder per adapter, named as the sections below.
"""

import os
import sys

import torch
from peft import LoraConfig, PeftConfig, PeftModel, get_peft_model, set_peft_model_state_dict
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM

from harness import main, section

IDS = [[1, 45, 17, 88, 9, 31, 64, 3], [1, 7, 7, 52, 90, 12, 5, 77]]
# the adapter kinds tests/test_peft.py saves; the prompt-learning ones add virtual tokens, nothing to merge
KINDS = ("lora", "ia3", "loha", "lokr", "adalora", "vera", "oft", "boft", "fourierft", "hra", "ln_tuning",
         "prompt_tuning", "prefix_tuning", "p_tuning")
PROMPT_LEARNING = ("prompt_tuning", "prefix_tuning", "p_tuning")


def base_model(root):
    return AutoModelForCausalLM.from_pretrained(os.path.join(root, "base")).eval()


def logits(model):
    return model(input_ids=torch.tensor(IDS)).logits[:, -3:, :12]


def generate(model):
    return model.generate(input_ids=torch.tensor(IDS[:1]), max_new_tokens=8, do_sample=False, pad_token_id=0)


def from_pretrained(root, kind):
    model = PeftModel.from_pretrained(base_model(root), os.path.join(root, kind)).eval()
    yield "type", type(model).__name__
    yield "logits", logits(model)
    with model.disable_adapter():
        yield "disabled_logits", logits(model)
    yield "generate", generate(model)
    merged = model.merge_and_unload()
    yield "merged_type", type(merged).__name__
    yield "merged_logits", logits(merged)


@section
def lora(root):
    yield from from_pretrained(root, "lora")


@section
def ia3(root):
    yield from from_pretrained(root, "ia3")


def by_hand(root, kind):
    folder = os.path.join(root, kind)
    model = get_peft_model(base_model(root), PeftConfig.from_pretrained(folder))
    result = set_peft_model_state_dict(model, load_file(os.path.join(folder, "adapter_model.safetensors")))
    if kind not in PROMPT_LEARNING:  # (their embeddings load apart from the model's keys)
        assert not result.unexpected_keys, result.unexpected_keys
    model.eval()
    yield "logits", logits(model)
    yield "generate", generate(model)
    if kind not in PROMPT_LEARNING:
        yield "merged_logits", logits(model.merge_and_unload())


for _kind in KINDS:
    def _by_hand(root, kind=_kind):
        yield from by_hand(root, kind)

    _by_hand.__name__ = f"{_kind}_by_hand"
    section(_by_hand)


@section
def inits(root):
    """PiSSA (SVD), OLoRA (QR) and PiSSA by randomized SVD (svd_lowrank): each keeps the model's output
    at the start; the norms of the factors do not depend on the signs LAPACK picks."""
    for init in ("pissa", "olora", "pissa_niter_4"):
        config = LoraConfig(r=4, target_modules=["q_proj", "v_proj"], init_lora_weights=init)
        model = get_peft_model(base_model(root), config).eval()
        yield f"{init}_logits", logits(model)
        if init != "pissa_niter_4":  # randomized: its factors depend on the random projection
            q_proj = model.base_model.model.model.layers[0].self_attn.q_proj
            yield f"{init}_A_row_norms", q_proj.lora_A["default"].weight.norm(dim=1)
            yield f"{init}_B_column_norms", q_proj.lora_B["default"].weight.norm(dim=0)
            yield f"{init}_residual_norm", q_proj.base_layer.weight.norm()
        yield f"{init}_merged_logits", logits(model.merge_and_unload())


if __name__ == "__main__":
    main(sys.argv[1])
