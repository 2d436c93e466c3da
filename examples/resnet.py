"""torchvision's ResNet-18, key for key (its checkpoints load unchanged), written as PyTorch model
code that takes the torch-like module it runs on: `resnet18(torch)` or `resnet18(candle_bind)`."""


def resnet18(lib):
    nn_ = lib.nn

    class BasicBlock(nn_.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = nn_.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn_.BatchNorm2d(cout)
            self.relu = nn_.ReLU(inplace=True)
            self.conv2 = nn_.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn_.BatchNorm2d(cout)
            self.downsample = None
            if stride != 1 or cin != cout:
                self.downsample = nn_.Sequential(nn_.Conv2d(cin, cout, 1, stride, bias=False), nn_.BatchNorm2d(cout))

        def forward(self, x):
            identity = x if self.downsample is None else self.downsample(x)
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            out += identity
            return self.relu(out)

    class ResNet(nn_.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn_.Conv2d(3, 64, 7, 2, 3, bias=False)
            self.bn1 = nn_.BatchNorm2d(64)
            self.relu = nn_.ReLU(inplace=True)
            self.maxpool = nn_.MaxPool2d(3, 2, 1)
            for i, (a, b, s) in enumerate([(64, 64, 1), (64, 128, 2), (128, 256, 2), (256, 512, 2)], 1):
                setattr(self, f"layer{i}", nn_.Sequential(BasicBlock(a, b, s), BasicBlock(b, b, 1)))
            self.avgpool = nn_.AdaptiveAvgPool2d((1, 1))
            self.fc = nn_.Linear(512, 1000)

        def forward(self, x):
            x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
            x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
            return self.fc(lib.flatten(self.avgpool(x), 1))

    return ResNet()
