"""torchaudio.models, unmodified: tiny wav2vec2 / HuBERT / WavLM, Conformer, Emformer (full and streaming),
an Emformer RNN-T with beam search, ConvTasNet, Hybrid Demucs, SQUIM, Wav2Letter, DeepSpeech and WaveRNN, each
built from Python with a small config, its state dict (saved by real torch) loaded, run on fixed numpy-seeded
inputs.

    python torchaudio_models.py STATE_DIR [section ...]     (STATE_DIR/<name>.pt: state dicts from BUILDERS)
"""

import os
import sys

import numpy as np
import torch

if torch.version.cuda is not None:
    # Reference run on real torch only (the shim's torch has no CUDA version): torchaudio 2.11's import checks
    # its CUDA build (13.0) against torch's (13.2) and refuses; a CPU run needs no such check.
    torch.version.cuda = None
import torchaudio  # noqa: E402
from torchaudio import models  # noqa: E402

from harness import emit, main, section  # noqa: E402,F401

W2V_CONV = [(16, 10, 5), (16, 3, 2), (16, 2, 2)]


def _w2v(mode, layer_norm_first, aux=None):
    return lambda: models.wav2vec2_model(
        extractor_mode=mode, extractor_conv_layer_config=W2V_CONV, extractor_conv_bias=mode == "layer_norm",
        encoder_embed_dim=32, encoder_projection_dropout=0.0, encoder_pos_conv_kernel=8, encoder_pos_conv_groups=4,
        encoder_num_layers=2, encoder_num_heads=4, encoder_attention_dropout=0.0, encoder_ff_interm_features=64,
        encoder_ff_interm_dropout=0.0, encoder_dropout=0.0, encoder_layer_norm_first=layer_norm_first,
        encoder_layer_drop=0.0, aux_num_out=aux)


BUILDERS = {
    # wav2vec2_base's layout (group-norm extractor, post-norm encoder) and wav2vec2_large's (layer norm, pre-norm)
    "wav2vec2": _w2v("group_norm", False, aux=12),
    "wav2vec2_large": _w2v("layer_norm", True),
    "hubert": _w2v("group_norm", False),  # hubert_base is wav2vec2_model with these settings
    "wavlm": lambda: models.wavlm_model(
        extractor_mode="group_norm", extractor_conv_layer_config=W2V_CONV, extractor_conv_bias=False,
        encoder_embed_dim=32, encoder_projection_dropout=0.0, encoder_pos_conv_kernel=8, encoder_pos_conv_groups=4,
        encoder_num_layers=2, encoder_num_heads=4, encoder_num_buckets=16, encoder_max_distance=32,
        encoder_attention_dropout=0.0, encoder_ff_interm_features=64, encoder_ff_interm_dropout=0.0,
        encoder_dropout=0.0, encoder_layer_norm_first=False, encoder_layer_drop=0.0, aux_num_out=None),
    "conformer": lambda: models.Conformer(input_dim=24, num_heads=4, ffn_dim=48, num_layers=2,
                                          depthwise_conv_kernel_size=7, dropout=0.0),
    "conformer_gn": lambda: models.Conformer(input_dim=24, num_heads=2, ffn_dim=32, num_layers=1,
                                             depthwise_conv_kernel_size=3, use_group_norm=True, convolution_first=True),
    "emformer": lambda: models.Emformer(input_dim=24, num_heads=4, ffn_dim=48, num_layers=2, segment_length=4,
                                        left_context_length=6, right_context_length=2, max_memory_size=3),
    "rnnt": lambda: models.emformer_rnnt_model(
        input_dim=20, encoding_dim=32, num_symbols=16, segment_length=4, right_context_length=2,
        time_reduction_input_dim=24, time_reduction_stride=2, transformer_num_heads=2, transformer_ffn_dim=32,
        transformer_num_layers=2, transformer_dropout=0.0, transformer_activation="gelu",
        transformer_left_context_length=6, transformer_max_memory_size=0,
        transformer_weight_init_scale_strategy="depthwise", transformer_tanh_on_mem=True, symbol_embedding_dim=16,
        num_lstm_layers=2, lstm_layer_norm=True, lstm_layer_norm_epsilon=1e-5, lstm_dropout=0.0),
    "convtasnet": lambda: models.ConvTasNet(num_sources=2, enc_kernel_size=8, enc_num_feats=16, msk_kernel_size=3,
                                            msk_num_feats=8, msk_num_hidden_feats=16, msk_num_layers=2,
                                            msk_num_stacks=2, msk_activate="relu"),
    "wav2letter": lambda: models.Wav2Letter(num_classes=10, input_type="mfcc", num_features=13),
    "deepspeech": lambda: models.DeepSpeech(n_feature=13, n_hidden=32, n_class=10),
    "hdemucs": lambda: models.HDemucs(["drums", "vocals"], audio_channels=1, channels=8, nfft=256, depth=3,
                                      dconv_attn=2, dconv_lstm=2),
    "squim": lambda: models.squim_objective_model(feat_dim=32, win_len=16, d_model=32, nhead=2, hidden_dim=32,
                                                  num_blocks=1, rnn_type="LSTM", chunk_size=15, chunk_stride=8),
    "wavernn": lambda: models.WaveRNN(upsample_scales=[2, 2], n_classes=16, hop_length=4, n_res_block=2,
                                      n_rnn=16, n_fc=16, kernel_size=3, n_freq=8, n_hidden=8, n_output=8),
}


