"""nn layers: torch vs candle_bind in one run (same weights, eval mode), as time ratios.

    python benches/bench_nn.py [--threads N]
"""

import os
import sys

from harness import header, row, setup

torch, cb = setup(__doc__)
from candle_bind import nn  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
from resnet import resnet18  # noqa: E402


def layer(name, make, shape, number, **kw):
    torch.manual_seed(0)
    t = make(torch.nn).eval()
    c = make(nn).eval()
    c.load_state_dict(t.state_dict())
    x = torch.randn(*shape)
    cx = cb.from_numpy(x.numpy())

    @torch.no_grad()
    def run_torch():
        return t(x)

    row(name, run_torch, lambda: c(cx), number)


header("layer")
layer("Linear 768->768, x (1, 768)", lambda m: m.Linear(768, 768), (1, 768), 500)
layer("Linear 768->3072, x (8, 128, 768)", lambda m: m.Linear(768, 3072), (8, 128, 768), 5)
layer("Conv2d 3->64 k7 s2 p3, x (1,3,224,224)", lambda m: m.Conv2d(3, 64, 7, 2, 3, bias=False), (1, 3, 224, 224), 10)
layer("Conv2d 64->64 k3 p1, x (1,64,56,56)", lambda m: m.Conv2d(64, 64, 3, 1, 1, bias=False), (1, 64, 56, 56), 10)
layer("Conv2d 64->64 k3 p1, x (8,64,32,32)", lambda m: m.Conv2d(64, 64, 3, 1, 1), (8, 64, 32, 32), 5)
layer("Conv2d dw 64 k3 p1, x (1,64,56,56)", lambda m: m.Conv2d(64, 64, 3, 1, 1, groups=64), (1, 64, 56, 56), 10)
layer("Conv1d 32->64 k7 s2, x (4,32,4000)", lambda m: m.Conv1d(32, 64, 7, 2), (4, 32, 4000), 5)
layer("Conv1d depthwise 256 k31 p15, x (1,256,2000)", lambda m: m.Conv1d(256, 256, 31, padding=15, groups=256), (1, 256, 2000), 10)
layer("ConvTranspose2d 64->32 k2 s2, x (1,64,32,32)", lambda m: m.ConvTranspose2d(64, 32, 2, 2), (1, 64, 32, 32), 10)
layer("MaxPool2d k3 s2 p1, x (1,64,112,112)", lambda m: m.MaxPool2d(3, 2, 1), (1, 64, 112, 112), 10)
layer("AdaptiveAvgPool2d 1, x (8,512,7,7)", lambda m: m.AdaptiveAvgPool2d(1), (8, 512, 7, 7), 50)
layer("GELU, x (8,128,3072)", lambda m: m.GELU(), (8, 128, 3072), 10)
layer("SiLU, x (8,128,3072)", lambda m: m.SiLU(), (8, 128, 3072), 10)
layer("ReLU, x (1,64,112,112)", lambda m: m.ReLU(), (1, 64, 112, 112), 50)


layer("ResNet-18 forward (eval), x (1,3,224,224)", lambda m: resnet18(torch if m is torch.nn else cb), (1, 3, 224, 224), 3)

# nn part 2: normalisation, attention, recurrence, resampling, a transformer stack.
layer("LayerNorm 384, x (4,128,384)", lambda m: m.LayerNorm(384), (4, 128, 384), 50)
layer("LayerNorm 768, x (8,512,768)", lambda m: m.LayerNorm(768), (8, 512, 768), 10)
layer("RMSNorm 768, x (8,512,768)", lambda m: m.RMSNorm(768, eps=1e-6), (8, 512, 768), 10)
layer("BatchNorm2d 64 eval, x (8,64,56,56)", lambda m: m.BatchNorm2d(64), (8, 64, 56, 56), 10)
layer("Upsample bilinear x2, x (1,64,64,64)", lambda m: m.Upsample(scale_factor=2, mode="bilinear"), (1, 64, 64, 64), 10)


def sdpa(name, shape, causal, number):
    q = torch.randn(*shape)
    cq = cb.from_numpy(q.numpy())
    row(name, lambda: torch.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=causal),
        lambda: nn.functional.scaled_dot_product_attention(cq, cq, cq, is_causal=causal), number)


sdpa("SDPA causal (1,12,128,64)", (1, 12, 128, 64), True, 20)
sdpa("SDPA (8,12,128,64)", (8, 12, 128, 64), False, 5)
layer("LSTM 2 layers h256, x (35,4,256)", lambda m: m.LSTM(256, 256, 2), (35, 4, 256), 5)
layer("GRU 2 layers h256, x (35,4,256)", lambda m: m.GRU(256, 256, 2), (35, 4, 256), 5)
layer("TransformerEncoder 6x d512, x (128,1,512)",
      lambda m: m.TransformerEncoder(m.TransformerEncoderLayer(512, 8, 2048, dropout=0.0), 6, enable_nested_tensor=False)
      if m is torch.nn else m.TransformerEncoder(m.TransformerEncoderLayer(512, 8, 2048, dropout=0.0), 6), (128, 1, 512), 3)
