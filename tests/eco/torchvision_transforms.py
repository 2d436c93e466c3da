"""torchvision.transforms (v1 and v2) and their functional forms on tensors, tv_tensors and Pillow images,
unmodified. Random transforms draw from the library's RNG, which is not torch's under the shim: those
sections print shapes only."""

import sys

import numpy as np
import PIL.Image
import torch
from harness import main, section
from torchvision import transforms as T
from torchvision import tv_tensors
from torchvision.transforms import functional as F
from torchvision.transforms import v2
from torchvision.transforms.v2 import functional as F2

RNG = np.random.default_rng(0)
IMAGE = torch.from_numpy(RNG.random((3, 20, 24)).astype(np.float32))
BATCH = torch.from_numpy(RNG.random((2, 3, 17, 13)).astype(np.float32))
U8 = (IMAGE * 255).to(torch.uint8)
PIL_IMAGE = PIL.Image.fromarray(U8.permute(1, 2, 0).numpy())
BILINEAR, BICUBIC, NEAREST = T.InterpolationMode.BILINEAR, T.InterpolationMode.BICUBIC, T.InterpolationMode.NEAREST


@section
def resize():
    for aa in (True, False):
        yield f"bilinear_down_aa{aa}", T.Resize((10, 12), antialias=aa)(IMAGE)
        yield f"bilinear_up_aa{aa}", T.Resize((27, 29), antialias=aa)(IMAGE)
        yield f"bicubic_down_aa{aa}", T.Resize((9, 11), interpolation=BICUBIC, antialias=aa)(IMAGE)
        yield f"bicubic_up_aa{aa}", T.Resize((30, 31), interpolation=BICUBIC, antialias=aa)(IMAGE)
        yield f"batch_aa{aa}", F.resize(BATCH, [7, 9], antialias=aa)
    yield "nearest", T.Resize(15, interpolation=NEAREST)(IMAGE)
    yield "shorter_side", list(T.Resize(8)(IMAGE).shape)
    yield "max_size", list(T.Resize(8, max_size=9)(IMAGE).shape)
    yield "uint8", T.Resize((10, 12))(U8).float()
    yield "uint8_up_noaa", T.Resize((31, 37), antialias=False)(U8).float()
    yield "uint8_bicubic_down", T.Resize((9, 11), interpolation=BICUBIC)(U8).float()
    yield "uint8_bicubic_up_noaa", T.Resize((30, 31), interpolation=BICUBIC, antialias=False)(U8).float()
    yield "uint8_dtype", str(T.Resize((10, 12))(U8).dtype)


@section
def geometry():
    yield "center_crop", T.CenterCrop(11)(IMAGE)
    yield "center_crop_pad", T.CenterCrop((24, 30))(IMAGE)
    yield "crop", F.crop(IMAGE, 2, 3, 7, 9)
    yield "five_crop", torch.stack(T.FiveCrop(6)(IMAGE))
    yield "hflip", F.hflip(IMAGE)
    yield "vflip", F.vflip(IMAGE)
    yield "resized_crop", F.resized_crop(IMAGE, 2, 3, 10, 12, [8, 8], antialias=True)
    for mode in ("constant", "edge", "reflect", "symmetric"):
        yield f"pad_{mode}", T.Pad([1, 2, 3, 4], fill=0.5 if mode == "constant" else 0, padding_mode=mode)(IMAGE)
    yield "rotate90", F.rotate(IMAGE, 90.0)
    yield "rotate_expand", list(F.rotate(IMAGE, 30.0, expand=True).shape)
    yield "affine", F.affine(IMAGE, angle=15.0, translate=[2, 1], scale=1.1, shear=[5.0, 0.0])


@section
def normalize_and_dtypes():
    yield "normalize", T.Normalize([0.5, 0.4, 0.3], [0.2, 0.3, 0.4])(IMAGE)
    yield "convert_image_dtype", T.ConvertImageDtype(torch.float32)(U8)
    yield "convert_to_uint8", T.ConvertImageDtype(torch.uint8)(IMAGE).float()
    yield "to_dtype_scale", v2.ToDtype(torch.float32, scale=True)(U8)
    yield "to_dtype_noscale", v2.ToDtype(torch.float32)(U8)
    yield "to_tensor", F.to_tensor(PIL_IMAGE)
    yield "pil_to_tensor", F.pil_to_tensor(PIL_IMAGE).float()
    yield "to_pil_roundtrip", F.pil_to_tensor(F.to_pil_image(IMAGE)).float()
    pipeline = T.Compose([T.Resize(16), T.CenterCrop(12), T.ToTensor(), T.Normalize([0.5] * 3, [0.25] * 3)])
    yield "compose", pipeline(PIL_IMAGE)


