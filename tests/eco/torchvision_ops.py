"""torchvision.ops end to end, unmodified (its compiled operators come from `torch.ops.torchvision`):
nms, batched_nms, box_iou, roi_align / RoIAlign, roi_pool, ps_roi_*, MultiScaleRoIAlign and
DeformConv2d with weights the test saved with real torch. Inputs come from numpy (seeded)."""

import os
import sys
from collections import OrderedDict

import numpy as np
import torch
import torchvision
from harness import emit, main, section  # noqa: F401
from torchvision import ops

rng = np.random.default_rng(0)


def f32(a):
    return torch.from_numpy(np.ascontiguousarray(a, dtype=np.float32))


def boxes(n, size=60.0):
    b = rng.random((n, 4)) * size
    b[:, 2:] = b[:, :2] + rng.random((n, 2)) * size / 3
    return f32(b)


B, S, IDX = boxes(80), f32(rng.random(80)), torch.from_numpy(rng.integers(0, 4, 80))
X = f32(rng.standard_normal((2, 8, 20, 24)))
ROIS = [boxes(6, 70.0), boxes(4, 70.0)]


@section
def nms(folder):
    yield "has_ops", torchvision.extension._has_ops()
    for thr in (0.0, 0.3, 0.7, 1.0):
        yield f"keep_{thr}", ops.nms(B, S, thr)
    yield "batched", ops.batched_nms(B, S, IDX, 0.4)
    yield "batched_empty", ops.batched_nms(B[:0], S[:0], IDX[:0], 0.4)
    many = boxes(1100, 300.0)  # over 4000 coordinates: torchvision's per-class loop instead of the offset trick
    yield "batched_vanilla", ops.batched_nms(many, f32(rng.random(1100)), torch.from_numpy(rng.integers(0, 5, 1100)), 0.5)
    yield "keywords", torch.ops.torchvision.nms(dets=B, scores=S, iou_threshold=0.5)
    yield "box_iou", ops.box_iou(B[:5], B[5:9])
    yield "remove_small", ops.remove_small_boxes(B, 12.0)
    yield "clip", ops.clip_boxes_to_image(B[:4], (30, 40))


@section
def roi_align(folder):
    for aligned in (False, True):
        for sr in (0, 2):
            yield f"list_{aligned}_{sr}", ops.roi_align(X, ROIS, (3, 4), 0.5, sr, aligned)
    rois = torch.cat([torch.cat([torch.full((len(b), 1), float(i)), b], 1) for i, b in enumerate(ROIS)])
    yield "module", ops.RoIAlign(2, 0.25, 2, aligned=True)(X, rois)
    yield "roi_pool", ops.roi_pool(X, ROIS, 3, 0.5)
    yield "roi_pool_module", ops.RoIPool((2, 3), 0.5)(X, rois)
    x18 = f32(rng.standard_normal((2, 18, 12, 12)))
    yield "ps_roi_align", ops.ps_roi_align(x18, ROIS, 3, 0.25, 2)
    yield "ps_roi_pool", ops.ps_roi_pool(x18, ROIS, 3, 0.25)


@section
def multiscale_roi_align(folder):
    feats = OrderedDict(p2=f32(rng.standard_normal((2, 4, 32, 32))), p3=f32(rng.standard_normal((2, 4, 16, 16))),
                        p4=f32(rng.standard_normal((2, 4, 8, 8))))
    pooler = ops.MultiScaleRoIAlign(["p2", "p3", "p4"], 5, sampling_ratio=2)
    small, large = boxes(5, 40.0), boxes(3, 100.0)
    yield "pooled", pooler(feats, [small, large], [(128, 128), (128, 128)])


@section
def deform_conv2d(folder):
    x = f32(rng.standard_normal((2, 4, 9, 9)))
    layer = ops.DeformConv2d(4, 6, 3, stride=2, padding=1, groups=2).eval()
    layer.load_state_dict(torch.load(os.path.join(folder, "deform.pt")))
    offset = f32(rng.standard_normal((2, 18, 5, 5)) * 2)
    mask = torch.sigmoid(f32(rng.standard_normal((2, 9, 5, 5))))
    yield "module", layer(x, offset)
    yield "module_mask", layer(x, offset, mask)
    w = f32(rng.standard_normal((3, 4, 3, 3)))
    off2 = f32(rng.standard_normal((2, 2 * 2 * 9, 7, 7)))
    yield "functional_offset_groups", ops.deform_conv2d(x, off2, w, bias=f32(rng.standard_normal(3)), dilation=(1, 1))
    yield "zero_offset_is_conv", ops.deform_conv2d(x, torch.zeros(2, 18, 7, 7), w) - torch.nn.functional.conv2d(x, w)


@section
def errors(folder):
    def kind(fn):
        try:
            fn()
            return "ok"
        except Exception as e:  # noqa: BLE001 - the exception type is the result
            # the builtin type it is (candle_bind's errors subclass torch's RuntimeError etc.)
            return next(t.__name__ for t in type(e).__mro__ if t.__module__ == "builtins")

    yield "nms_1d", kind(lambda: ops.nms(B[0], S, 0.5))
    yield "nms_mismatch", kind(lambda: ops.nms(B, S[:3], 0.5))
    yield "nms_int", kind(lambda: ops.nms(B.long(), S.long(), 0.5))
    yield "roi_align_bad_rois", kind(lambda: ops.roi_align(X, torch.zeros(3, 4), 2))
    yield "roi_align_mixed_dtype", kind(lambda: ops.roi_align(X, [b.double() for b in ROIS], 2))
    yield "ps_roi_channels", kind(lambda: ops.ps_roi_align(X, ROIS, 3))
    yield "deform_bad_offset", kind(lambda: ops.deform_conv2d(X, torch.zeros(2, 17, 18, 22), torch.zeros(2, 8, 3, 3)))


if __name__ == "__main__":
    torch.set_num_threads(1)
    main(sys.argv[1])
