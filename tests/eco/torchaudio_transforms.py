"""torchaudio.functional and torchaudio.transforms at inference, unmodified: filter banks, DCT, dB scaling,
resampling (windowed sinc, Hann and Kaiser), mu-law, IIR filters (torchaudio's Python loop: its compiled
lfilter cannot load under the shim) and effects, pitch detection, VAD, loudness, the STFT-based transforms
(Spectrogram, MelSpectrogram, MFCC, LFCC, SpectralCentroid, GriffinLim, TimeStretch, PitchShift, InverseMelScale)
and Kaldi-compatible fbank/MFCC features.
Inputs are numpy-seeded, so both runs see the same samples.

    python torchaudio_transforms.py [section ...]
"""

import sys

import numpy as np
import torch

if torch.version.cuda is not None:
    # Reference run on real torch only (the shim's torch has no CUDA version): torchaudio 2.11's import checks
    # its CUDA build (13.0) against torch's (13.2) and refuses; a CPU run needs no such check.
    torch.version.cuda = None
import torchaudio  # noqa: E402
import torchaudio.compliance.kaldi as kaldi  # noqa: E402
import torchaudio.functional as AF  # noqa: E402
import torchaudio.transforms as T  # noqa: E402

from harness import emit, main, section  # noqa: E402,F401

SR = 16000


