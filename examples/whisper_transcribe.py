"""A plain openai-whisper script (nothing here names candle_bind): transcribe a .wav file.

    python examples/whisper_transcribe.py [CHECKPOINT] [WAV]                      # on torch
    python -m candle_bind run examples/whisper_transcribe.py [CHECKPOINT] [WAV]   # the same file on Candle

CHECKPOINT is a whisper checkpoint file (e.g. ~/.cache/whisper/tiny.pt, or a model name whisper has cached);
if the file does not exist, a tiny model with seeded random weights is built and saved there first (its
"transcript" is gibberish, but the same gibberish on torch and on candle_bind: run it once with each, the
second run loads the file the first one saved). WAV defaults to a synthetic two-tone clip written next to the
checkpoint. whisper.load_audio needs the ffmpeg program; without it the .wav is read with the standard
library's `wave` module into the float32 array load_audio would return.
"""

import dataclasses
import os
import shutil
import sys
import tempfile
import time
import wave

import numpy as np
import torch
import whisper

SAMPLE_RATE = whisper.audio.SAMPLE_RATE
folder = os.path.join(tempfile.gettempdir(), "whisper-example")
checkpoint = sys.argv[1] if len(sys.argv) > 1 else os.path.join(folder, "whisper-tiny-random.pt")
wav_path = sys.argv[2] if len(sys.argv) > 2 else os.path.join(folder, "tone.wav")
os.makedirs(folder, exist_ok=True)

if checkpoint not in whisper.available_models() and not os.path.exists(checkpoint):
    from whisper.model import ModelDimensions, Whisper

    torch.manual_seed(0)
    dims = ModelDimensions(n_mels=80, n_audio_ctx=1500, n_audio_state=64, n_audio_head=2, n_audio_layer=2,
                           n_vocab=51865, n_text_ctx=448, n_text_state=64, n_text_head=2, n_text_layer=2)
    model = Whisper(dims)
    torch.nn.init.normal_(model.decoder.positional_embedding, std=0.2)
    torch.nn.init.normal_(model.decoder.token_embedding.weight, std=0.2)
    torch.save({"dims": dataclasses.asdict(dims), "model_state_dict": model.state_dict()}, checkpoint)
    print(f"built a tiny random whisper model: {checkpoint}")

if not os.path.exists(wav_path):
    t = np.arange(int(SAMPLE_RATE * 3.5)) / SAMPLE_RATE
    tone = 0.3 * np.sin(2 * np.pi * 440 * t) + 0.1 * np.sin(2 * np.pi * 1250 * t) * (t > 1.0)
    with wave.open(wav_path, "wb") as f:
        f.setnchannels(1)
        f.setsampwidth(2)
        f.setframerate(SAMPLE_RATE)
        f.writeframes((tone * 32767).astype("<i2").tobytes())


def read_wav(path):
    """whisper.load_audio's result (mono float32 at 16 kHz) for a 16 kHz 16-bit mono .wav, without ffmpeg."""
    with wave.open(path, "rb") as f:
        assert f.getframerate() == SAMPLE_RATE and f.getsampwidth() == 2 and f.getnchannels() == 1, \
            "without ffmpeg, give a 16 kHz 16-bit mono .wav"
        return np.frombuffer(f.readframes(f.getnframes()), "<i2").astype(np.float32) / 32768.0


audio = whisper.load_audio(wav_path) if shutil.which("ffmpeg") else read_wav(wav_path)

t0 = time.perf_counter()
model = whisper.load_model(checkpoint, device="cpu")
t1 = time.perf_counter()
language, probs = model.detect_language(whisper.log_mel_spectrogram(whisper.pad_or_trim(audio)))
result = model.transcribe(audio, fp16=False, temperature=0.0, language="en", sample_len=48)
t2 = time.perf_counter()
print(f"torch {torch.__version__}: loaded {os.path.basename(checkpoint)} in {t1 - t0:.2f} s, "
      f"transcribed {len(audio) / SAMPLE_RATE:.1f} s of audio in {t2 - t1:.2f} s")
print(f"detected language: {max(probs, key=probs.get)}")
for seg in result["segments"]:
    print(f"[{seg['start']:6.2f} -> {seg['end']:6.2f}] {seg['text']!r}")
