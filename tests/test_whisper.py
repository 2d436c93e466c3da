"""openai-whisper, unmodified, on candle_bind. tests/eco/whisper_model.py is plain whisper code (it imports
torch, never candle_bind); it runs once under torch and once under the shim (`python -m candle_bind run`),
and every section's printed results must agree: tensors within rtol 1e-3 / atol 1e-4, token ids, texts
and segment boundaries exactly. The tiny checkpoint is built here with real torch (seeded random weights,
whisper's own checkpoint layout: {"dims", "model_state_dict"} saved with torch.save) and loaded by path
with whisper.load_model in both runs. Audio is a synthetic two-tone signal given as a numpy array
(ffmpeg, which whisper.load_audio runs, is not installed)."""

import dataclasses
import os

import numpy as np
import pytest
import torch

from shim_runs import Runs, compare

pytest.importorskip("whisper")

ECO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "eco")


@pytest.fixture(scope="module")
def runs():
    # one intra-op thread: torch's OpenMP pool crawls on a loaded 2-core machine (a parity test, not a timing)
    return Runs(ECO, env={**os.environ, "OMP_NUM_THREADS": "1"})


@pytest.fixture(scope="module")
def whisper_files(tmp_path_factory):
    """(checkpoint path, data dir with audio.npy and its 30 s log-Mel mel.npy)."""
    import whisper
    from whisper.model import ModelDimensions, Whisper

    path = tmp_path_factory.mktemp("whisper")
    torch.manual_seed(0)
    # n_audio_ctx stays 1500: decode and transcribe feed 30 s (3000-frame) windows, halved by conv2.
    dims = ModelDimensions(n_mels=80, n_audio_ctx=1500, n_audio_state=64, n_audio_head=2, n_audio_layer=2,
                           n_vocab=51865, n_text_ctx=448, n_text_state=64, n_text_head=2, n_text_layer=2)
    model = Whisper(dims).eval()
    # the decoder's positional embedding is torch.empty; token embeddings at std 0.2 (not 1) so the output is
    # not just the input token echoed back (the output projection is the tied embedding)
    torch.nn.init.normal_(model.decoder.positional_embedding, std=0.2)
    torch.nn.init.normal_(model.decoder.token_embedding.weight, std=0.2)
    ckpt = path / "tiny.pt"
    torch.save({"dims": dataclasses.asdict(dims), "model_state_dict": model.state_dict()}, ckpt)
    sr = whisper.audio.SAMPLE_RATE
    t = np.arange(int(sr * 3.5)) / sr
    audio = (0.3 * np.sin(2 * np.pi * 440 * t) + 0.1 * np.sin(2 * np.pi * 1250 * t) * (t > 1.0)).astype(np.float32)
    np.save(path / "audio.npy", audio)
    mel = whisper.pad_or_trim(whisper.log_mel_spectrogram(audio), whisper.audio.N_FRAMES)
    np.save(path / "mel.npy", mel.numpy())
    return str(ckpt), str(path)


def _section(runs, files, name):
    return runs.section(name, "whisper_model.py", *files)


def test_load_model(runs, whisper_files):
    """load_model: torch.load of whisper's checkpoint dict, the model, its sparse alignment-heads buffer."""
    compare(*_section(runs, whisper_files, "load"))


def test_log_mel_spectrogram(runs, whisper_files):
    """The front end: hann window, torch.stft, |.|**2, the Mel filter bank, log10 and clamping."""
    compare(*_section(runs, whisper_files, "log_mel"))


def test_encoder(runs, whisper_files):
    compare(*_section(runs, whisper_files, "encoder"))


def test_decoder_and_kv_cache(runs, whisper_files):
    """Full-sequence logits, then the kv-cache path (forward hooks on the key/value projections)."""
    compare(*_section(runs, whisper_files, "decoder"))


def test_detect_language(runs, whisper_files):
    compare(*_section(runs, whisper_files, "detect_language"))


def test_decode(runs, whisper_files):
    """whisper.decode: greedy (single and batched) and beam search; tokens and text exactly."""
    compare(*_section(runs, whisper_files, "decode"))


def test_decode_fp16(runs, whisper_files):
    """Default DecodingOptions: float16 on CPU (the log-probability within float16's precision)."""
    compare(*_section(runs, whisper_files, "decode_fp16"))


def test_word_alignment(runs, whisper_files):
    """whisper.timing.find_alignment: cross-attention hooks, alignment heads, median filter, numba DTW."""
    compare(*_section(runs, whisper_files, "alignment"))


def test_transcribe(runs, whisper_files):
    """model.transcribe on a numpy array, end to end: text and segments exactly as torch's."""
    compare(*_section(runs, whisper_files, "transcribe"))


def test_transcribe_word_timestamps(runs, whisper_files):
    compare(*_section(runs, whisper_files, "transcribe_words"))
