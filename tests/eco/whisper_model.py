"""openai-whisper, unmodified: a tiny random-weight checkpoint loaded with whisper.load_model, the log-Mel
front end, encoder, decoder (with and without the kv-cache hooks), language detection, decode and transcribe.

    python whisper_model.py CHECKPOINT DATA_DIR [section ...]

DATA_DIR holds audio.npy (float32 16 kHz mono samples: ffmpeg is not installed here, so audio goes in as
the numpy array whisper.load_audio would return) and mel.npy (its 30 s log-Mel input, computed by real
torch, so the model sections test the model whatever the front end does; transcribe runs end to end).
"""

import os

import sys

import numpy as np
import torch
import whisper
from whisper.decoding import DecodingOptions

from harness import emit, main, section  # noqa: F401

_model = {}


def model(path):
    if path not in _model:
        _model[path] = whisper.load_model(path, device="cpu").eval()
    return _model[path]


def audio(data):
    return np.load(os.path.join(data, "audio.npy"))


def mel(data):
    return torch.from_numpy(np.load(os.path.join(data, "mel.npy")))


@section
def load(ckpt, data):
    m = model(ckpt)
    yield "dims", repr(m.dims)
    yield "multilingual", m.is_multilingual
    yield "num_languages", m.num_languages
    yield "n_params", sum(p.numel() for p in m.parameters())
    yield "alignment_heads", m.alignment_heads.to_dense()


@section
def log_mel(ckpt, data):
    a = audio(data)
    spec = whisper.log_mel_spectrogram(a)
    yield "shape", list(spec.shape)
    yield "dtype", str(spec.dtype)
    yield "head", spec[:, :8]
    yield "sum", spec.sum(0)
    yield "tensor_in", whisper.log_mel_spectrogram(torch.from_numpy(a), padding=whisper.audio.N_SAMPLES)[:, :8]
    yield "padded_shape", list(whisper.pad_or_trim(spec, whisper.audio.N_FRAMES).shape)
    yield "mel128", whisper.log_mel_spectrogram(a[:3200], n_mels=128)


@section
def encoder(ckpt, data):
    m = model(ckpt)
    feats = m.encoder(mel(data)[None])
    yield "shape", list(feats.shape)
    yield "head", feats[0, :4]
    yield "mean", feats.mean(1)


@section
def decoder(ckpt, data):
    m = model(ckpt)
    feats = m.embed_audio(mel(data)[None])
    tokens = torch.tensor([[50258, 50259, 50359, 50363, 440, 1002]])
    logits = m.logits(tokens, feats)
    yield "shape", list(logits.shape)
    yield "logits", logits[0, :, :16]
    yield "argmax", logits.argmax(-1)
    # the kv-cache path (forward hooks on key/value): prefix, then one token at a time
    cache, hooks = m.install_kv_cache_hooks()
    step = [m.decoder(tokens[:, :4], feats, kv_cache=cache)[:, -1]]
    for i in range(4, tokens.shape[1]):
        step.append(m.decoder(tokens[:, i:i + 1], feats, kv_cache=cache)[:, -1])
    for h in hooks:
        h.remove()
    yield "cached_last", torch.stack(step, 1)[0, :, :16]
    yield "cached_argmax", torch.stack(step, 1).argmax(-1)
    yield "cache_len", sorted({v.shape[1] for v in cache.values()})


@section
def detect_language(ckpt, data):
    m = model(ckpt)
    token, probs = m.detect_language(mel(data))
    yield "token", int(token)
    top = sorted(probs.items(), key=lambda kv: -kv[1])[:5]
    yield "top_codes", [c for c, _ in top]
    yield "top_probs", [p for _, p in top]


@section
def decode(ckpt, data):
    m = model(ckpt)
    options = DecodingOptions(language="en", without_timestamps=True, fp16=False, sample_len=24)
    result = whisper.decode(m, mel(data), options)
    yield "tokens", result.tokens
    yield "text", result.text
    yield "avg_logprob", result.avg_logprob
    yield "no_speech_prob", result.no_speech_prob
    batch = whisper.decode(m, torch.stack([mel(data), mel(data) * 0.5]), options)
    yield "batch_tokens", [r.tokens for r in batch]
    beam = whisper.decode(m, mel(data), DecodingOptions(language="en", fp16=False, beam_size=3, sample_len=12))
    yield "beam_tokens", beam.tokens
    yield "beam_avg_logprob", beam.avg_logprob


@section
def decode_fp16(ckpt, data):
    """DecodingOptions() as whisper's README uses it: fp16 (the model runs in float16, language detected)."""
    result = whisper.decode(model(ckpt), mel(data), DecodingOptions(sample_len=16))
    yield "tokens", result.tokens
    yield "language", result.language
    yield "avg_logprob", result.avg_logprob


@section
def alignment(ckpt, data):
    """Word timings (whisper.timing): cross-attention hooks, the sparse alignment-heads mask, a median filter
    (reflect pad + unfold + sort) and numba's DTW over the attention weights."""
    from whisper.timing import find_alignment, median_filter
    from whisper.tokenizer import get_tokenizer

    m = model(ckpt)
    yield "heads", m.alignment_heads.indices().T
    tokenizer = get_tokenizer(m.is_multilingual, num_languages=m.num_languages, language="en", task="transcribe")
    text_tokens = tokenizer.encode(" the quick brown fox jumps")
    words = find_alignment(m, tokenizer, text_tokens, mel(data), 350)
    yield "words", [w.word for w in words]
    yield "tokens", [w.tokens for w in words]
    yield "times", [[float(w.start), float(w.end)] for w in words]
    yield "probability", [float(w.probability) for w in words]
    x = torch.linspace(-2, 2, 2 * 3 * 40).reshape(2, 3, 40).sin() * torch.arange(40.0)
    yield "median_filter", median_filter(x, 7)


@section
def transcribe(ckpt, data):
    m = model(ckpt)
    out = m.transcribe(audio(data), fp16=False, temperature=0.0, language="en", sample_len=48)
    yield "text", out["text"]
    yield "language", out["language"]
    yield "n_segments", len(out["segments"])
    for i, seg in enumerate(out["segments"]):
        yield f"seg{i}.tokens", seg["tokens"]
        yield f"seg{i}.span", [seg["start"], seg["end"]]
        yield f"seg{i}.text", seg["text"]
        yield f"seg{i}.avg_logprob", seg["avg_logprob"]
        yield f"seg{i}.compression_ratio", seg["compression_ratio"]


@section
def transcribe_words(ckpt, data):
    m = model(ckpt)
    out = m.transcribe(audio(data), fp16=False, temperature=0.0, language="en", word_timestamps=True,
                       sample_len=48)
    yield "text", out["text"]
    for i, seg in enumerate(out["segments"]):
        yield f"seg{i}.span", [seg["start"], seg["end"]]
        yield f"seg{i}.words", [w["word"] for w in seg.get("words", [])]
        yield f"seg{i}.word_times", [[w["start"], w["end"]] for w in seg.get("words", [])]
        yield f"seg{i}.word_probs", [w["probability"] for w in seg.get("words", [])]


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
