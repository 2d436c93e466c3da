"""torchvision's image codecs, `torch.ops.image.*`, served by Pillow: torchvision.io loads them from its
compiled extension (`torchvision/image.so`), which cannot load under candle_bind; `torch.ops.load_library`
registers these instead, so `read_image`, `decode_image`, `decode_jpeg`/`png`/`gif`/`webp`, `encode_png`,
`encode_jpeg`, `read_file` and `write_file` run unmodified. Decoded pixels are libjpeg's and libpng's, as
torchvision's (Pillow is built on the same libraries; its grayscale conversions are replaced by the ones
torchvision asks those libraries for). Encoded bytes are Pillow's: they decode to the same image but are
not byte-identical to torchvision's. GPU decoding, AVIF and HEIC raise and say so."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np

from . import _C

# ImageReadMode values
UNCHANGED, GRAY, GRAY_ALPHA, RGB, RGB_ALPHA = 0, 1, 2, 3, 4
_EXTENSIONS = ("image", "image_stable")


def is_image_extension(path) -> bool:
    p = Path(str(path))
    return p.parent.name == "torchvision" and p.name.split(".")[0] in _EXTENSIONS


def _bytes(data) -> bytes:
    if not isinstance(data, _C.Tensor) or data.dtype != _C.uint8 or data.dim() != 1:
        raise RuntimeError("Expected a non empty 1-dimensional tensor of dtype uint8")
    if data.numel() == 0:
        raise RuntimeError("Expected a non empty 1-dimensional tensor")
    return data.cpu().numpy().tobytes()


def _to_tensor(array: np.ndarray):
    """HWC (or HW) pixels -> a CHW tensor of their dtype."""
    if array.ndim == 2:
        array = array[:, :, None]
    return _C.from_numpy(np.ascontiguousarray(array.transpose(2, 0, 1)))


_UNSUPPORTED = ("Unsupported image file. Only jpeg, png, webp and gif are currently supported. For avif and heic "
                "format, please rely on `decode_avif` and `decode_heic` directly.")


def _open(data: bytes):
    from PIL import Image, UnidentifiedImageError

    try:
        return Image.open(io.BytesIO(data))
    except UnidentifiedImageError:
        raise RuntimeError(_UNSUPPORTED) from None


def _gray_libpng(rgb: np.ndarray) -> np.ndarray:
    """libpng's rgb_to_gray with the coefficients torchvision sets (0.2989, 0.587; 15-bit fixed point,
    truncated as libpng's 8-bit path does)."""
    r, g, b = (rgb[..., i].astype(np.int64) for i in range(3))
    return ((9794 * r + 19234 * g + 3740 * b) >> 15).astype(rgb.dtype)


def _convert(pixels: np.ndarray, mode: int, fmt: str) -> np.ndarray:
    """HWC pixels with 1-4 channels to the ImageReadMode asked for."""
    channels = pixels.shape[2]
    has_alpha = channels in (2, 4)
    color = pixels[..., :3] if channels >= 3 else pixels[..., :1]
    opaque = np.iinfo(pixels.dtype).max
    alpha = pixels[..., -1:] if has_alpha else np.full(pixels.shape[:2] + (1,), opaque, pixels.dtype)
    if mode == UNCHANGED:
        return pixels
    if mode in (GRAY, GRAY_ALPHA):
        gray = color if color.shape[2] == 1 else _gray_libpng(color)[..., None]
        return gray if mode == GRAY else np.concatenate([gray, alpha], axis=2)
    if mode in (RGB, RGB_ALPHA):
        rgb = np.repeat(color, 3, axis=2) if color.shape[2] == 1 else color
        return rgb if mode == RGB else np.concatenate([rgb, alpha], axis=2)
    raise RuntimeError(f"The provided mode is not supported for {fmt} files")


def _pixels(image) -> np.ndarray:
    """A Pillow image's pixels as HWC, palettes expanded (as libpng's palette_to_rgb), 16-bit kept."""
    if image.mode == "P":
        image = image.convert("RGBA" if "transparency" in image.info else "RGB")
    elif image.mode in ("I;16", "I;16B", "I"):
        return np.asarray(image).astype(np.uint16)[..., None]
    elif image.mode == "1":
        image = image.convert("L")
    elif image.mode not in ("L", "LA", "RGB", "RGBA"):
        image = image.convert("RGB")
    array = np.asarray(image)
    return array if array.ndim == 3 else array[..., None]


def _exif(image, apply: bool):
    if not apply:
        return image
    from PIL import ImageOps

    return ImageOps.exif_transpose(image)


def decode_png(data, mode=UNCHANGED, apply_exif_orientation=False):
    image = _open(_bytes(data))
    if image.format != "PNG":
        raise RuntimeError("Content is not png!")
    return _to_tensor(_convert(_pixels(_exif(image, apply_exif_orientation)), mode, "PNG"))