def wave(channels=2, seconds=0.25, seed=0):
    """Two tones plus a little noise, (channels, samples) float32."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(SR * seconds)) / SR
    out = [0.5 * np.sin(2 * np.pi * (220 + 330 * c) * t) + 0.2 * np.sin(2 * np.pi * 3100 * t)
           + 0.02 * rng.standard_normal(t.shape) for c in range(channels)]
    return torch.from_numpy(np.stack(out).astype(np.float32))


@section
def filterbanks():
    yield "mel_htk", AF.melscale_fbanks(201, 0.0, 8000.0, 40, SR)
    yield "mel_slaney", AF.melscale_fbanks(257, 20.0, 7600.0, 32, SR, norm="slaney", mel_scale="slaney")
    yield "linear", AF.linear_fbanks(129, 0.0, 8000.0, 20, SR)
    yield "dct_ortho", AF.create_dct(13, 40, "ortho")
    yield "dct_none", AF.create_dct(20, 32, None)


@section
def amplitude():
    x = wave().abs() * 10
    yield "to_db_power", AF.amplitude_to_DB(x, 10.0, 1e-10, 0.0, top_db=80.0)[:, :64]
    yield "to_db_amp", AF.amplitude_to_DB(x[None], 20.0, 1e-10, 0.0, top_db=40.0)[0, :, :64]
    yield "transform", T.AmplitudeToDB(stype="power", top_db=60.0)(x)[:, ::50]
    yield "from_db", AF.DB_to_amplitude(torch.linspace(-40, 10, 11), 1.0, 0.5)
    mu = T.MuLawEncoding(256)(wave())
    yield "mu_law", mu[:, :64]
    yield "mu_law_decode", T.MuLawDecoding(256)(mu)[:, :64]


@section
def resample():
    x = wave()
    yield "down_hann", AF.resample(x, SR, 8000)[:, ::20]
    yield "up_hann", AF.resample(x, 8000, 11025, lowpass_filter_width=8, rolloff=0.9)[:, ::40]
    yield "kaiser", AF.resample(x, SR, 22050, resampling_method="sinc_interp_kaiser", beta=14.769656459379492,
                                lowpass_filter_width=16)[:, ::40]
    r = T.Resample(44100, SR, resampling_method="sinc_interp_kaiser", dtype=torch.float32)
    yield "transform_kaiser", r(wave(1, 0.1))[:, ::20]
    yield "transform_kernel", r.kernel[:3, 0, :16]
    yield "transform_shape", list(T.Resample(SR, 8000)(x).shape)


@section
def filters():
    x = wave(1, 0.05)
    yield "lowpass", AF.lowpass_biquad(x, SR, 1000.0)[:, ::8]
    yield "highpass", AF.highpass_biquad(x, SR, 2000.0, Q=0.5)[:, ::8]
    yield "bandpass", AF.bandpass_biquad(x, SR, 3000.0, Q=2.0)[:, ::8]
    yield "treble", AF.treble_biquad(x, SR, 6.0)[:, ::8]
    yield "lfilter", AF.lfilter(x, torch.tensor([1.0, -0.5, 0.25]), torch.tensor([0.3, 0.2, 0.1]))[:, ::8]
    yield "filtfilt", AF.filtfilt(x, torch.tensor([1.0, -0.3]), torch.tensor([0.5, 0.5]))[:, ::8]
    yield "preemphasis", T.Preemphasis(0.97)(x)[:, :32]
    yield "deemphasis", T.Deemphasis(0.97)(x)[:, ::8]
    yield "gain", AF.gain(x, 3.0)[:, :16]
    yield "contrast", AF.contrast(x, 50.0)[:, ::8]
    yield "dcshift", AF.dcshift(x, 0.2, 0.05)[:, ::8]
    yield "overdrive", AF.overdrive(x, 20.0, 20.0)[:, ::8]
    yield "convolve", AF.convolve(x, torch.tensor([[0.25, 0.5, 0.25]]))[:, ::8]
    yield "deltas", T.ComputeDeltas(win_length=5)(x.reshape(1, 20, 40))[0, :4]
    yield "fade", T.Fade(fade_in_len=100, fade_out_len=200, fade_shape="half_sine")(x)[:, ::8]
    yield "vol", T.Vol(0.5, "amplitude")(x)[:, :16]


@section
def spectrogram():
    x = wave()
    spec = T.Spectrogram(n_fft=256, hop_length=64)(x)
    yield "power2_shape", list(spec.shape)
    yield "power2", spec[:, :40, :6]
    yield "power1_normalized", T.Spectrogram(n_fft=200, win_length=160, power=1.0, normalized=True,
                                             center=False)(x)[:, :30, :5]
    complex_spec = T.Spectrogram(n_fft=128, power=None)(x)
    yield "complex_dtype", str(complex_spec.dtype)
    yield "complex_abs", complex_spec.abs()[:, :20, :5]
    yield "centroid", T.SpectralCentroid(SR, n_fft=256)(x)[:, :10]


@section
def mel():
    x = wave()
    yield "melspec", T.MelSpectrogram(SR, n_fft=400, hop_length=160, n_mels=40)(x)[:, :, :6]
    yield "melspec_slaney", T.MelSpectrogram(SR, n_fft=512, n_mels=32, norm="slaney", mel_scale="slaney",
                                             power=1.0)(x)[:, :, :6]
    yield "mfcc", T.MFCC(SR, n_mfcc=13, melkwargs={"n_fft": 400, "hop_length": 160, "n_mels": 40})(x)[:, :, :8]
    yield "mfcc_log", T.MFCC(SR, n_mfcc=20, log_mels=True, melkwargs={"n_fft": 256, "n_mels": 32})(x)[:, :, :8]
    yield "lfcc", T.LFCC(SR, n_filter=40, n_lfcc=20, speckwargs={"n_fft": 256})(x)[:, :, :8]
    yield "melscale", T.MelScale(n_mels=16, sample_rate=SR, n_stft=129)(torch.linspace(0, 1, 129 * 4).reshape(129, 4))


@section
def kaldi_features():
    x = wave(1)
    yield "fbank", kaldi.fbank(x, num_mel_bins=23, sample_frequency=SR, dither=0.0)[:6]
    yield "mfcc", kaldi.mfcc(x, num_ceps=13, sample_frequency=SR, dither=0.0)[:6]
    yield "spectrogram", kaldi.spectrogram(x, sample_frequency=SR, dither=0.0)[:3, :40]


@section
def inverse():
    x = wave(1)
    spec = T.Spectrogram(n_fft=256, hop_length=64, power=None)(x)
    yield "inverse_spectrogram", T.InverseSpectrogram(n_fft=256, hop_length=64)(spec)[:, ::20]
    yield "fftconvolve", AF.fftconvolve(x, torch.tensor([[0.25, 0.5, 0.25, 0.1]]))[:, ::20]


@section
def griffin_lim():
    spec = T.Spectrogram(n_fft=256, hop_length=64)(wave(1))
    yield "waveform", T.GriffinLim(n_fft=256, hop_length=64, n_iter=4, rand_init=False)(spec)[:, ::20]


@section
def phase_vocoder():
    x = wave(1)
    spec = T.Spectrogram(n_fft=256, hop_length=64, power=None)(x)
    stretched = T.TimeStretch(hop_length=64, n_freq=129, fixed_rate=1.3)(spec)
    yield "time_stretch_shape", list(stretched.shape)
    yield "time_stretch_abs", stretched.abs()[:, :20, :6]
    yield "pitch_shift", T.PitchShift(SR, 2, n_fft=256)(x)[:, ::40]  # a lazy module: its kernel built on first call


@section
def more_functional():
    x = wave()
    yield "detect_pitch", AF.detect_pitch_frequency(x, SR)
    yield "sliding_window_cmn", T.SlidingWindowCmn(cmn_window=10)(torch.linspace(0, 1, 300).reshape(30, 10))[:3]
    yield "speed", AF.speed(x, SR, 1.1)[0][:, ::40]
    yield "add_noise", AF.add_noise(x, x.flip(-1) * 0.1, torch.tensor([10.0, 20.0]))[:, ::40]
    yield "edit_distance", AF.edit_distance([1, 2, 3, 4], [1, 3, 4, 5])
    yield "vad", AF.vad(torch.cat([torch.zeros(1, 2000), x[:1]], 1), SR)[:, ::40]
    yield "loudness", T.Loudness(SR)(wave(2, 1.0))
    yield "flanger", AF.flanger(x, SR)[:, ::40]
    yield "phaser", AF.phaser(x, SR)[:, ::40]
    yield "riaa", AF.riaa_biquad(x, 44100)[:, ::40]
    yield "equalizer", AF.equalizer_biquad(x, SR, 1000.0, 3.0)[:, ::40]
    mel = T.MelScale(16, SR, n_stft=65)(torch.linspace(0.1, 1, 325).reshape(65, 5))
    yield "inverse_mel", T.InverseMelScale(n_stft=65, n_mels=16, sample_rate=SR)(mel)[:5]
    yield "psd", AF.psd(T.Spectrogram(n_fft=64, power=None)(wave(3))).abs()[:3, 0]


if __name__ == "__main__":
    main()
