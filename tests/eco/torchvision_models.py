"""torchvision's model builders, unmodified: each architecture is built with `weights=None`, loads the
state_dict that real torch saved (tests/test_torchvision.py builds them seeded, BatchNorm running stats
randomised) and runs a batch of 2 images; one section per model prints its logits (or output maps)."""

import os
import sys

import numpy as np
import torch
from harness import main, section

# name -> (builder expression, input size); small inputs and, where the builder allows, small widths.
CLASSIFIERS = {
    "resnet18": ("models.resnet18(num_classes=10)", 64),
    "resnext": ("models.ResNet(models.resnet.Bottleneck, [1, 1, 1, 1], groups=32, width_per_group=4, "
                "num_classes=10)", 64),
    "mobilenet_v2": ("models.mobilenet_v2(num_classes=10)", 64),
    "mobilenet_v3_small": ("models.mobilenet_v3_small(num_classes=10)", 64),
    "mobilenet_v3_large": ("models.mobilenet_v3_large(num_classes=10)", 64),
    "efficientnet_b0": ("models.efficientnet_b0(num_classes=10)", 64),
    "efficientnet_v2_s": ("models.efficientnet_v2_s(num_classes=10)", 64),
    "regnet_y_400mf": ("models.regnet_y_400mf(num_classes=10)", 64),
    "convnext_tiny": ("models.convnext_tiny(num_classes=10)", 64),
    "vit": ("models.VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2, hidden_dim=32, "
            "mlp_dim=64, num_classes=10)", 32),
    "swin": ("models.SwinTransformer(patch_size=[4, 4], embed_dim=16, depths=[2, 2], num_heads=[2, 2], "
             "window_size=[4, 4], num_classes=10)", 32),
    "swin_v2": ("models.SwinTransformer(patch_size=[4, 4], embed_dim=16, depths=[2, 2], num_heads=[2, 2], "
                "window_size=[4, 4], num_classes=10, block=models.swin_transformer.SwinTransformerBlockV2, "
                "downsample_layer=models.swin_transformer.PatchMergingV2)", 32),
    "maxvit": ("models.MaxVit(input_size=(32, 32), stem_channels=8, partition_size=2, block_channels=[8, 16], "
               "block_layers=[1, 1], head_dim=4, stochastic_depth_prob=0.0, num_classes=10)", 32),
    "densenet": ("models.DenseNet(growth_rate=8, block_config=(2, 2, 2), num_init_features=16, num_classes=10)", 64),
    "squeezenet1_0": ("models.squeezenet1_0(num_classes=10)", 64),
    "squeezenet1_1": ("models.squeezenet1_1(num_classes=10)", 64),
    "shufflenet_v2_x0_5": ("models.shufflenet_v2_x0_5(num_classes=10)", 64),
    "mnasnet0_5": ("models.mnasnet0_5(num_classes=10)", 64),
    "googlenet": ("models.googlenet(num_classes=10, aux_logits=False, init_weights=True)", 64),
}

# segmentation: dict outputs ("out" maps at the input size)
SEGMENTERS = {
    "deeplabv3_mobilenet_v3_large": ("models.segmentation.deeplabv3_mobilenet_v3_large(weights=None, "
                                     "weights_backbone=None, num_classes=3)", 32),
    "lraspp_mobilenet_v3_large": ("models.segmentation.lraspp_mobilenet_v3_large(weights=None, "
                                  "weights_backbone=None, num_classes=3)", 32),
}
MODELS = {**CLASSIFIERS, **SEGMENTERS}


def build(name):
    from torchvision import models  # noqa: F401 - the builder expressions name it

    return eval(MODELS[name][0]).eval()


def images(size, batch=2):
    return torch.from_numpy(np.random.default_rng(0).standard_normal((batch, 3, size, size)).astype(np.float32))


def _model_section(name):
    def run(folder):
        model = build(name)
        model.load_state_dict(torch.load(os.path.join(folder, f"{name}.pt")))
        out = model(images(MODELS[name][1]))
        if isinstance(out, dict):
            for key in sorted(out):
                yield f"{key}_shape", list(out[key].shape)
                yield key, out[key][:, :, ::4, ::4]
        else:
            yield "shape", list(out.shape)
            yield "logits", out

    run.__name__ = name
    return run


for _name in MODELS:
    section(_model_section(_name))

if __name__ == "__main__":
    torch.set_num_threads(1)
    main(sys.argv[1])
