"""Hugging Face diffusers, unmodified, on candle_bind. The script tests/eco/diffusers_sd.py is plain
diffusers code (it imports torch, never candle_bind); it runs once under torch and once under the
shim (`python -m candle_bind run`) and every section's printed tensors must agree (rtol 1e-3 / atol
1e-4 unless a test says otherwise). The tiny models are built here with real torch (seeded random
weights, a CLIP tokenizer from a hand-written vocab) and saved with save_pretrained; both runs load
them by path. Random inputs come from numpy in both runs, or from a seeded torch.Generator, whose
stream candle_bind reproduces (candle_bind/_generator.py)."""

import json
import os

import pytest
import torch

from shim_runs import Runs, compare

pytest.importorskip("diffusers")
pytest.importorskip("transformers")

ECO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "eco")
SD = dict(num_train_timesteps=1000, beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear")


@pytest.fixture(scope="module")
def runs():
    # One thread each: on a small shared machine torch's OpenMP pool spins when oversubscribed (2x slower).
    return Runs(ECO, env={**os.environ, "OMP_NUM_THREADS": "1"})


def clip_tokenizer(folder):
    """A CLIP BPE tokenizer over a few letters and merges (transformers' own tests build theirs so)."""
    from transformers import CLIPTokenizer

    letters = list("abcdefghijklmnopqrstuvwxyz")
    vocab = (["<|startoftext|>", "<|endoftext|>", "!"] + letters + [c + "</w>" for c in letters]
             + ["th", "the</w>", "an", "and</w>", "er", "er</w>", "at</w>", "ca", "cat</w>", "do", "dog</w>"])
    merges = ["#version: 0.2", "t h", "th e</w>", "a n", "an d</w>", "e r", "e r</w>", "a t</w>", "c a",
              "ca t</w>", "d o", "do g</w>"]
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "vocab.json"), "w") as f:
        json.dump({t: i for i, t in enumerate(vocab)}, f)
    with open(os.path.join(folder, "merges.txt"), "w") as f:
        f.write("\n".join(merges) + "\n")
    return CLIPTokenizer(os.path.join(folder, "vocab.json"), os.path.join(folder, "merges.txt"), unk_token="!",
                         bos_token="<|startoftext|>", eos_token="<|endoftext|>", pad_token="<|endoftext|>",
                         model_max_length=16)


def tiny_vae(**kw):
    from diffusers import AutoencoderKL

    torch.manual_seed(0)
    return AutoencoderKL(block_out_channels=(32, 64), in_channels=3, out_channels=3, latent_channels=4,
                         down_block_types=("DownEncoderBlock2D",) * 2, up_block_types=("UpDecoderBlock2D",) * 2,
                         sample_size=32, **kw).eval()


@pytest.fixture(scope="module")
def sd_dir(tmp_path_factory):
    """A tiny Stable Diffusion 1.x pipeline folder (unet/ vae/ text_encoder/ tokenizer/ scheduler/)."""
    from diffusers import DDIMScheduler, StableDiffusionPipeline, UNet2DConditionModel
    from transformers import CLIPTextConfig, CLIPTextModel

    folder = tmp_path_factory.mktemp("sd")
    torch.manual_seed(0)
    unet = UNet2DConditionModel(block_out_channels=(32, 64), layers_per_block=1, sample_size=16, in_channels=4,
                                out_channels=4, down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),
                                up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"), cross_attention_dim=32,
                                attention_head_dim=8).eval()
    tokenizer = clip_tokenizer(str(tmp_path_factory.mktemp("vocab")))
    torch.manual_seed(0)
    text_encoder = CLIPTextModel(CLIPTextConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=37,
                                                num_hidden_layers=2, num_attention_heads=4, max_position_embeddings=16,
                                                bos_token_id=0, eos_token_id=1, pad_token_id=1)).eval()
    scheduler = DDIMScheduler(**SD, clip_sample=False, set_alpha_to_one=False, steps_offset=1)
    pipe = StableDiffusionPipeline(vae=tiny_vae(), text_encoder=text_encoder, tokenizer=tokenizer, unet=unet,
                                   scheduler=scheduler, safety_checker=None, feature_extractor=None,
                                   requires_safety_checker=False)
    pipe.save_pretrained(folder)
    return str(folder)


