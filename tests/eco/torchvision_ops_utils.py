"""torchvision.ops (box ops, layers), torchvision.utils (grids, drawing, save_image) and torchvision.io
(image decoding and encoding: Pillow stands in for torchvision's compiled codecs under the shim),
unmodified. Layers get their weights from numpy's seeded generator, so both runs use the same ones.
Argument: a scratch folder (the image files)."""

import os
import sys

import numpy as np
import PIL.Image
import torch
import torchvision
from harness import main, section
from torchvision import ops, utils
from torchvision.io import ImageReadMode, decode_image, decode_jpeg, decode_png, encode_jpeg, encode_png, read_file
from torchvision.io import read_image, write_png

RNG = np.random.default_rng(0)
BOXES = torch.from_numpy(np.sort(RNG.random((6, 2, 2)) * 30, axis=1).reshape(6, 4).astype(np.float32))
OTHER = torch.from_numpy(np.sort(RNG.random((4, 2, 2)) * 30, axis=1).reshape(4, 4).astype(np.float32))
SCORES = torch.from_numpy(RNG.random(6).astype(np.float32))
FEATURES = torch.from_numpy(RNG.standard_normal((2, 8, 12, 10)).astype(np.float32))
U8 = torch.from_numpy((RNG.random((3, 20, 24)) * 255).astype(np.uint8))


def filled(module):
    """The module with weights (and BatchNorm statistics) from numpy's generator, in eval mode."""
    rng = np.random.default_rng(1)
    with torch.no_grad():
        for name, t in [*module.named_parameters(), *module.named_buffers()]:
            if t.is_floating_point():
                values = rng.standard_normal(tuple(t.shape)).astype(np.float32) * 0.3
                t.copy_(torch.from_numpy(np.abs(values) + 0.5 if name.endswith("running_var") else values))
    return module.eval()


@section
def box_ops(folder):
    yield "area", ops.box_area(BOXES)
    yield "iou", ops.box_iou(BOXES, OTHER)
    yield "giou", ops.generalized_box_iou(BOXES, OTHER)
    yield "diou", ops.distance_box_iou(BOXES, OTHER)
    yield "ciou", ops.complete_box_iou(BOXES, OTHER)
    for fmt in ("xywh", "cxcywh"):
        converted = ops.box_convert(BOXES, "xyxy", fmt)
        yield f"to_{fmt}", converted
        yield f"from_{fmt}", ops.box_convert(converted, fmt, "xyxy")
    yield "clip", ops.clip_boxes_to_image(BOXES - 5, (20, 22))
    yield "remove_small", ops.remove_small_boxes(BOXES, 8.0)
    yield "nms", ops.nms(BOXES, SCORES, 0.3)
    yield "batched_nms", ops.batched_nms(BOXES, SCORES, torch.tensor([0, 1, 0, 1, 0, 1]), 0.3)
    yield "masks_to_boxes", ops.masks_to_boxes(torch.from_numpy(RNG.random((2, 10, 12)) > 0.7))
    yield "focal_loss", ops.sigmoid_focal_loss(FEATURES[:, 0], (FEATURES[:, 1] > 0).float(), reduction="mean")


@section
def roi(folder):
    rois = torch.cat([torch.tensor([[0.0], [1.0], [0.0]]), BOXES[:3] / 3], dim=1)
    yield "roi_align", ops.roi_align(FEATURES, rois, output_size=(3, 2), spatial_scale=0.5, sampling_ratio=2,
                                     aligned=True)
    yield "roi_pool", ops.roi_pool(FEATURES, rois, output_size=2)
    pooler = ops.MultiScaleRoIAlign(["a", "b"], output_size=3, sampling_ratio=2)
    maps = {"a": FEATURES, "b": FEATURES[:, :, ::2, ::2].contiguous()}
    yield "multiscale", pooler(maps, [BOXES[:3], BOXES[3:]], [(48, 40), (48, 40)])