def load(state_dir, name):
    model = BUILDERS[name]()
    model.load_state_dict(torch.load(os.path.join(state_dir, name + ".pt"), weights_only=True))
    return model.eval()


def randn(*shape, seed=0):
    return torch.from_numpy(np.random.default_rng(seed).standard_normal(shape).astype(np.float32))


@section
def wav2vec2(state_dir):
    wave = randn(2, 1600) * 0.3
    for name in ("wav2vec2", "wav2vec2_large", "hubert", "wavlm"):
        model = load(state_dir, name)
        # WavLM's attention takes no padding mask: the whole batch at full length
        out, lengths = model(wave, None if name == "wavlm" else torch.tensor([1600, 1100]))
        yield f"{name}.shape", list(out.shape)
        yield f"{name}.out", out[:, :6, :8]
        yield f"{name}.lengths", lengths
        feats, _ = model.extract_features(wave[:1], num_layers=2)
        yield f"{name}.features", torch.stack([f[0, :4, :6] for f in feats])
    model = load(state_dir, "wav2vec2")
    yield "unpadded", model(wave)[0][:, -3:, :]


@section
def conformer(state_dir):
    x, lengths = randn(2, 10, 24, seed=1), torch.tensor([10, 7])
    out, out_lengths = load(state_dir, "conformer")(x, lengths)
    yield "out", out
    yield "lengths", out_lengths
    yield "group_norm", load(state_dir, "conformer_gn")(x, lengths)[0]


@section
def emformer(state_dir):
    model = load(state_dir, "emformer")
    x, lengths = randn(2, 14, 24, seed=2), torch.tensor([14, 11])
    out, out_lengths = model(x, lengths)
    yield "out", out
    yield "lengths", out_lengths
    # streaming: one segment (4 frames + 2 right context) at a time, states carried over
    state, chunks = None, []
    for start in range(0, 12, 4):
        chunk = x[:1, start:start + 6]
        out, _, state = model.infer(chunk, torch.tensor([chunk.shape[1]]), state)
        chunks.append(out)
    yield "stream", torch.cat(chunks, 1)


@section
def rnnt(state_dir):
    from torchaudio.models import RNNTBeamSearch

    model = load(state_dir, "rnnt")
    feats, lengths = randn(1, 18, 20, seed=3), torch.tensor([18])
    targets = torch.tensor([[3, 5, 7]])
    out, src_len, tgt_len, _ = model(feats, lengths, targets, torch.tensor([3]))
    yield "joint", out[0, :, :, :6]
    yield "lengths", [int(src_len), int(tgt_len)]
    hyps = RNNTBeamSearch(model, blank=15)(feats, lengths, beam_width=3)
    yield "beam_tokens", [h[0] for h in hyps]
    yield "beam_scores", [h[3] for h in hyps]


@section
def convtasnet(state_dir):
    out = load(state_dir, "convtasnet")(randn(2, 1, 400, seed=4))
    yield "shape", list(out.shape)
    yield "out", out[:, :, :40]


@section
def wav2letter_deepspeech(state_dir):
    mfcc = randn(2, 13, 30, seed=5)
    yield "wav2letter", load(state_dir, "wav2letter")(mfcc)
    yield "deepspeech", load(state_dir, "deepspeech")(mfcc.transpose(1, 2)[:, None])


@section
def wavernn(state_dir):
    model = load(state_dir, "wavernn")
    specgram = randn(1, 1, 8, 6, seed=6)
    waveform = randn(1, 1, (6 - 3 + 1) * 4, seed=7)  # (n_time - kernel_size + 1) * hop_length samples
    yield "forward", model(waveform, specgram)[0, 0, :6]


@section
def hdemucs(state_dir):
    """Hybrid Demucs: a time branch and a spectrogram branch (stft/istft, complex-as-channels) summed."""
    out = load(state_dir, "hdemucs")(randn(1, 1, 2048, seed=8) * 0.2)
    yield "shape", list(out.shape)
    yield "out", out[0, :, 0, ::64]


@section
def squim(state_dir):
    """SQUIM objective speech-quality estimates (STOI, PESQ, SI-SDR) from an LSTM dual-path model."""
    yield "metrics", torch.stack(load(state_dir, "squim")(randn(2, 800, seed=9) * 0.3))


if __name__ == "__main__":
    main(sys.argv[1])