def decode_jpeg(data, mode=UNCHANGED, apply_exif_orientation=False):
    image = _open(_bytes(data))
    if image.format != "JPEG":
        raise RuntimeError("Not a JPEG file")
    if mode not in (UNCHANGED, GRAY, RGB):
        raise RuntimeError("The provided mode is not supported for JPEG files")
    if mode == GRAY:
        image.draft("L", image.size)  # libjpeg's own grayscale output (its Y channel), as torchvision asks
    elif mode == RGB or image.mode == "CMYK":
        image.draft("RGB", image.size)
    image = _exif(image, apply_exif_orientation)
    if mode == GRAY and image.mode != "L":
        image = image.convert("L")
    if mode == RGB and image.mode != "RGB":
        image = image.convert("RGB")
    return _to_tensor(_pixels(image))


def decode_gif(data):
    """All frames: (C, H, W) for one frame, (N, C, H, W) for more, RGB, as torchvision's."""
    from PIL import ImageSequence

    image = _open(_bytes(data))
    if image.format != "GIF":
        raise RuntimeError("Not a GIF file")
    frames = [np.asarray(f.convert("RGB")) for f in ImageSequence.Iterator(image)]
    out = np.stack([f.transpose(2, 0, 1) for f in frames])
    return _C.from_numpy(np.ascontiguousarray(out[0] if len(frames) == 1 else out))


def decode_webp(data, mode=UNCHANGED):
    image = _open(_bytes(data))
    if image.format != "WEBP":
        raise RuntimeError("Not a WEBP file")
    image = image.convert("RGBA" if image.mode in ("RGBA", "LA") or mode == RGB_ALPHA else "RGB")
    return _to_tensor(_convert(np.asarray(image), mode, "WEBP"))


_DECODERS = {"PNG": decode_png, "JPEG": decode_jpeg, "GIF": lambda d, m, e: decode_gif(d),
             "WEBP": lambda d, m, e: decode_webp(d, m)}


def decode_image(data, mode=UNCHANGED, apply_exif_orientation=False):
    fmt = _open(_bytes(data)).format
    if fmt not in _DECODERS:
        raise RuntimeError(_UNSUPPORTED)
    return _DECODERS[fmt](data, mode, apply_exif_orientation)


def _image_of(input):
    from PIL import Image

    if not isinstance(input, _C.Tensor) or input.dtype != _C.uint8:
        raise RuntimeError("Input tensor dtype should be uint8")
    if input.dim() != 3 or input.shape[0] not in (1, 3):
        raise RuntimeError("The number of channels should be 1 or 3, got: "
                           f"{input.shape[0] if input.dim() == 3 else input.dim()}")
    array = input.cpu().numpy().transpose(1, 2, 0)
    return Image.fromarray(array[..., 0] if array.shape[2] == 1 else array)


def _encoded(image, **kwargs):
    buffer = io.BytesIO()
    image.save(buffer, **kwargs)
    return _C.from_numpy(np.frombuffer(buffer.getvalue(), dtype=np.uint8).copy())


def encode_png(input, compression_level=6):
    if not 0 <= compression_level <= 9:
        raise RuntimeError("Compression level should be between 0 and 9")
    return _encoded(_image_of(input), format="PNG", compress_level=int(compression_level))


def encode_jpeg(input, quality=75):
    if not 1 <= quality <= 100:
        raise ValueError(f"Image quality should be a positive number between 1 and 100, got {quality}.")
    return _encoded(_image_of(input), format="JPEG", quality=int(quality))


def read_file(path):
    with open(path, "rb") as f:
        data = f.read()
    if not data:
        raise RuntimeError(f"File \"{path}\" is empty")
    return _C.from_numpy(np.frombuffer(data, dtype=np.uint8).copy())


def write_file(path, data):
    with open(path, "wb") as f:
        f.write(_bytes(data))
    return data


def _unsupported(name: str, why: str):
    def op(*args, **kwargs):
        raise NotImplementedError(f"torch.ops.image.{name} is not supported by candle_bind: {why}")

    op.__name__ = name
    return op


def register() -> None:
    """Registers the codecs under `torch.ops.image` (idempotent)."""
    from .library import _OPS, CustomOpDef

    ops = {f.__name__: f for f in (decode_png, decode_jpeg, decode_gif, decode_webp, decode_image, encode_png,
                                   encode_jpeg, read_file, write_file)}
    for name in ("decode_jpegs_cuda", "encode_jpegs_cuda"):
        ops[name] = _unsupported(name, "GPU image codecs need torchvision's CUDA build (nvjpeg); decode on the "
                                       "CPU (device='cpu') and move the tensor")
    for name, fn in ops.items():
        _OPS[f"image::{name}"] = CustomOpDef(f"image::{name}", fn)
