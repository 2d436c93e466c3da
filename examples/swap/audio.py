"""A 1-D audio autoencoder written as ordinary PyTorch code, in the shape of descript-audio-codec /
BigVGAN: weight-normed Conv1d (`torch.nn.utils.weight_norm`), Snake activations with per-channel
alpha, dilated residual units, strided Conv1d downsampling, ConvTranspose1d upsampling, GroupNorm
and PReLU in the bottleneck; encodes and decodes a waveform.

    python audio.py save ckpt.pt  |  python audio.py ckpt.pt  |  python -m candle_bind run audio.py ckpt.pt
"""

import math
import sys

import torch
import torch.nn as nn
from torch.nn.utils import weight_norm


def WNConv1d(*args, **kwargs):
    return weight_norm(nn.Conv1d(*args, **kwargs))


def WNConvTranspose1d(*args, **kwargs):
    return weight_norm(nn.ConvTranspose1d(*args, **kwargs))


@torch.jit.script
def snake(x, alpha):
    shape = x.shape
    x = x.reshape(shape[0], shape[1], -1)
    x = x + (alpha + 1e-9).reciprocal() * torch.sin(alpha * x).pow(2)
    x = x.reshape(shape)
    return x


class Snake1d(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.alpha = nn.Parameter(torch.ones(1, channels, 1))

    def forward(self, x):
        return snake(x, self.alpha)


class ResidualUnit(nn.Module):
    def __init__(self, dim: int = 16, dilation: int = 1):
        super().__init__()
        pad = ((7 - 1) * dilation) // 2
        self.block = nn.Sequential(
            Snake1d(dim),
            WNConv1d(dim, dim, kernel_size=7, dilation=dilation, padding=pad),
            Snake1d(dim),
            WNConv1d(dim, dim, kernel_size=1),
        )

    def forward(self, x):
        y = self.block(x)
        pad = (x.shape[-1] - y.shape[-1]) // 2
        if pad > 0:
            x = x[..., pad:-pad]
        return x + y


class EncoderBlock(nn.Module):
    def __init__(self, dim: int = 16, stride: int = 1):
        super().__init__()
        self.block = nn.Sequential(
            ResidualUnit(dim // 2, dilation=1),
            ResidualUnit(dim // 2, dilation=3),
            ResidualUnit(dim // 2, dilation=9),
            Snake1d(dim // 2),
            WNConv1d(dim // 2, dim, kernel_size=2 * stride, stride=stride, padding=math.ceil(stride / 2)),
        )

    def forward(self, x):
        return self.block(x)


class DecoderBlock(nn.Module):
    def __init__(self, input_dim: int = 16, output_dim: int = 8, stride: int = 1):
        super().__init__()
        self.block = nn.Sequential(
            Snake1d(input_dim),
            WNConvTranspose1d(input_dim, output_dim, kernel_size=2 * stride, stride=stride,
                              padding=math.ceil(stride / 2), output_padding=stride % 2),
            ResidualUnit(output_dim, dilation=1),
            ResidualUnit(output_dim, dilation=3),
            ResidualUnit(output_dim, dilation=9),
        )

    def forward(self, x):
        return self.block(x)


class Bottleneck(nn.Module):
    """GroupNorm + PReLU between encoder and decoder."""

    def __init__(self, dim: int, groups: int = 8):
        super().__init__()
        self.norm = nn.GroupNorm(groups, dim)
        self.act = nn.PReLU(dim)
        self.conv = nn.Conv1d(dim, dim, kernel_size=3, padding=1)

    def forward(self, x):
        return x + self.conv(self.act(self.norm(x)))


class AudioAutoencoder(nn.Module):
    def __init__(self, d_model: int = 16, strides=(2, 4, 5), latent_dim: int = 64):
        super().__init__()
        layers = [WNConv1d(1, d_model, kernel_size=7, padding=3)]
        for stride in strides:
            d_model *= 2
            layers += [EncoderBlock(d_model, stride=stride)]
        layers += [Snake1d(d_model), WNConv1d(d_model, latent_dim, kernel_size=3, padding=1)]
        self.encoder = nn.Sequential(*layers)
        self.bottleneck = Bottleneck(latent_dim)

        channels = d_model
        layers = [WNConv1d(latent_dim, channels, kernel_size=7, padding=3)]
        for i, stride in enumerate(reversed(strides)):
            input_dim = channels // 2 ** i
            output_dim = channels // 2 ** (i + 1)
            layers += [DecoderBlock(input_dim, output_dim, stride)]
        layers += [Snake1d(output_dim), WNConv1d(output_dim, 1, kernel_size=7, padding=3), nn.Tanh()]
        self.decoder = nn.Sequential(*layers)
        self.apply(init_weights)

    def forward(self, audio):
        z = self.encoder(audio)
        z = self.bottleneck(z)
        return self.decoder(z), z


def init_weights(m):
    if isinstance(m, nn.Conv1d):
        nn.init.trunc_normal_(m.weight, std=0.02)
        nn.init.constant_(m.bias, 0)


def save_checkpoint(path):
    torch.manual_seed(0)
    model = AudioAutoencoder()
    with torch.no_grad():  # stand-ins for trained values
        for name, p in model.named_parameters():
            if name.endswith("alpha"):
                p.uniform_(0.5, 2.0)
            elif name.endswith("weight_g"):
                p.uniform_(0.2, 0.6)
    torch.save(model.state_dict(), path)


def load(path):
    model = AudioAutoencoder()
    model.load_state_dict(torch.load(path, map_location="cpu"))
    return model.eval()


def waveform(batch=2, samples=8000, sample_rate=16000):
    t = torch.arange(samples) / sample_rate
    f = torch.tensor([220.0, 330.0]).view(batch, 1, 1)
    return 0.5 * torch.sin(2 * math.pi * f * t) * torch.exp(-3 * t)


@torch.no_grad()
def infer(model):
    audio = waveform()
    recon, z = model(audio)
    return {
        "shape": (tuple(recon.shape), tuple(z.shape)),
        "logits": recon[:, 0, 4000:4008].flatten().tolist() + z[:, :4, 100].flatten().tolist(),
    }


if __name__ == "__main__":
    if sys.argv[1] == "save":
        save_checkpoint(sys.argv[2])
    else:
        for k, v in infer(load(sys.argv[1])).items():
            print(k, v)
