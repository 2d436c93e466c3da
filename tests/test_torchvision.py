"""torchvision, unmodified, under the shim. Each script in tests/eco (torchvision_*.py) is plain torchvision
code; it runs once under torch and once under `python -m candle_bind run`, and every section's printed
results must agree (tests/shim_runs.py). Models are built here with real torch (seeded, eval mode,
BatchNorm running stats and constant-initialised parameters randomised so they matter) and saved with
torch.save; both runs rebuild the architecture with weights=None and load that state_dict."""

import os
import sys

import pytest
import torch

from shim_runs import Runs, compare

ECO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "eco")
sys.path.insert(0, ECO)

pytest.importorskip("torchvision")

import torchvision_models  # noqa: E402


@pytest.fixture(scope="module")
def runs():
    return Runs(ECO)


def randomise(model):
    """BatchNorm running stats and the parameters a builder initialises to a constant (zero heads, unit
    norms) get seeded random values, so a wrong normalisation or a skipped bias shows in the output."""
    for m in model.modules():
        if isinstance(m, torch.nn.modules.batchnorm._BatchNorm) and m.running_mean is not None:
            m.running_mean.normal_(0, 0.1)
            m.running_var.uniform_(0.5, 1.5)
    for p in model.parameters():
        if p.numel() > 1 and p.std() == 0:
            p.add_(torch.randn_like(p) * 0.1)
    return model


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("torchvision_models")
    with torch.no_grad():
        for name in torchvision_models.MODELS:
            torch.manual_seed(0)
            torch.save(randomise(torchvision_models.build(name)).state_dict(), folder / f"{name}.pt")
    return str(folder)


@pytest.mark.parametrize("name", list(torchvision_models.MODELS))
def test_model(runs, model_dir, name):
    compare(*runs.section(name, "torchvision_models.py", model_dir))


# --- transforms (v1, v2, functional; tensors, tv_tensors, Pillow images) ---------------------------------

@pytest.mark.parametrize("name", ["resize", "geometry", "normalize_and_dtypes", "color", "random_shapes",
                                  "v2_tv_tensors", "hf_image_processors"])
def test_transforms(runs, name):
    compare(*runs.section(name, "torchvision_transforms.py"))


def test_transforms_inplace_through_stepped_slice(runs):
    """torchvision's clamp_boxes clamps x[..., 0::2] in place: a stepped slice is a view."""
    compare(*runs.section("clamp_boxes", "torchvision_transforms.py"))


# --- detection (nms, roi_align: candle_bind's kernels behind torch.ops.torchvision) ----------------------

@pytest.fixture(scope="module")
def detector_dir(tmp_path_factory):
    import torchvision_detection

    folder = tmp_path_factory.mktemp("torchvision_detectors")
    with torch.no_grad():
        for name in torchvision_detection.DETECTORS:
            torch.manual_seed(0)
            torch.save(randomise(torchvision_detection.build(name)).state_dict(), folder / f"{name}.pt")
    return str(folder)


@pytest.mark.parametrize("name", ["fasterrcnn_mobilenet_v3_large_fpn", "retinanet_resnet50_fpn", "fcos_resnet50_fpn",
                                  "ssdlite320_mobilenet_v3_large", "maskrcnn_resnet50_fpn",
                                  "keypointrcnn_resnet50_fpn"])
def test_detector(runs, detector_dir, name):
    """Boxes, scores, labels (exact), masks and keypoints. The random ResNet-50 weights with random BatchNorm
    statistics drive FPN features to ~1e3, so float32 rounding moves a box corner by up to ~0.01 px: boxes
    and scores compare at atol 0.02."""
    compare(*runs.section(name, "torchvision_detection.py", detector_dir), rtol=1e-3, atol=2e-2)


# --- ops, utils, io ----------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    return str(tmp_path_factory.mktemp("torchvision_scratch"))


@pytest.mark.parametrize("name", ["box_ops", "roi", "layers", "drawing", "image_io"])
def test_ops_utils_io(runs, scratch, name):
    compare(*runs.section(name, "torchvision_ops_utils.py", scratch))


def _shim_output(tmp_path, code):
    import subprocess

    script = tmp_path / "script.py"
    script.write_text(code)
    out = subprocess.run([sys.executable, "-m", "candle_bind", "run", str(script)], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


def test_what_cannot_run_names_itself(tmp_path):
    """GPU image decoding and torch.fx tracing (torchvision's create_feature_extractor) say what they are and
    what to use instead, never an AttributeError on a torch internal."""
    out = _shim_output(tmp_path, "\n".join([
        "import torch, torchvision",
        "from torchvision.io import decode_jpeg",
        "from torchvision.models.feature_extraction import create_feature_extractor",
        "for call in (lambda: decode_jpeg(torch.zeros(4, dtype=torch.uint8), device='cuda'),",
        "             lambda: create_feature_extractor(torchvision.models.resnet18(), ['layer1'])):",
        "    try:",
        "        call()",
        "    except Exception as e:",
        "        print(type(e).__name__, e)", ""]))
    gpu, fx = out.splitlines()
    assert gpu.startswith("NotImplementedError torch.ops.image.decode_jpegs_cuda is not supported by candle_bind"), gpu
    assert fx.startswith("NotImplementedError torch.fx.Tracer.trace(ResNet): candle_bind has no torch.fx symbolic "
                         "tracer"), fx
    assert "IntermediateLayerGetter" in fx
