"""Multi-core scaling per kernel family: torch and candle_bind at 1, 2 and all cores, in one run.

    python benches/bench_scaling.py [--threads 1 2 16] [--only SUBSTRING] [--reps 7]

Each row prints both sides' time at every thread count, the ratio candle_bind / torch at each, and
each side's scaling factor (time at 1 thread / time at N threads). The rows are sized to take about a
millisecond or more at one thread, where a second core should pay (`--only` picks rows by name).
"""

import argparse
import os
import timeit

import numpy as np

from harness import cpu_line, settle

p = argparse.ArgumentParser(description=__doc__)
p.add_argument("--threads", type=int, nargs="+", default=None, help="default: 1, 2 and all cores")
p.add_argument("--only", default=None)
p.add_argument("--reps", type=int, default=7)
args = p.parse_args()
threads = args.threads or sorted({1, 2, os.cpu_count() or 1})

import torch  # noqa: E402

import candle_bind as cb  # noqa: E402

F, CF = torch.nn.functional, cb.nn.functional
rng = np.random.default_rng(0)


def arr(*shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


def both(a):
    return torch.from_numpy(a.copy()), cb.from_numpy(a.copy())


def best(fn):
    settle(fn)  # the other side's spinning workers go quiet first
    once = timeit.timeit(fn, number=1)
    number = max(1, int(0.02 / max(once, 1e-7)))
    return min(timeit.repeat(fn, number=number, repeat=args.reps)) / number


ROWS = []


def row(name, t_fn, c_fn):
    ROWS.append((name, t_fn, c_fn))


# Convolution: Winograd 3x3, im2col (stem), depthwise, 1-D speech, transposed.
x, cx = both(arr(1, 64, 56, 56))
w, cw = both(arr(64, 64, 3, 3) * 0.05)
row("conv2d 3x3 (1,64,56,56) Winograd", lambda: F.conv2d(x, w, padding=1), lambda: CF.conv2d(cx, cw, padding=1))
xs, cxs = both(arr(1, 3, 224, 224))
ws, cws = both(arr(64, 3, 7, 7) * 0.05)
row("conv2d 7x7 s2 stem (1,3,224,224)", lambda: F.conv2d(xs, ws, stride=2, padding=3),
    lambda: CF.conv2d(cxs, cws, stride=2, padding=3))
x5, cx5 = both(arr(1, 256, 28, 28))
w5, cw5 = both(arr(256, 256, 3, 3) * 0.02)
row("conv2d 3x3 s2 (1,256,28,28) im2col", lambda: F.conv2d(x5, w5, stride=2, padding=1),
    lambda: CF.conv2d(cx5, cw5, stride=2, padding=1))
x6, cx6 = both(arr(1, 128, 56, 56))
w6, cw6 = both(arr(128, 128, 3, 3) * 0.03)
row("conv2d 3x3 s2 (1,128,56,56) along the row", lambda: F.conv2d(x6, w6, stride=2, padding=1),
    lambda: CF.conv2d(cx6, cw6, stride=2, padding=1))
xd, cxd = both(arr(1, 384, 56, 56))
wd, cwd = both(arr(384, 1, 7, 7) * 0.1)
row("conv2d depthwise 7x7 (1,384,56,56)", lambda: F.conv2d(xd, wd, padding=3, groups=384),
    lambda: CF.conv2d(cxd, cwd, padding=3, groups=384))
x1, cx1 = both(arr(1, 80, 3000))
w1, cw1 = both(arr(384, 80, 3) * 0.05)
row("conv1d k3 (1,80,3000) whisper", lambda: F.conv1d(x1, w1, padding=1), lambda: CF.conv1d(cx1, cw1, padding=1))
xt, cxt = both(arr(1, 128, 64, 64))
wt, cwt = both(arr(128, 64, 4, 4) * 0.05)
row("conv_transpose2d k4 s2 (1,128,64,64)", lambda: F.conv_transpose2d(xt, wt, stride=2, padding=1),
    lambda: CF.conv_transpose2d(cxt, cwt, stride=2, padding=1))
xt1, cxt1 = both(arr(1, 64, 56, 56))
wt1, cwt1 = both(arr(64, 64, 3, 3) * 0.05)
row("conv_transpose2d k3 s1 (1,64,56,56)", lambda: F.conv_transpose2d(xt1, wt1, padding=1),
    lambda: CF.conv_transpose2d(cxt1, cwt1, padding=1))
xt2, cxt2 = both(arr(1, 256, 32, 32))
wt2, cwt2 = both(arr(256, 128, 2, 2) * 0.05)
row("conv_transpose2d k2 s2 (1,256,32,32)", lambda: F.conv_transpose2d(xt2, wt2, stride=2),
    lambda: CF.conv_transpose2d(cxt2, cwt2, stride=2))
xt3, cxt3 = both(arr(1, 128, 32, 32))
wt3, cwt3 = both(arr(128, 64, 3, 3) * 0.05)
row("conv_transpose2d k3 s2 p1 op1 (1,128,32,32)", lambda: F.conv_transpose2d(xt3, wt3, stride=2, padding=1, output_padding=1),
    lambda: CF.conv_transpose2d(cxt3, cwt3, stride=2, padding=1, output_padding=1))

# Pooling and resampling.
xp, cxp = both(arr(1, 64, 112, 112))
row("max_pool2d 3x3 s2 (1,64,112,112)", lambda: F.max_pool2d(xp, 3, 2, 1), lambda: CF.max_pool2d(cxp, 3, 2, 1))
row("avg_pool2d 2x2 (1,64,112,112)", lambda: F.avg_pool2d(xp, 2), lambda: CF.avg_pool2d(cxp, 2))
xu, cxu = both(arr(1, 64, 64, 64))
row("interpolate bilinear x2 (1,64,64,64)", lambda: F.interpolate(xu, scale_factor=2, mode="bilinear"),
    lambda: CF.interpolate(cxu, scale_factor=2, mode="bilinear"))
row("interpolate nearest x2 (1,64,64,64)", lambda: F.interpolate(xu, scale_factor=2),
    lambda: CF.interpolate(cxu, scale_factor=2))

# Norms and softmax.
xn, cxn = both(arr(8, 512, 768))
g, cg = both(arr(768))
row("layer_norm (8,512,768)", lambda: F.layer_norm(xn, (768,), g, g), lambda: CF.layer_norm(cxn, (768,), cg, cg))
xs4, cxs4 = both(arr(4, 128, 384))
g4, cg4 = both(arr(384))
row("layer_norm (4,128,384)", lambda: F.layer_norm(xs4, (384,), g4, g4), lambda: CF.layer_norm(cxs4, (384,), cg4, cg4))
row("rms_norm (8,512,768)", lambda: F.rms_norm(xn, (768,), g), lambda: CF.rms_norm(cxn, (768,), cg))
xb, cxb = both(arr(8, 64, 56, 56))
m, cm = both(np.abs(arr(64)) + 0.5)
row("batch_norm eval (8,64,56,56)", lambda: F.batch_norm(xb, m, m, m, m), lambda: CF.batch_norm(cxb, cm, cm, cm, cm))
xg, cxg = both(arr(1, 256, 64, 64))
row("group_norm 32 (1,256,64,64)", lambda: F.group_norm(xg, 32), lambda: CF.group_norm(cxg, 32))
xsm, cxsm = both(arr(48, 128, 128))
row("softmax(-1) (48,128,128)", lambda: xsm.softmax(-1), lambda: cxsm.softmax(-1))

# Elementwise and broadcasting.
xe, cxe = both(arr(4, 128, 1536))
be, cbe = both(arr(1536))
row("x + bias (4,128,1536)", lambda: xe + be, lambda: cxe + cbe)
row("gelu (4,128,1536)", lambda: F.gelu(xe), lambda: CF.gelu(cxe))
row("x * sigmoid(x) (4,128,1536)", lambda: xe * xe.sigmoid(), lambda: cxe * cxe.sigmoid())
row("x.mul_(0.5) in place (4,128,1536)", lambda: xe.mul_(1.0), lambda: cxe.mul_(1.0))

# Reductions.
row("sum(-1) (4,128,1536)", lambda: xe.sum(-1), lambda: cxe.sum(-1))
row("sum(0) (4,128,1536)", lambda: xe.sum(0), lambda: cxe.sum(0))
row("amax(-1) (4,128,1536)", lambda: xe.amax(-1), lambda: cxe.amax(-1))

# Copies, casts, numpy.
row("contiguous of transpose (4,128,1536)", lambda: xe.transpose(1, 2).contiguous(),
    lambda: cxe.transpose(1, 2).contiguous())
row("clone (4,128,1536)", lambda: xe.clone(), lambda: cxe.clone())
row("cast f32 -> bf16 (4,128,1536)", lambda: xe.to(torch.bfloat16), lambda: cxe.to(cb.bfloat16))
row("cast f32 -> f16 (4,128,1536)", lambda: xe.half(), lambda: cxe.half())
xbf, cxbf = xe.to(torch.bfloat16), cxe.to(cb.bfloat16)
row("cast bf16 -> f32 (4,128,1536)", lambda: xbf.float(), lambda: cxbf.float())
npx = arr(1024, 1024)
row("numpy import (1024,1024) f32", lambda: torch.from_numpy(npx).clone(), lambda: cb.from_numpy(npx))
row("torch.tensor(ndarray) (1024,1024)", lambda: torch.tensor(npx), lambda: cb.tensor(npx))
row("full((64,75,101), 0.5)", lambda: torch.full((64, 75, 101), 0.5), lambda: cb.full((64, 75, 101), 0.5))
row("cat 4 x (4,128,384) dim -1", lambda: torch.cat([xs4] * 4, -1), lambda: cb.cat([cxs4] * 4, -1))

# Gather, scatter, index.
idx = rng.integers(0, 32000, 4096)
emb, cemb = both(arr(32000, 256))
ti, ci = torch.from_numpy(idx), cb.from_numpy(idx)
row("embedding 4096 rows of (32000,256)", lambda: F.embedding(ti, emb), lambda: CF.embedding(ci, cemb))
row("index_select(0) 4096 of (32000,256)", lambda: emb.index_select(0, ti), lambda: cemb.index_select(0, ci))
gi = rng.integers(0, 1536, (4, 128, 1536))
tgi, cgi = torch.from_numpy(gi), cb.from_numpy(gi)
row("gather(-1) (4,128,1536)", lambda: xe.gather(-1, tgi), lambda: cxe.gather(-1, cgi))
row("scatter_add(-1) (4,128,1536)", lambda: torch.zeros_like(xe).scatter_add_(-1, tgi, xe),
    lambda: cb.zeros_like(cxe).scatter_add_(-1, cgi, cxe))
mk, cmk = both(arr(4, 128, 1536) > 0)
row("masked_fill (4,128,1536)", lambda: xe.masked_fill(mk, 0.0), lambda: cxe.masked_fill(cmk, 0.0))
row("where (4,128,1536)", lambda: torch.where(mk, xe, 0.0), lambda: cb.where(cmk, cxe, 0.0))

# Sort and top-k over rows.
lg, clg = both(arr(64, 32000))
row("topk 50 of (64,32000)", lambda: lg.topk(50, -1), lambda: clg.topk(50, -1))
row("sort(-1) (64,4096)", lambda: lg[:, :4096].sort(-1), lambda: clg[:, :4096].sort(-1))
row("argmax(-1) (64,32000)", lambda: lg.argmax(-1), lambda: clg.argmax(-1))
row("cumsum(-1) (64,32000)", lambda: lg.cumsum(-1), lambda: clg.cumsum(-1))

# Matmul and attention.
a, ca = both(arr(128, 768))
wl, cwl = both(arr(3072, 768) * 0.02)
row("linear (128,768)x(3072,768)^T", lambda: F.linear(a, wl), lambda: CF.linear(ca, cwl))
q, cq = both(arr(1, 12, 256, 64))
row("sdpa causal (1,12,256,64)", lambda: F.scaled_dot_product_attention(q, q, q, is_causal=True),
    lambda: CF.scaled_dot_product_attention(cq, cq, cq, is_causal=True))

print(cpu_line())
head = f"{'row':<42}" + "".join(f" {'t' + str(n) + ' ms':>9} {'cb' + str(n) + ' ms':>9} {'r' + str(n):>5}" for n in threads)
head += "".join(f" {'t x' + str(n):>6} {'cb x' + str(n):>6}" for n in threads[1:])
print(head)
for name, t_fn, c_fn in ROWS:
    if args.only and args.only not in name:
        continue
    times = {}
    for n in threads:
        torch.set_num_threads(n)
        cb.set_num_threads(n)
        with torch.no_grad():
            times[n] = (best(t_fn), best(c_fn))
    line = f"{name:<42}" + "".join(f" {times[n][0] * 1e3:>9.3f} {times[n][1] * 1e3:>9.3f} {times[n][1] / times[n][0]:>5.2f}"
                                   for n in threads)
    line += "".join(f" {times[1][0] / times[n][0]:>6.2f} {times[1][1] / times[n][1]:>6.2f}" for n in threads[1:])
    print(line, flush=True)