@section
def color():
    yield "grayscale1", T.Grayscale()(IMAGE)
    yield "grayscale3", F.rgb_to_grayscale(IMAGE, num_output_channels=3)
    yield "grayscale_u8", F.rgb_to_grayscale(U8).float()
    yield "brightness", F.adjust_brightness(IMAGE, 1.3)
    yield "contrast", F.adjust_contrast(IMAGE, 0.7)
    yield "saturation", F.adjust_saturation(IMAGE, 0.5)
    yield "hue", F.adjust_hue(IMAGE, 0.2)
    yield "hue_u8", F.adjust_hue(U8, -0.3).float()
    yield "gamma", F.adjust_gamma(IMAGE, 0.8)
    yield "sharpness", F.adjust_sharpness(IMAGE, 2.0)
    yield "invert", F.invert(IMAGE)
    yield "posterize", F.posterize(U8, 3).float()
    yield "solarize", F.solarize(IMAGE, 0.5)
    yield "autocontrast", F.autocontrast(IMAGE)
    yield "equalize", F.equalize(U8).float()
    yield "gaussian_blur", F.gaussian_blur(IMAGE, [5, 3], [1.5, 0.8])


@section
def random_shapes():
    torch.manual_seed(0)
    yield "random_resized_crop", list(T.RandomResizedCrop(8)(IMAGE).shape)
    yield "random_crop", list(T.RandomCrop(9, padding=2)(IMAGE).shape)
    yield "random_hflip", list(T.RandomHorizontalFlip()(IMAGE).shape)
    yield "color_jitter", list(T.ColorJitter(0.2, 0.2, 0.2, 0.1)(IMAGE).shape)
    yield "v2_random_resized_crop", list(v2.RandomResizedCrop(8)(tv_tensors.Image(IMAGE)).shape)
    yield "autoaugment", list(T.AutoAugment()(U8).shape)
    yield "randaugment", list(v2.RandAugment()(U8).shape)


@section
def v2_tv_tensors():
    image = tv_tensors.Image(IMAGE)
    yield "image_type", type(image).__name__
    resized = v2.Resize((10, 12))(image)
    yield "resized_type", type(resized).__name__
    yield "resized", resized
    yield "op_unwraps", type(image + 1).__name__
    yield "clone_keeps", type(image.clone()).__name__
    yield "to_keeps", type(image.to(torch.float64)).__name__
    boxes = tv_tensors.BoundingBoxes([[1, 2, 10, 12], [0, 0, 5, 5]], format="XYXY", canvas_size=(20, 24))
    mask = tv_tensors.Mask((IMAGE[0] > 0.5).to(torch.uint8))
    out_image, out_boxes, out_mask = v2.Resize((10, 12))(image, boxes, mask)
    yield "boxes_type", type(out_boxes).__name__
    yield "boxes", out_boxes
    yield "boxes_canvas", list(out_boxes.canvas_size)
    yield "boxes_format", str(out_boxes.format)
    yield "mask", out_mask.float()
    flipped = v2.RandomHorizontalFlip(p=1.0)({"image": image, "boxes": boxes, "mask": mask, "label": 3})
    yield "dict_flip_boxes", flipped["boxes"]
    yield "dict_flip_label", flipped["label"]
    yield "cxcywh", F2.convert_bounding_box_format(boxes, new_format="CXCYWH")
    with tv_tensors.set_return_type("TVTensor"):
        yield "return_type_tvtensor", type(image + 1).__name__
    pipeline = v2.Compose([v2.ToImage(), v2.ToDtype(torch.float32, scale=True), v2.Resize(16), v2.CenterCrop(12),
                           v2.Normalize([0.5] * 3, [0.25] * 3)])
    out = pipeline(PIL_IMAGE)
    yield "compose_type", type(out).__name__
    yield "compose", out
    yield "to_pure", type(v2.ToPureTensor()(image)).__name__


@section
def hf_image_processors():
    # transformers' image processors resize, rescale and normalise through torchvision when it is installed
    import transformers

    for name in ("ViTImageProcessor", "CLIPImageProcessor", "ConvNextImageProcessor"):
        processor = getattr(transformers, name)()
        pixels = processor(images=[PIL_IMAGE, PIL_IMAGE.rotate(90, expand=True)], return_tensors="pt")["pixel_values"]
        yield f"{name}_shape", list(pixels.shape)
        yield name, pixels[:, :, ::16, ::16]


@section
def clamp_boxes():
    # torchvision clamps in place through stepped slices (boxes[..., 0::2].clamp_()).
    yield "clamp", F2.clamp_bounding_boxes(tv_tensors.BoundingBoxes([[-3, 2, 30, 12]], format="XYXY",
                                                                    canvas_size=(20, 24)))


if __name__ == "__main__":
    torch.set_num_threads(1)
    main()
