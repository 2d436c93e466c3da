"""diffusers, unmodified: Stable Diffusion's models, schedulers and pipelines from folders saved by real
torch with save_pretrained (tests/test_diffusers.py builds them).

- models: UNet2DConditionModel forward (timesteps, text states, both attention processors), AutoencoderKL
  encode (latent distribution) and decode;
- schedulers (no model, fixed model outputs): DDIM, Euler, DPM-Solver++ and PNDM set_timesteps,
  scale_model_input, step over a whole schedule, add_noise;
- pipelines, end to end: Stable Diffusion 1.x (tiny UNet, VAE, CLIP text encoder and tokenizer, DDIM /
  Euler), Stable Diffusion 3 (an MMDiT transformer, two CLIP text encoders, flow matching), DiT (a
  class-conditional transformer).

    python diffusers_sd.py SD_FOLDER SD3_FOLDER DIT_FOLDER [section ...]   |   python -m candle_bind run diffusers_sd.py ...

Random inputs come from numpy in both runs, or from a seeded torch.Generator (`sd_generator`, `dit`:
candle_bind's Generator draws torch's own CPU stream)."""

import os
import sys

import numpy as np
import torch
from diffusers import (AutoencoderKL, DDIMScheduler, DiTPipeline, DPMSolverMultistepScheduler, EulerDiscreteScheduler,
                       PNDMScheduler, StableDiffusion3Pipeline, StableDiffusionPipeline, UNet2DConditionModel)
from diffusers.models.attention_processor import AttnProcessor
from diffusers.utils.torch_utils import randn_tensor

from harness import main, section

