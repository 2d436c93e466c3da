"""open_clip with a tiny registered ViT config and weights saved by real torch: create_model_and_transforms
with pretrained=<file> (.pt and .safetensors), the image preprocessing (torchvision transforms on a PIL
image), get_tokenizer (the BPE tokenizer that ships in the package), encode_image / encode_text and the
zero-shot probabilities.

    python open_clip_model.py CONFIG_DIR CHECKPOINT [section ...]   |   python -m candle_bind run open_clip_model.py ...
"""

import sys

import numpy as np
import open_clip
import torch
from PIL import Image

from harness import main, section

TEXTS = ["a diagram", "a photo of a dog", "a photo of a cat", "candle"]


def images():
    rng = np.random.default_rng(0)
    return [Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8)) for h, w in ((40, 56), (32, 32))]


def results(config_dir, checkpoint):
    open_clip.add_model_config(config_dir)
    model, _, preprocess = open_clip.create_model_and_transforms("TinyCLIP", pretrained=checkpoint)
    model.eval()
    tokenizer = open_clip.get_tokenizer("TinyCLIP")
    pixels = torch.stack([preprocess(im) for im in images()])
    tokens = tokenizer(TEXTS)
    yield "pixels_shape", list(pixels.shape)
    yield "pixels", pixels[:, :, :4, :4]
    yield "tokens", tokens
    image_features = model.encode_image(pixels)
    text_features = model.encode_text(tokens)
    yield "image_features", image_features
    yield "text_features", text_features
    image_features = image_features / image_features.norm(dim=-1, keepdim=True)
    text_features = text_features / text_features.norm(dim=-1, keepdim=True)
    yield "probs", (100.0 * image_features @ text_features.T).softmax(dim=-1)
    forward_image, forward_text, logit_scale = model(pixels, tokens)
    yield "forward_image", forward_image
    yield "forward_text", forward_text
    yield "logit_scale", logit_scale


@section
def pt(config_dir, checkpoint):
    yield from results(config_dir, checkpoint + ".pt")


@section
def safetensors(config_dir, checkpoint):
    yield from results(config_dir, checkpoint + ".safetensors")


if __name__ == "__main__":
    main(*sys.argv[1:3])
