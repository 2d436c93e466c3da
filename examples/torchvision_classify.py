"""An image classifier written with torchvision's models and transforms: plain torchvision code, run on
candle_bind unmodified.

    python -m candle_bind run examples/torchvision_classify.py [checkpoint.pt] [image.png]
    python examples/torchvision_classify.py [checkpoint.pt] [image.png]        # the same on torch

The checkpoint is a ResNet-18 state_dict (torchvision's own `resnet18-f37072fd.pth` loads as it is).
No model hub is reached: when the file does not exist yet, ResNet-18 is built with seeded random
weights and saved there first, so a second run (under either library) reads the same weights and
prints the same classes. Without an image a synthetic one is drawn with Pillow.
"""

import os
import sys

import torch
import torchvision
from PIL import Image, ImageDraw
from torchvision import transforms


def synthetic_image(size=(320, 240)):
    image = Image.new("RGB", size, (30, 90, 160))
    draw = ImageDraw.Draw(image)
    draw.ellipse((60, 40, 220, 200), fill=(240, 200, 40))
    draw.rectangle((180, 120, 300, 230), fill=(200, 40, 60))
    return image


def main(checkpoint="resnet18.pt", image_path=None):
    model = torchvision.models.resnet18(weights=None)
    if not os.path.exists(checkpoint):
        torch.manual_seed(0)
        torch.save(torchvision.models.resnet18(weights=None).state_dict(), checkpoint)
        print(f"# wrote seeded random weights to {checkpoint}")
    model.load_state_dict(torch.load(checkpoint, map_location="cpu"))
    model.eval()

    preprocess = transforms.Compose([
        transforms.Resize(256),
        transforms.CenterCrop(224),
        transforms.ToTensor(),
        transforms.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225]),
    ])
    image = Image.open(image_path).convert("RGB") if image_path else synthetic_image()
    batch = preprocess(image).unsqueeze(0)
    with torch.no_grad():
        probs = model(batch).softmax(dim=-1)
    top = probs.topk(5)
    print("input", list(batch.shape), batch.dtype)
    for p, i in zip(top.values[0].tolist(), top.indices[0].tolist()):
        print(f"class {i:4d}  p={p:.4f}")


if __name__ == "__main__":
    main(*sys.argv[1:])
