"""A ResNet written as ordinary PyTorch code, in the shape of torchvision's: BasicBlock and
Bottleneck with downsample, BatchNorm, MaxPool2d(3, 2, padding=1), AdaptiveAvgPool2d, residual `+=`,
kaiming init; classifies a normalised batch of images and prints the top-5 classes.

    python resnet.py save ckpt.pt  |  python resnet.py ckpt.pt  |  python -m candle_bind run resnet.py ckpt.pt
"""

import sys

import torch
import torch.nn as nn
from torch import Tensor


def conv3x3(in_planes, out_planes, stride=1, groups=1, dilation=1):
    return nn.Conv2d(in_planes, out_planes, kernel_size=3, stride=stride, padding=dilation, groups=groups,
                     bias=False, dilation=dilation)


def conv1x1(in_planes, out_planes, stride=1):
    return nn.Conv2d(in_planes, out_planes, kernel_size=1, stride=stride, bias=False)


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = conv3x3(inplanes, planes, stride)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = conv3x3(planes, planes)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x: Tensor) -> Tensor:
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        out += identity
        return self.relu(out)


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = conv1x1(inplanes, planes)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = conv3x3(planes, planes, stride)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = conv1x1(planes, planes * self.expansion)
        self.bn3 = nn.BatchNorm2d(planes * self.expansion)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample

    def forward(self, x: Tensor) -> Tensor:
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        out += identity
        return self.relu(out)


class ResNet(nn.Module):
    def __init__(self, blocks, layers, num_classes=1000, width=64):
        super().__init__()
        self.inplanes = width
        self.conv1 = nn.Conv2d(3, self.inplanes, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(self.inplanes)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(blocks[0], width, layers[0])
        self.layer2 = self._make_layer(blocks[1], width * 2, layers[1], stride=2)
        self.layer3 = self._make_layer(blocks[2], width * 4, layers[2], stride=2)
        self.layer4 = self._make_layer(blocks[3], width * 8, layers[3], stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(self.inplanes, num_classes)

        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)

    def _make_layer(self, block, planes, blocks, stride=1):
        downsample = None
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(
                conv1x1(self.inplanes, planes * block.expansion, stride),
                nn.BatchNorm2d(planes * block.expansion),
            )
        layers = [block(self.inplanes, planes, stride, downsample)]
        self.inplanes = planes * block.expansion
        for _ in range(1, blocks):
            layers.append(block(self.inplanes, planes))
        return nn.Sequential(*layers)

    def forward(self, x: Tensor) -> Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer1(x)
        x = self.layer2(x)
        x = self.layer3(x)
        x = self.layer4(x)
        x = self.avgpool(x)
        x = torch.flatten(x, 1)
        return self.fc(x)


def resnet():
    """ResNet-18's layout with a Bottleneck stage, at half width."""
    return ResNet([BasicBlock, BasicBlock, Bottleneck, BasicBlock], [2, 2, 2, 2], num_classes=1000, width=32)


def save_checkpoint(path):
    torch.manual_seed(0)
    model = resnet()
    model.train()
    with torch.no_grad():  # a few batches in train mode give BatchNorm real running statistics
        for _ in range(3):
            model(torch.randn(4, 3, 96, 96) * 2 + 0.5)
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.2, 0.2)
    torch.save(model.state_dict(), path)


def load(path):
    model = resnet()
    model.load_state_dict(torch.load(path, map_location=torch.device("cpu")))
    return model.eval()


def images(batch=2, size=160):
    """A deterministic batch of 'photos' in [0, 1], normalised like torchvision's transforms."""
    c = torch.arange(3).view(1, 3, 1, 1).float()
    y = torch.linspace(0, 1, size).view(1, 1, size, 1)
    x = torch.linspace(0, 1, size).view(1, 1, 1, size)
    b = torch.arange(batch).view(batch, 1, 1, 1).float()
    img = 0.5 + 0.5 * torch.sin(7 * x * (b + 1) + 3 * y * (c + 1) + b) * torch.cos(5 * y - 2 * x * c)
    mean = torch.tensor([0.485, 0.456, 0.406])
    std = torch.tensor([0.229, 0.224, 0.225])
    return (img - mean[:, None, None]) / std[:, None, None]


@torch.no_grad()
def infer(model):
    logits = model(images())
    probs = torch.nn.functional.softmax(logits, dim=1)
    top5 = torch.topk(probs, 5, dim=1)
    return {"logits": logits[:, :16].flatten().tolist(), "tokens": top5.indices.tolist()}


if __name__ == "__main__":
    if sys.argv[1] == "save":
        save_checkpoint(sys.argv[2])
    else:
        for k, v in infer(load(sys.argv[1])).items():
            print(k, v)
