"""A U-Net written as ordinary PyTorch code, in the shape of the popular Pytorch-UNet: double convs
with BatchNorm, max-pool downsampling, upsampling by ConvTranspose2d or bilinear
Upsample(align_corners=True), F.pad to odd skip sizes, cat; segments an odd-sized image.

    python unet.py save ckpt.pt  |  python unet.py ckpt.pt  |  python -m candle_bind run unet.py ckpt.pt
"""

import sys

import torch
import torch.nn as nn
import torch.nn.functional as F


class DoubleConv(nn.Module):
    """(convolution => [BN] => ReLU) * 2"""

    def __init__(self, in_channels, out_channels, mid_channels=None):
        super().__init__()
        if not mid_channels:
            mid_channels = out_channels
        self.double_conv = nn.Sequential(
            nn.Conv2d(in_channels, mid_channels, kernel_size=3, padding=1, bias=False),
            nn.BatchNorm2d(mid_channels),
            nn.ReLU(inplace=True),
            nn.Conv2d(mid_channels, out_channels, kernel_size=3, padding=1, bias=False),
            nn.BatchNorm2d(out_channels),
            nn.ReLU(inplace=True),
        )

    def forward(self, x):
        return self.double_conv(x)


class Down(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.maxpool_conv = nn.Sequential(nn.MaxPool2d(2), DoubleConv(in_channels, out_channels))

    def forward(self, x):
        return self.maxpool_conv(x)


class Up(nn.Module):
    def __init__(self, in_channels, out_channels, bilinear=True):
        super().__init__()
        if bilinear:
            self.up = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True)
            self.conv = DoubleConv(in_channels, out_channels, in_channels // 2)
        else:
            self.up = nn.ConvTranspose2d(in_channels, in_channels // 2, kernel_size=2, stride=2)
            self.conv = DoubleConv(in_channels, out_channels)

    def forward(self, x1, x2):
        x1 = self.up(x1)
        # input is CHW
        diffY = x2.size()[2] - x1.size()[2]
        diffX = x2.size()[3] - x1.size()[3]
        x1 = F.pad(x1, [diffX // 2, diffX - diffX // 2, diffY // 2, diffY - diffY // 2])
        x = torch.cat([x2, x1], dim=1)
        return self.conv(x)


class OutConv(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size=1)

    def forward(self, x):
        return self.conv(x)


class UNet(nn.Module):
    def __init__(self, n_channels, n_classes, bilinear=False, base=16):
        super().__init__()
        self.n_channels = n_channels
        self.n_classes = n_classes
        self.bilinear = bilinear
        factor = 2 if bilinear else 1
        self.inc = DoubleConv(n_channels, base)
        self.down1 = Down(base, base * 2)
        self.down2 = Down(base * 2, base * 4)
        self.down3 = Down(base * 4, base * 8)
        self.down4 = Down(base * 8, base * 16 // factor)
        self.up1 = Up(base * 16, base * 8 // factor, bilinear)
        self.up2 = Up(base * 8, base * 4 // factor, bilinear)
        self.up3 = Up(base * 4, base * 2 // factor, bilinear)
        self.up4 = Up(base * 2, base, bilinear)
        self.outc = OutConv(base, n_classes)

    def forward(self, x):
        x1 = self.inc(x)
        x2 = self.down1(x1)
        x3 = self.down2(x2)
        x4 = self.down3(x3)
        x5 = self.down4(x4)
        x = self.up1(x5, x4)
        x = self.up2(x, x3)
        x = self.up3(x, x2)
        x = self.up4(x, x1)
        return self.outc(x)


class Segmenter(nn.Module):
    """Both upsampling flavours, as two U-Nets whose masks are averaged."""

    def __init__(self):
        super().__init__()
        self.transposed = UNet(3, 4, bilinear=False)
        self.bilinear = UNet(3, 4, bilinear=True)

    def forward(self, x):
        return (self.transposed(x) + self.bilinear(x)) / 2


def save_checkpoint(path):
    torch.manual_seed(0)
    model = Segmenter()
    with torch.no_grad():
        for _ in range(2):  # give BatchNorm running statistics
            model(torch.rand(2, 3, 64, 64))
    torch.save(model.state_dict(), path)


def load(path):
    model = Segmenter()
    model.load_state_dict(torch.load(path, map_location="cpu"))
    return model.eval()


def image(h=75, w=101):
    y = torch.linspace(-1, 1, h)[:, None]
    x = torch.linspace(-1, 1, w)[None, :]
    r = torch.stack([torch.sin(4 * x + y), torch.cos(3 * y - x), (x * y).tanh()])
    return r.unsqueeze(0)


@torch.no_grad()
def infer(model):
    logits = model(image())
    probs = logits.softmax(dim=1)
    return {
        "shape": tuple(logits.shape),
        "logits": logits[0, :, 37, :8].flatten().tolist() + probs.mean(dim=(2, 3)).flatten().tolist(),
    }


if __name__ == "__main__":
    if sys.argv[1] == "save":
        save_checkpoint(sys.argv[2])
    else:
        for k, v in infer(load(sys.argv[1])).items():
            print(k, v)
