"""open_clip, unmodified, on candle_bind: a tiny CLIP (ViT image tower, 2 layers of width 32, 32x32
images; text context 16 over the package's own BPE vocabulary) is registered as a model config, built
and saved by real torch (`{"state_dict": ...}` .pt and .safetensors); tests/eco/open_clip_model.py
loads it with create_model_and_transforms(pretrained=<file>) under torch and under the shim, and the two
runs must agree (pixels, features and probabilities within rtol 1e-3 / atol 1e-4, token ids exactly)."""

import json
import os

import pytest
import torch

from shim_runs import Runs, compare

open_clip = pytest.importorskip("open_clip")

ECO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "eco")
CONFIG = {
    "embed_dim": 16,
    "vision_cfg": {"image_size": 32, "layers": 2, "width": 32, "head_width": 16, "patch_size": 8},
    "text_cfg": {"context_length": 16, "vocab_size": 49408, "width": 32, "heads": 2, "layers": 2},
}


@pytest.fixture(scope="module")
def runs():
    return Runs(ECO)


@pytest.fixture(scope="module")
def model_files(tmp_path_factory):
    from safetensors.torch import save_file

    root = tmp_path_factory.mktemp("open_clip")
    (root / "TinyCLIP.json").write_text(json.dumps(CONFIG))
    open_clip.add_model_config(root)
    torch.manual_seed(0)
    model = open_clip.create_model("TinyCLIP").eval()
    with torch.no_grad():  # open_clip zero-initialises no weight that matters, but spread the embeddings out
        model.token_embedding.weight.mul_(10)
    torch.save({"state_dict": model.state_dict()}, root / "tiny.pt")
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, root / "tiny.safetensors")
    return [str(root), str(root / "tiny")]


@pytest.mark.parametrize("name", ["pt", "safetensors"])
def test_open_clip(runs, model_files, name):
    want, got = runs.section(name, "open_clip_model.py", *model_files)
    compare(want, got)
    assert got["pixels_shape"] == [2, 3, 32, 32]
