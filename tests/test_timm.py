"""timm, unmodified, under the shim: tests/eco/timm_models.py runs once under torch and once under
`python -m candle_bind run`; every section's printed results must agree (tests/shim_runs.py). The models
are built here with real torch (seeded, eval mode, BatchNorm running stats and constant-initialised
parameters randomised) and saved with torch.save; both runs rebuild them with `timm.create_model(...,
pretrained=False)` and load that state_dict."""

import os
import sys

import pytest
import torch

from shim_runs import Runs, compare

ECO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "eco")
sys.path.insert(0, ECO)

pytest.importorskip("timm")

import timm_models  # noqa: E402
from test_torchvision import randomise  # noqa: E402


@pytest.fixture(scope="module")
def runs():
    return Runs(ECO)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("timm_models")
    with torch.no_grad():
        for name in timm_models.ALL:
            torch.manual_seed(0)
            torch.save(randomise(timm_models.build(name)).state_dict(), folder / f"{name}.pt")
    return str(folder)


@pytest.mark.parametrize("name", list(timm_models.ALL))
def test_model(runs, model_dir, name):
    compare(*runs.section(name, "timm_models.py", model_dir))


def test_data_config_and_transform(runs, model_dir):
    compare(*runs.section("data_transforms", "timm_models.py", model_dir))
