"""timm, unmodified: `timm.create_model(name, pretrained=False, ...)` builds each architecture, loads the
state_dict real torch saved (tests/test_timm.py) and runs a batch of 2 images; `features_only=True`
feature maps; `resolve_data_config` + `create_transform` on a Pillow image."""

import os
import sys

import numpy as np
import torch
from harness import main, section

# name -> (timm model name, create_model kwargs, input size); small widths/depths where timm takes them.
MODELS = {
    "resnet18": ("resnet18", {}, 64),
    "resnet50": ("resnet50", {}, 64),
    "efficientnet_b0": ("efficientnet_b0", {}, 64),
    "convnext_atto": ("convnext_atto", {}, 64),
    "vit_tiny": ("vit_tiny_patch16_224", dict(img_size=32, depth=2), 32),
    "deit_tiny": ("deit_tiny_patch16_224", dict(img_size=32, depth=2), 32),
    "swin_tiny": ("swin_tiny_patch4_window7_224", dict(img_size=32, window_size=4, embed_dim=16, depths=(2, 2),
                                                       num_heads=(1, 2)), 32),
    "regnetx_002": ("regnetx_002", {}, 64),
    "mobilenetv3_small_100": ("mobilenetv3_small_100", {}, 64),
    "eva02_tiny": ("eva02_tiny_patch14_224", dict(img_size=28, depth=2), 28),
}
# name -> (timm model name, kwargs, input size): features_only backbones (feature maps per stage)
FEATURES = {
    "resnet18_features": ("resnet18", dict(features_only=True, out_indices=(1, 2, 3)), 64),
    "convnext_features": ("convnext_atto", dict(features_only=True), 64),
    "efficientnet_features": ("efficientnet_b0", dict(features_only=True, out_indices=(2, 4)), 64),
}
ALL = {**MODELS, **FEATURES}


def build(name):
    import timm

    model_name, kwargs, _ = ALL[name]
    extra = {} if kwargs.get("features_only") else {"num_classes": 5}
    return timm.create_model(model_name, pretrained=False, **extra, **kwargs).eval()


def images(size, batch=2):
    return torch.from_numpy(np.random.default_rng(0).standard_normal((batch, 3, size, size)).astype(np.float32))


def _model_section(name):
    def run(folder):
        model = build(name)
        model.load_state_dict(torch.load(os.path.join(folder, f"{name}.pt")))
        out = model(images(ALL[name][2]))
        if isinstance(out, (list, tuple)):
            yield "channels", list(model.feature_info.channels())
            yield "reduction", list(model.feature_info.reduction())
            for i, fmap in enumerate(out):
                yield f"shape{i}", list(fmap.shape)
                yield f"map{i}", fmap[:, :4]
        else:
            yield "shape", list(out.shape)
            yield "logits", out

    run.__name__ = name
    return run


for _name in ALL:
    section(_model_section(_name))


@section
def data_transforms(folder):
    import PIL.Image
    import timm
    from timm.data import create_transform, resolve_data_config

    model = timm.create_model("resnet18", pretrained=False, num_classes=5)
    config = resolve_data_config({}, model=model)
    yield "config", sorted((k, str(v)) for k, v in config.items())
    pixels = (np.random.default_rng(1).random((40, 50, 3)) * 255).astype(np.uint8)
    image = PIL.Image.fromarray(pixels)
    for train in (False,):
        transform = create_transform(**config, is_training=train)
        yield "eval_transform", str(transform).count("\n")
        out = transform(image)
        yield "eval_shape", list(out.shape)
        yield "eval", out[:, ::8, ::8]
    small = create_transform(input_size=(3, 32, 32), interpolation="bicubic", crop_pct=0.875)
    yield "small", small(image)


if __name__ == "__main__":
    torch.set_num_threads(1)
    main(sys.argv[1])
