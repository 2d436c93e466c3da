"""torchvision's detectors, unmodified (their nms / roi_align run on candle_bind's kernels): each is built
with weights=None and weights_backbone=None at a small min_size/max_size, loads the state_dict real torch
saved (tests/test_torchvision.py) and runs on two images of different sizes; each section prints the
detections (boxes, scores, labels; masks and keypoints where the model has them)."""

import os
import sys

import numpy as np
import torch
from harness import main, section

_SMALL = "weights=None, weights_backbone=None, min_size=64, max_size=96"
DETECTORS = {
    "fasterrcnn_mobilenet_v3_large_fpn": f"detection.fasterrcnn_mobilenet_v3_large_fpn({_SMALL}, num_classes=3)",
    "retinanet_resnet50_fpn": f"detection.retinanet_resnet50_fpn({_SMALL}, num_classes=3)",
    "fcos_resnet50_fpn": f"detection.fcos_resnet50_fpn({_SMALL}, num_classes=3, score_thresh=0.05)",
    # random SSDLite weights give many exactly equal scores below the top two, and the order of tied boxes out
    # of torch's topk / nms is implementation-defined: the two best detections are compared.
    "ssdlite320_mobilenet_v3_large": "detection.ssdlite320_mobilenet_v3_large(weights=None, weights_backbone=None, "
                                     "num_classes=3, detections_per_img=2)",
    "maskrcnn_resnet50_fpn": f"detection.maskrcnn_resnet50_fpn({_SMALL}, num_classes=3)",
    "keypointrcnn_resnet50_fpn": f"detection.keypointrcnn_resnet50_fpn({_SMALL}, num_classes=2, num_keypoints=5)",
}


def build(name):
    from torchvision.models import detection  # noqa: F401 - the builder expressions name it

    return eval(DETECTORS[name]).eval()


def images():
    rng = np.random.default_rng(0)
    return [torch.from_numpy(rng.random((3, 64, 80)).astype(np.float32)),
            torch.from_numpy(rng.random((3, 72, 56)).astype(np.float32))]


def _detector_section(name):
    def run(folder):
        model = build(name)
        model.load_state_dict(torch.load(os.path.join(folder, f"{name}.pt")))
        for i, det in enumerate(model(images())):
            for key in sorted(det):
                value = det[key]
                yield f"{i}.{key}_shape", list(value.shape)
                yield f"{i}.{key}", value[:, :, ::8, ::8] if key == "masks" else value

    run.__name__ = name
    return run


for _name in DETECTORS:
    section(_detector_section(_name))

if __name__ == "__main__":
    torch.set_num_threads(1)
    main(sys.argv[1])
