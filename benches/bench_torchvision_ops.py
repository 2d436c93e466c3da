"""torchvision's compiled operators: torchvision's own CPU kernels (on torch) vs candle_bind's
(src/vision/, what `torch.ops.torchvision.*` runs under the shim), at 1 and 2 threads in one run.

    python benches/bench_torchvision_ops.py
"""

import numpy as np
import torch
import torchvision  # noqa: F401  (loads torch.ops.torchvision)

import candle_bind as cb
from candle_bind import _vision_ops as ours
from harness import best, cpu_line, header

tv = torch.ops.torchvision
rng = np.random.default_rng(0)


def boxes(n, size=500.0):
    b = rng.random((n, 4), dtype=np.float32) * size
    b[:, 2:] = b[:, :2] + rng.random((n, 2), dtype=np.float32) * size / 5
    return b


def rois(k, n_img, size):
    r = np.concatenate([rng.integers(0, n_img, (k, 1)).astype(np.float32), boxes(k, size)], 1)
    return r


def both(*arrays):
    return [torch.from_numpy(a) for a in arrays], [cb.from_numpy(a) for a in arrays]


b1k, s1k = boxes(1000), rng.random(1000, dtype=np.float32)
b5k, s5k = boxes(5000), rng.random(5000, dtype=np.float32)
x = rng.standard_normal((1, 256, 50, 50), dtype=np.float32)
r512 = rois(512, 1, 180.0)
xd = rng.standard_normal((1, 64, 32, 32), dtype=np.float32)
wd = rng.standard_normal((64, 64, 3, 3), dtype=np.float32) * 0.05
od = rng.standard_normal((1, 18, 32, 32), dtype=np.float32)
md = rng.random((1, 9, 32, 32), dtype=np.float32)
bd = np.zeros(64, np.float32)

cases = []
for name, arrs, t_op, c_op, number in [
    ("nms 1000 boxes, iou 0.5", (b1k, s1k), lambda b, s: tv.nms(b, s, 0.5), lambda b, s: ours.nms(b, s, 0.5), 20),
    ("nms 5000 boxes, iou 0.5", (b5k, s5k), lambda b, s: tv.nms(b, s, 0.5), lambda b, s: ours.nms(b, s, 0.5), 3),
    ("roi_align 1x256x50x50, 512 rois, 7x7, sr 2", (x, r512),
     lambda a, r: tv.roi_align(a, r, 0.25, 7, 7, 2, True), lambda a, r: ours.roi_align(a, r, 0.25, 7, 7, 2, True), 3),
    ("roi_align same, sampling_ratio 0 (adaptive)", (x, r512),
     lambda a, r: tv.roi_align(a, r, 0.25, 7, 7, 0, False), lambda a, r: ours.roi_align(a, r, 0.25, 7, 7, 0, False), 3),
    ("roi_pool 1x256x50x50, 512 rois, 7x7", (x, r512),
     lambda a, r: tv.roi_pool(a, r, 0.25, 7, 7), lambda a, r: ours.roi_pool(a, r, 0.25, 7, 7), 3),
    ("deform_conv2d 1x64x32x32, 64->64 k3 p1, mask", (xd, wd, od, md, bd),
     lambda *a: tv.deform_conv2d(*a, 1, 1, 1, 1, 1, 1, 1, 1, True),
     lambda *a: ours.deform_conv2d(*a, 1, 1, 1, 1, 1, 1, 1, 1, True), 5),
]:
    t_args, c_args = both(*arrs)
    cases.append((name, lambda f=t_op, a=t_args: f(*a), lambda f=c_op, a=c_args: f(*a), number))

print(cpu_line())
for threads in (1, 2):
    torch.set_num_threads(threads)
    cb.set_num_threads(threads)
    print(f"\nthreads: torch {torch.get_num_threads()}, candle_bind {cb.get_num_threads()}")
    header("op", width=48)
    for name, t_fn, c_fn, number in cases:
        t, c = best(t_fn, number), best(c_fn, number)
        print(f"{name:<48} {t * 1e6:>10.0f} {c * 1e6:>10.0f} {c / t:>7.2f}")