@pytest.fixture(scope="module")
def sd3_dir(tmp_path_factory):
    """A tiny Stable Diffusion 3 pipeline folder: an MMDiT transformer, two CLIP text encoders with
    projections, no T5 (text_encoder_3=None: the pipeline pads with zeros), a flow-matching scheduler."""
    from diffusers import FlowMatchEulerDiscreteScheduler, SD3Transformer2DModel, StableDiffusion3Pipeline
    from transformers import CLIPTextConfig, CLIPTextModelWithProjection

    folder = tmp_path_factory.mktemp("sd3")
    torch.manual_seed(0)
    transformer = SD3Transformer2DModel(sample_size=16, patch_size=1, in_channels=4, num_layers=2, attention_head_dim=8,
                                        num_attention_heads=4, caption_projection_dim=32, joint_attention_dim=32,
                                        pooled_projection_dim=64, out_channels=4).eval()
    tokenizer = clip_tokenizer(str(tmp_path_factory.mktemp("vocab3")))
    encoders = []
    for seed in (1, 2):
        torch.manual_seed(seed)
        config = CLIPTextConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=37, projection_dim=32,
                                num_hidden_layers=2, num_attention_heads=4, max_position_embeddings=16,
                                bos_token_id=0, eos_token_id=1, pad_token_id=1, hidden_act="gelu")
        encoders.append(CLIPTextModelWithProjection(config).eval())
    pipe = StableDiffusion3Pipeline(transformer=transformer, scheduler=FlowMatchEulerDiscreteScheduler(),
                                    vae=tiny_vae(shift_factor=0.0609, scaling_factor=1.5035, use_quant_conv=False,
                                                 use_post_quant_conv=False),
                                    text_encoder=encoders[0], tokenizer=tokenizer, text_encoder_2=encoders[1],
                                    tokenizer_2=tokenizer, text_encoder_3=None, tokenizer_3=None)
    pipe.save_pretrained(folder)
    return str(folder)


@pytest.fixture(scope="module")
def dit_dir(tmp_path_factory):
    """A tiny DiT pipeline folder: a class-conditional transformer (adaLN-zero, learned sigma), the VAE,
    DPM-Solver++ (the script passes its labels: id2label is not saved)."""
    from diffusers import DiTPipeline, DiTTransformer2DModel, DPMSolverMultistepScheduler

    folder = tmp_path_factory.mktemp("dit")
    torch.manual_seed(0)
    transformer = DiTTransformer2DModel(num_attention_heads=2, attention_head_dim=8, in_channels=4, out_channels=8,
                                        num_layers=2, sample_size=16, patch_size=2).eval()
    DiTPipeline(transformer=transformer, vae=tiny_vae(), scheduler=DPMSolverMultistepScheduler()).save_pretrained(folder)
    return str(folder)


@pytest.fixture(scope="module")
def folders(sd_dir, sd3_dir, dit_dir):
    return sd_dir, sd3_dir, dit_dir


# --- models ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["unet", "unet_classic_attention", "vae"])
def test_models(runs, folders, name):
    compare(*runs.section(name, "diffusers_sd.py", *folders))


# --- schedulers ------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["ddim", "ddim_v_prediction", "euler", "euler_karras", "dpm_solver_pp",
                                  "dpm_solver_pp_3rd_order_karras", "pndm", "pndm_prk"])
def test_schedulers(runs, folders, name):
    """Every intermediate of a whole schedule: timesteps (and their dtype), sigmas, scaled inputs,
    previous samples and predicted originals, add_noise."""
    compare(*runs.section(name, "diffusers_sd.py", *folders))


# --- pipelines -------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["sd", "sd_euler", "sd_prompt_embeds"])
def test_stable_diffusion(runs, folders, name):
    compare(*runs.section(name, "diffusers_sd.py", *folders))


def test_stable_diffusion_generator(runs, folders):
    """generator=torch.Generator().manual_seed(0): candle_bind's Generator draws torch's CPU stream, so
    the starting noise, and the image, are torch's."""
    want, got = runs.section("sd_generator", "diffusers_sd.py", *folders)
    compare(want, got)
    assert got["same_seed_same_image"] and got["other_seed_other_image"]


def test_stable_diffusion_3(runs, folders):
    """A transformer pipeline: SD3's MMDiT (joint attention over text and image tokens), flow matching."""
    compare(*runs.section("sd3", "diffusers_sd.py", *folders))


def test_dit(runs, folders):
    """A class-conditional transformer pipeline (DiT), its noise from a seeded torch.Generator."""
    compare(*runs.section("dit", "diffusers_sd.py", *folders))