PROMPT = "the cat and a dog"
# Stable Diffusion 1.x's schedule
SD = dict(num_train_timesteps=1000, beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear")


def randn(*shape, seed=0):
    """Inputs both runs share: numpy's stream, not torch's."""
    return torch.from_numpy(np.random.RandomState(seed).standard_normal(shape).astype(np.float32))


# --- models -----------------------------------------------------------------------------------------

@section
def unet(folder, *_):
    model = UNet2DConditionModel.from_pretrained(os.path.join(folder, "unet")).eval()
    sample, text = randn(2, 4, 16, 16), randn(2, 5, 32, seed=1)
    out = model(sample, 10, encoder_hidden_states=text).sample
    yield "shape", list(out.shape)
    yield "dtype", str(out.dtype)
    yield "sample", out[:, :, ::3, ::3]
    # one timestep per row, as a tensor; return_dict=False gives a tuple
    out = model(sample, torch.tensor([1, 500]), text, return_dict=False)[0]
    yield "timesteps_tensor", out[:, :, ::3, ::3]
    yield "timestep_float", model(sample, torch.tensor(999.0), text).sample[:, :, ::5, ::5]


@section
def unet_classic_attention(folder, *_):
    """The pre-2.0 processor (baddbmm + softmax) instead of scaled_dot_product_attention."""
    model = UNet2DConditionModel.from_pretrained(os.path.join(folder, "unet")).eval()
    model.set_attn_processor(AttnProcessor())
    out = model(randn(1, 4, 16, 16), 250, encoder_hidden_states=randn(1, 7, 32, seed=2)).sample
    yield "sample", out[:, :, ::3, ::3]


@section
def vae(folder, *_):
    model = AutoencoderKL.from_pretrained(os.path.join(folder, "vae")).eval()
    image = randn(2, 3, 32, 32, seed=3).clamp(-1, 1)
    dist = model.encode(image).latent_dist
    yield "latent_shape", list(dist.mean.shape)
    yield "mean", dist.mean
    yield "std", dist.std
    yield "mode", dist.mode()
    latents = randn(2, 4, 16, 16, seed=4)
    decoded = model.decode(latents).sample
    yield "decoded_shape", list(decoded.shape)
    yield "decoded", decoded[:, :, ::4, ::4]
    yield "scaling_factor", model.config.scaling_factor


# --- schedulers -------------------------------------------------------------------------------------

def run(scheduler, steps=6):
    scheduler.set_timesteps(steps)
    yield "timesteps", scheduler.timesteps
    yield "timesteps_dtype", str(scheduler.timesteps.dtype)
    if hasattr(scheduler, "sigmas"):
        yield "sigmas", scheduler.sigmas
    yield "init_noise_sigma", float(scheduler.init_noise_sigma)
    sample = randn(1, 4, 8, 8) * scheduler.init_noise_sigma
    for i, t in enumerate(scheduler.timesteps):
        model_input = scheduler.scale_model_input(sample, t)
        yield f"model_input_{i}", model_input[0, :2, ::2, ::2]
        # a model output that depends on its input, as a denoiser's does
        output = 0.3 * model_input + randn(1, 4, 8, 8, seed=10 + i)
        step = scheduler.step(output, t, sample)
        sample = step.prev_sample
        yield f"prev_sample_{i}", sample[0, :2, ::2, ::2]
        if getattr(step, "pred_original_sample", None) is not None:
            yield f"pred_original_{i}", step.pred_original_sample[0, :2, ::2, ::2]
    yield "final", sample
    original, noise = randn(3, 4, 4, 4, seed=1), randn(3, 4, 4, 4, seed=2)
    timesteps = scheduler.timesteps[:3]
    yield "add_noise", scheduler.add_noise(original, noise, timesteps)


@section
def ddim(*_):
    yield from run(DDIMScheduler(**SD, clip_sample=False, set_alpha_to_one=False, steps_offset=1))


@section
def ddim_v_prediction(*_):
    scheduler = DDIMScheduler(**SD, prediction_type="v_prediction", timestep_spacing="trailing",
                              rescale_betas_zero_snr=True)
    yield from run(scheduler)
    yield "velocity", scheduler.get_velocity(randn(2, 4, 4, 4, seed=3), randn(2, 4, 4, 4, seed=4),
                                             torch.tensor([10, 700]))


@section
def euler(*_):
    yield from run(EulerDiscreteScheduler(**SD, steps_offset=1))


@section
def euler_karras(*_):
    yield from run(EulerDiscreteScheduler(**SD, use_karras_sigmas=True, timestep_spacing="trailing"))


@section
def dpm_solver_pp(*_):
    yield from run(DPMSolverMultistepScheduler(**SD, algorithm_type="dpmsolver++", solver_order=2))


@section
def dpm_solver_pp_3rd_order_karras(*_):
    yield from run(DPMSolverMultistepScheduler(**SD, algorithm_type="dpmsolver++", solver_order=3,
                                               use_karras_sigmas=True), steps=8)


@section
def pndm(*_):
    yield from run(PNDMScheduler(**SD, skip_prk_steps=True, steps_offset=1))


@section
def pndm_prk(*_):
    yield from run(PNDMScheduler(**SD, steps_offset=1), steps=5)


# --- pipelines --------------------------------------------------------------------------------------

def image(array):
    """A pipeline's numpy image batch (N, H, W, C), every 4th pixel."""
    return torch.from_numpy(np.ascontiguousarray(array[:, ::4, ::4, :]))


_pipes = {}


def sd_pipe(folder):
    if folder not in _pipes:
        _pipes[folder] = StableDiffusionPipeline.from_pretrained(folder)
        _pipes[folder].set_progress_bar_config(disable=True)
    return _pipes[folder]


@section
def sd(folder, *_):
    pipe = sd_pipe(folder)
    yield "components", sorted(k for k, v in pipe.components.items() if v is not None)
    out = pipe(PROMPT, num_inference_steps=2, height=32, width=32, latents=randn(1, 4, 16, 16), output_type="np")
    yield "shape", list(out.images.shape)
    yield "dtype", str(out.images.dtype)
    yield "image", image(out.images)
    yield "nsfw", out.nsfw_content_detected


@section
def sd_euler(folder, *_):
    """Euler, a negative prompt, two images per prompt."""
    pipe = sd_pipe(folder)
    scheduler = pipe.scheduler
    pipe.scheduler = EulerDiscreteScheduler.from_config(scheduler.config)
    try:
        out = pipe(PROMPT, negative_prompt="a dog", num_inference_steps=3, height=32, width=32, guidance_scale=5.0,
                   num_images_per_prompt=2, latents=randn(2, 4, 16, 16, seed=1), output_type="np")
    finally:
        pipe.scheduler = scheduler
    yield "image", image(out.images)


@section
def sd_prompt_embeds(folder, *_):
    """encode_prompt, then the denoising loop from embeddings, latents out (no VAE decode)."""
    pipe = sd_pipe(folder)
    embeds, negative = pipe.encode_prompt(PROMPT, "cpu", 1, True, negative_prompt="")
    yield "prompt_embeds", embeds[0, :4]
    yield "negative_prompt_embeds", negative[0, :4]
    out = pipe(prompt_embeds=embeds, negative_prompt_embeds=negative, num_inference_steps=2, height=32, width=32,
               latents=randn(1, 4, 16, 16, seed=2), output_type="latent")
    yield "latents", out.images


@section
def sd_generator(folder, *_):
    """A seeded torch.Generator draws the starting noise: torch's own stream, so torch's image."""
    pipe = sd_pipe(folder)
    run = lambda seed: pipe(PROMPT, num_inference_steps=2, height=32, width=32,  # noqa: E731
                            generator=torch.Generator().manual_seed(seed), output_type="np").images
    first, again, other = run(0), run(0), run(1)
    yield "image", image(first)
    yield "same_seed_same_image", bool(np.array_equal(first, again))
    yield "other_seed_other_image", bool(not np.array_equal(first, other))
    # one generator per image, and noise from diffusers' own helper
    out = pipe([PROMPT, "a dog"], num_inference_steps=2, height=32, width=32, output_type="latent",
               generator=[torch.Generator().manual_seed(s) for s in (3, 4)])
    yield "latents_per_image_generators", out.images
    yield "randn_tensor", randn_tensor((2, 4, 8, 8), generator=torch.Generator().manual_seed(5))


@section
def sd3(_, folder, *__):
    pipe = StableDiffusion3Pipeline.from_pretrained(folder, text_encoder_3=None, tokenizer_3=None)
    pipe.set_progress_bar_config(disable=True)
    yield "components", sorted(k for k, v in pipe.components.items() if v is not None)
    out = pipe(PROMPT, num_inference_steps=2, height=32, width=32, guidance_scale=5.0, latents=randn(1, 4, 16, 16),
               output_type="np")
    yield "shape", list(out.images.shape)
    yield "image", image(out.images)
    out = pipe([PROMPT, "a dog"], num_inference_steps=2, height=32, width=32, guidance_scale=1.0,
               latents=randn(2, 4, 16, 16, seed=3), output_type="latent")
    yield "latents_no_guidance", out.images


@section
def dit(_, __, folder):
    """Class labels, classifier-free guidance against the null class, the noise from a seeded generator."""
    pipe = DiTPipeline.from_pretrained(folder, id2label={0: "cat", 1: "dog, puppy"})
    pipe.set_progress_bar_config(disable=True)
    yield "label_ids", pipe.get_label_ids(["puppy", "cat"])
    out = pipe(class_labels=[1, 0], guidance_scale=4.0, generator=torch.Generator().manual_seed(0),
               num_inference_steps=3, output_type="np")
    yield "shape", list(out.images.shape)
    yield "image", image(out.images)


if __name__ == "__main__":
    main(*sys.argv[1:4])
