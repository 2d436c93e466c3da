"""A plain diffusers script (nothing here names candle_bind): builds a tiny Stable Diffusion pipeline
with random weights (UNet, VAE, CLIP text encoder, a CLIP tokenizer over a hand-written vocab, DDIM),
saves it with save_pretrained, loads it back with from_pretrained and generates an image.

    python examples/diffusers_tiny_sd.py                      # on torch
    python -m candle_bind run examples/diffusers_tiny_sd.py   # the same file on Candle

Random weights: the image is noise-like, but every component of a real Stable Diffusion pipeline runs
(tokenizer, text encoder, classifier-free guidance, the UNet over the scheduler's steps, the VAE
decoder). Nothing is downloaded. The weights and the starting latents come from numpy's seeded stream
(torch's random stream is candle_bind's own under the shim), so both runs print the same numbers.
"""

import json
import os
import tempfile
import time

import numpy as np
import torch
from diffusers import AutoencoderKL, DDIMScheduler, StableDiffusionPipeline, UNet2DConditionModel
from transformers import CLIPTextConfig, CLIPTextModel, CLIPTokenizer


def tokenizer(folder):
    letters = list("abcdefghijklmnopqrstuvwxyz")
    vocab = ["<|startoftext|>", "<|endoftext|>", "!"] + letters + [c + "</w>" for c in letters]
    merges = ["#version: 0.2"]
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "vocab.json"), "w") as f:
        json.dump({t: i for i, t in enumerate(vocab)}, f)
    with open(os.path.join(folder, "merges.txt"), "w") as f:
        f.write("\n".join(merges) + "\n")
    return CLIPTokenizer(os.path.join(folder, "vocab.json"), os.path.join(folder, "merges.txt"), unk_token="!",
                         bos_token="<|startoftext|>", eos_token="<|endoftext|>", pad_token="<|endoftext|>",
                         model_max_length=32)


def numpy_weights(model, seed):
    """Seeded weights from numpy, the same in both runs (uniform within 1/sqrt(fan_in), norms at 1)."""
    rng = np.random.RandomState(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() > 1:
                value = rng.uniform(-1, 1, p.shape) / np.sqrt(p[0].numel())
            else:
                value = np.ones(p.shape) if name.endswith("weight") else rng.uniform(-0.1, 0.1, p.shape)
            p.copy_(torch.from_numpy(value.astype(np.float32)))
    return model


def build(folder):
    unet = UNet2DConditionModel(block_out_channels=(32, 64), layers_per_block=1, sample_size=16, in_channels=4,
                                out_channels=4, down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),
                                up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"), cross_attention_dim=32,
                                attention_head_dim=8)
    vae = AutoencoderKL(block_out_channels=(32, 64), in_channels=3, out_channels=3, latent_channels=4,
                        down_block_types=("DownEncoderBlock2D",) * 2, up_block_types=("UpDecoderBlock2D",) * 2)
    tok = tokenizer(os.path.join(folder, "vocab"))
    text_encoder = CLIPTextModel(CLIPTextConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64,
                                                num_hidden_layers=2, num_attention_heads=4, max_position_embeddings=32,
                                                bos_token_id=0, eos_token_id=1, pad_token_id=1))
    for seed, model in enumerate((unet, vae, text_encoder)):
        numpy_weights(model, seed)
    scheduler = DDIMScheduler(beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear", clip_sample=False,
                              set_alpha_to_one=False, steps_offset=1)
    pipe = StableDiffusionPipeline(vae=vae, text_encoder=text_encoder, tokenizer=tok, unet=unet, scheduler=scheduler,
                                   safety_checker=None, feature_extractor=None, requires_safety_checker=False)
    pipe.save_pretrained(os.path.join(folder, "pipeline"))
    return os.path.join(folder, "pipeline")


with tempfile.TemporaryDirectory() as tmp:
    t0 = time.perf_counter()
    path = build(tmp)
    t1 = time.perf_counter()
    pipe = StableDiffusionPipeline.from_pretrained(path)
    pipe.set_progress_bar_config(disable=True)
    t2 = time.perf_counter()
    latents = torch.from_numpy(np.random.RandomState(0).standard_normal((1, 4, 32, 32)).astype(np.float32))
    image = pipe("a red fox in the snow", num_inference_steps=10, height=64, width=64, latents=latents,
                 output_type="np").images[0]
    t3 = time.perf_counter()

print(f"torch {torch.__version__}: built and saved a tiny SD pipeline in {t1 - t0:.2f} s, "
      f"loaded it in {t2 - t1:.2f} s, 10 DDIM steps at 64x64 in {t3 - t2:.2f} s")
print(f"image {image.shape} {image.dtype}: mean {image.mean():.5f}, std {image.std():.5f}, "
      f"pixel (0, 0) {np.round(image[0, 0], 5).tolist()}")
