"""torchvision's compiled operators, `torch.ops.torchvision.*`, served by our Rust kernels (src/vision/,
torchvision's CPU kernels' arithmetic). `torch.ops.load_library` registers them when torchvision loads
its extension (`torchvision/_C_stable.so`), so `torchvision.extension._has_ops()` is True and
`torchvision.ops.nms`, `roi_align`, `roi_pool`, `ps_roi_align`, `ps_roi_pool` and `deform_conv2d` run
unmodified. Inference only: the backward ops say so."""

from __future__ import annotations

from pathlib import Path

from . import _C

# The extension names torchvision loads its operators from (other libraries stay unloadable).
_EXTENSIONS = ("_C", "_C_stable")


def is_torchvision_extension(path) -> bool:
    p = Path(str(path))
    return p.parent.name == "torchvision" and p.name.split(".")[0] in _EXTENSIONS


def nms(dets, scores, iou_threshold):
    return _C.vision_nms(dets, scores, float(iou_threshold))


def roi_align(input, rois, spatial_scale, pooled_height, pooled_width, sampling_ratio, aligned):
    return _C.vision_roi_align(input, rois, float(spatial_scale), int(pooled_height), int(pooled_width),
                               int(sampling_ratio), bool(aligned))


def roi_pool(input, rois, spatial_scale, pooled_height, pooled_width):
    return _C.vision_roi_pool(input, rois, float(spatial_scale), int(pooled_height), int(pooled_width))


def ps_roi_align(input, rois, spatial_scale, pooled_height, pooled_width, sampling_ratio):
    return _C.vision_ps_roi_align(input, rois, float(spatial_scale), int(pooled_height), int(pooled_width),
                                  int(sampling_ratio))


def ps_roi_pool(input, rois, spatial_scale, pooled_height, pooled_width):
    return _C.vision_ps_roi_pool(input, rois, float(spatial_scale), int(pooled_height), int(pooled_width))


def deform_conv2d(input, weight, offset, mask, bias, stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w,
                  groups, offset_groups, use_mask):
    return _C.vision_deform_conv2d(input, weight, offset, mask, bias, int(stride_h), int(stride_w), int(pad_h),
                                   int(pad_w), int(dilation_h), int(dilation_w), int(groups), int(offset_groups),
                                   bool(use_mask))


def _cuda_version():
    # torchvision's value for a build without CUDA.
    return -1


def _unsupported(name: str, why: str):
    def op(*args, **kwargs):
        raise NotImplementedError(f"torch.ops.torchvision.{name} is not supported by candle_bind: {why}")

    op.__name__ = name
    return op


_BACKWARD = ("_roi_align_backward", "_roi_pool_backward", "_ps_roi_align_backward", "_ps_roi_pool_backward",
             "_deform_conv2d_backward")
# Quantized tensors (qnms, qroi_align) and rotated boxes have no kernels here.
_MISSING = {"qnms": "quantized tensors are not supported; use torchvision.ops.nms on float boxes",
            "qroi_align": "quantized tensors are not supported; use torchvision.ops.roi_align on float tensors",
            "box_iou_rotated": "rotated boxes are not supported yet; use box_iou on axis-aligned boxes"}


def register() -> None:
    """Registers the operators under `torch.ops.torchvision` (idempotent)."""
    from .library import _OPS, CustomOpDef

    ops = {f.__name__: f for f in (nms, roi_align, roi_pool, ps_roi_align, ps_roi_pool, deform_conv2d, _cuda_version)}
    for name in _BACKWARD:
        ops[name] = _unsupported(name, "its operators run for inference only (no autograd)")
    for name, why in _MISSING.items():
        ops[name] = _unsupported(name, why)
    for name, fn in ops.items():
        _OPS[f"torchvision::{name}"] = CustomOpDef(f"torchvision::{name}", fn)
