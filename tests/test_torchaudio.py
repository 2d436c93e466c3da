"""torchaudio, unmodified, on candle_bind. The scripts in tests/eco (torchaudio_*.py) are plain torchaudio code;
each runs once under torch and once under the shim and every section's printed results must agree (tensors
within rtol 1e-3 / atol 1e-4, token ids exactly). The models' state dicts are saved here by real torch.

torchaudio 2.11 is not installed in the main environment (its import refuses torch 2.15's CUDA version, and
transformers then breaks on real torch too): these tests skip there. Run them from the side environment that
has it:  /work/ta-env/bin/python -m pytest -q tests/test_torchaudio.py"""

import contextlib
import importlib
import importlib.util
import os
import sys

import pytest
import torch

from shim_runs import Runs, compare, run

if importlib.util.find_spec("torchaudio") is None:
    pytest.skip("torchaudio is not installed (see the module docstring)", allow_module_level=True)

ECO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "eco")


@contextlib.contextmanager
def _no_cuda_check():
    """torchaudio imported on real torch here: its import-time CUDA version check (13.0 against torch's 13.2)
    is meaningless for a CPU run, so torch reports no CUDA while it runs; restored after."""
    saved = torch.version.cuda
    torch.version.cuda = None
    try:
        yield
    finally:
        torch.version.cuda = saved


@pytest.fixture(scope="module")
def runs():
    # one intra-op thread: torch's OpenMP pool crawls on a loaded 2-core machine (a parity test, not a timing)
    return Runs(ECO, env={**os.environ, "OMP_NUM_THREADS": "1"})


@pytest.fixture(scope="module")
def state_dir(tmp_path_factory):
    """Each model of torchaudio_models.BUILDERS, built seeded by real torch, its state dict saved."""
    path = tmp_path_factory.mktemp("torchaudio")
    sys.path.insert(0, ECO)
    try:
        with _no_cuda_check():
            models = importlib.import_module("torchaudio_models")
    finally:
        sys.path.remove(ECO)
    for i, (name, build) in enumerate(models.BUILDERS.items()):
        torch.manual_seed(i)
        torch.save(build().eval().state_dict(), path / f"{name}.pt")
    return str(path)


# The phase vocoder (TimeStretch, PitchShift) sums phase advances over frames with cumsum in float32 and takes
# cos/sin of phases of ~1e3 rad: the last-bit differences of the summation order grow to ~2e-4 on outputs of
# ~0.6 (torch's own float32 result is 3e-5 from its float64 one).
TOLERANCES = {"phase_vocoder": dict(rtol=1e-3, atol=1e-3)}


@pytest.mark.parametrize("name", ["filterbanks", "amplitude", "resample", "filters", "spectrogram", "mel",
                                  "kaldi_features", "inverse", "griffin_lim", "phase_vocoder", "more_functional"])
def test_functional_and_transforms(runs, name):
    compare(*runs.section(name, "torchaudio_transforms.py"), **TOLERANCES.get(name, {}))


@pytest.mark.parametrize("name", ["wav2vec2", "conformer", "emformer", "rnnt", "convtasnet", "hdemucs", "squim",
                                  "wav2letter_deepspeech", "wavernn"])
def test_models(runs, state_dir, name):
    """wav2vec2 (base and large layouts), HuBERT, WavLM, Conformer, Emformer (full and streaming), an Emformer
    RNN-T with beam search, ConvTasNet, Hybrid Demucs, SQUIM, Wav2Letter, DeepSpeech, WaveRNN: load_state_dict
    of torch's weights."""
    compare(*runs.section(name, "torchaudio_models.py", state_dir))


def test_compiled_ops_fail_clearly():
    """torchaudio imports without its C++ library under the shim; what needs it says so (no AttributeError)."""
    out = run(os.path.join(ECO, "torchaudio_unsupported.py"), [], shim=True)
    assert out["extension.available"] is False and out["extension.align_available"] is False
    for key in ("errors.forced_align", "errors.rnnt_loss"):
        kind, message = out[key]
        assert kind == "NotImplementedError" and "cannot load under candle_bind" in message, out[key]
    assert out["errors.load_library"][0] == "OSError"
