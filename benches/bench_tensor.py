"""Tensor ops: torch vs candle_bind in one run, as time ratios (candle_bind / torch; < 1 is faster).

    python benches/bench_tensor.py [--threads N]
"""

import subprocess
import sys

from harness import header, row, setup

torch, cb = setup(__doc__)
header("op")

a16, b16 = torch.rand(16), torch.rand(16)
ca16, cb16 = cb.from_numpy(a16.numpy()), cb.from_numpy(b16.numpy())
row("a + b (16 elements)", lambda: a16 + b16, lambda: ca16 + cb16, 20000)
row(".shape", lambda: a16.shape, lambda: ca16.shape, 50000)
m4 = torch.rand(4, 4)
cm4 = cb.from_numpy(m4.numpy())
row("matmul 4x4", lambda: m4 @ m4, lambda: cm4 @ cm4, 20000)

x, w = torch.rand(512, 768), torch.rand(768, 3072)
cx, cw = cb.from_numpy(x.numpy()), cb.from_numpy(w.numpy())
row("matmul 512x768x3072 f32", lambda: x @ w, lambda: cx @ cw, 5)

s = torch.randn(48, 128, 128)
cs = cb.from_numpy(s.numpy())
row("softmax(-1) (48,128,128)", lambda: s.softmax(-1), lambda: cs.softmax(-1), 20)

g = torch.randn(4, 128, 1536)
cg = cb.from_numpy(g.numpy())
row("tanh (4,128,1536)", lambda: g.tanh(), lambda: cg.tanh(), 20)
row("exp (4,128,1536)", lambda: g.exp(), lambda: cg.exp(), 20)
row("erf (4,128,1536)", lambda: g.erf(), lambda: cg.erf(), 20)
row("sin (4,128,1536)", lambda: g.sin(), lambda: cg.sin(), 20)
pos = g.abs() + 0.01
cpos = cb.from_numpy(pos.numpy())
row("log (4,128,1536)", lambda: pos.log(), lambda: cpos.log(), 20)
u = torch.empty(4, 128, 1536).uniform_(-0.9, 0.9)
cu = cb.from_numpy(u.numpy())
row("tan, atan, asin, expm1 (4,128,1536)", lambda: (u.tan(), u.atan(), u.asin(), u.expm1()),
    lambda: (cu.tan(), cu.atan(), cu.asin(), cu.expm1()), 10)
# Channels-last views (a permuted NCHW tensor): elementwise ops run along memory and keep the strides.
p4, q4 = torch.randn(8, 64, 56, 56), torch.randn(8, 64, 56, 56)
nh, nq = p4.permute(0, 2, 3, 1), q4.permute(0, 2, 3, 1)
cnh, cnq = cb.from_numpy(p4.numpy()).permute(0, 2, 3, 1), cb.from_numpy(q4.numpy()).permute(0, 2, 3, 1)
row("exp of an NHWC permute (8,64,56,56)", lambda: nh.exp(), lambda: cnh.exp(), 10)
row("x + y, NHWC permutes (8,64,56,56)", lambda: nh + nq, lambda: cnh + cnq, 10)
row("contiguous of an NHWC permute (8,64,56,56)", lambda: nh.contiguous(), lambda: cnh.contiguous(), 10)
row("sum(-1) of an NHWC permute (8,64,56,56)", lambda: nh.sum(-1), lambda: cnh.sum(-1), 10)
row("x * sigmoid(x) (4,128,1536)", lambda: g * g.sigmoid(), lambda: cg * cg.sigmoid(), 20)
bias = torch.randn(1536)
cbias = cb.from_numpy(bias.numpy())
row("x + bias (4,128,1536)+(1536,)", lambda: g + bias, lambda: cg + cbias, 20)
row("x.sum(-1) (4,128,1536)", lambda: g.sum(-1), lambda: cg.sum(-1), 20)
row("randn(1024, 1024)", lambda: torch.randn(1024, 1024), lambda: cb.randn(1024, 1024), 20)
row("normal_ + uniform_ (4,128,1536) (weight init)", lambda: g.normal_(0, 0.02).uniform_(-0.1, 0.1),
    lambda: cg.normal_(0, 0.02).uniform_(-0.1, 0.1), 20)
row("full((64, 75, 101), 0.5)", lambda: torch.full((64, 75, 101), 0.5), lambda: cb.full((64, 75, 101), 0.5), 50)
row("x.fill_(0.5) (4,128,1536)", lambda: g.fill_(0.5), lambda: cg.fill_(0.5), 50)

e = torch.rand(256, 1024)
ce = cb.from_numpy(e.numpy())
row("numpy export (256,1024) f32", lambda: e.numpy(), lambda: ce.numpy(), 20000)
n = e.numpy()
row("numpy import (256,1024) f32", lambda: torch.from_numpy(n).clone(), lambda: cb.from_numpy(n), 2000)

imp = "import time; t=time.perf_counter(); import {m}; print(time.perf_counter()-t)"


def import_time(m):
    return min(float(subprocess.run([sys.executable, "-c", imp.format(m=m)], capture_output=True, text=True).stdout)
               for _ in range(3))


ti, ci = import_time("torch"), import_time("candle_bind")
print(f"{'import':<46} {ti * 1e6:>11.0f} {ci * 1e6:>11.0f} {ci / ti:>7.2f}")