@section
def layers(folder):
    fpn = filled(ops.FeaturePyramidNetwork([8, 16], 6))
    maps = {"c3": FEATURES, "c4": torch.from_numpy(RNG.standard_normal((2, 16, 6, 5)).astype(np.float32))}
    for key, value in fpn(maps).items():
        yield f"fpn_{key}", value
    yield "stochastic_depth", ops.StochasticDepth(0.5, "row").eval()(FEATURES)
    yield "drop_block", ops.DropBlock2d(0.5, 3).eval()(FEATURES)
    yield "conv_norm_act", filled(ops.Conv2dNormActivation(8, 4, kernel_size=3, stride=2))(FEATURES)
    yield "conv_norm_act_hswish", filled(ops.Conv2dNormActivation(8, 4, 1, activation_layer=torch.nn.Hardswish))(
        FEATURES)
    yield "squeeze_excitation", filled(ops.SqueezeExcitation(8, 2))(FEATURES)
    yield "mlp", filled(ops.MLP(10, [16, 5], norm_layer=torch.nn.LayerNorm, dropout=0.1))(FEATURES)
    yield "frozen_bn", filled(ops.FrozenBatchNorm2d(8))(FEATURES)
    yield "permute", ops.Permute([0, 2, 3, 1])(FEATURES)


@section
def drawing(folder):
    batch = torch.from_numpy(RNG.random((5, 3, 8, 9)).astype(np.float32))
    yield "make_grid", utils.make_grid(batch, nrow=3, padding=1)
    yield "make_grid_normalize", utils.make_grid(batch * 4 - 1, normalize=True, scale_each=True)
    boxes = BOXES[:3] * 0.6
    drawn = utils.draw_bounding_boxes(U8, boxes, labels=["a", "b", "c"], colors=["red", "#00ff00", (0, 0, 255)],
                                      width=2)
    yield "boxes", drawn.float()
    yield "boxes_fill", utils.draw_bounding_boxes(U8, boxes, fill=True, colors="yellow").float()
    masks = torch.from_numpy(RNG.random((2, 20, 24)) > 0.6)
    yield "masks", utils.draw_segmentation_masks(U8, masks, alpha=0.5, colors=["blue", "green"]).float()
    keypoints = torch.tensor([[[3.0, 4.0], [10.0, 12.0], [18.0, 5.0]]])
    yield "keypoints", utils.draw_keypoints(U8, keypoints, connectivity=[(0, 1), (1, 2)], colors="red",
                                            radius=2).float()
    path = os.path.join(folder, "grid.png")
    utils.save_image(batch, path, nrow=2)
    yield "save_image", torch.from_numpy(np.asarray(PIL.Image.open(path))).float()


@section
def image_io(folder):
    pixels = (np.random.default_rng(2).random((20, 24, 3)) * 255).astype(np.uint8)
    png, jpg = os.path.join(folder, "image.png"), os.path.join(folder, "image.jpg")
    PIL.Image.fromarray(pixels).save(png)
    PIL.Image.fromarray(pixels).save(jpg, quality=90)
    PIL.Image.fromarray(pixels).convert("RGBA").save(os.path.join(folder, "rgba.png"))
    for name in ("image.png", "rgba.png", "image.jpg"):
        path = os.path.join(folder, name)
        for mode in ("UNCHANGED", "GRAY", "RGB") + (("GRAY_ALPHA", "RGB_ALPHA") if name.endswith("png") else ()):
            out = read_image(path, getattr(ImageReadMode, mode))
            yield f"{name}_{mode}_dtype", str(out.dtype)
            yield f"{name}_{mode}", out.float()
    data = read_file(png)
    yield "read_file", [data.numel(), str(data.dtype)]
    yield "decode_image", decode_image(data).float()
    yield "decode_png", decode_png(data, ImageReadMode.GRAY).float()
    yield "decode_jpeg", decode_jpeg(read_file(jpg)).float()
    yield "png_roundtrip", decode_png(encode_png(U8)).float()
    yield "jpeg_roundtrip_shape", list(decode_jpeg(encode_jpeg(U8, quality=95)).shape)
    write_png(U8, os.path.join(folder, "written.png"))
    yield "write_png", read_image(os.path.join(folder, "written.png")).float()
    try:
        decode_image(torch.tensor([1, 2, 3], dtype=torch.uint8))
    except RuntimeError as e:
        yield "bad_bytes", type(e).__name__


if __name__ == "__main__":
    torch.set_num_threads(1)
    torchvision.disable_beta_transforms_warning() if hasattr(torchvision, "disable_beta_transforms_warning") else None
    main(sys.argv[1])
