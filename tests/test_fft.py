"""torch.fft, torch.stft/istft and the window functions (candle_bind/fft.py, _spectral.py): each case runs
the same call on torch and candle_bind (same inputs) and compares shape, dtype and values; errors must
have torch's type (and message, where torch's is plain)."""

import numpy as np
import pytest
import torch

import candle_bind as cb
from conftest import dtype_name, make, to_cb, to_np

FLOAT_TOL = {"float32": 2e-5, "float64": 1e-11, "complex64": 2e-5, "complex128": 1e-11}


def same(ours, ref, scale_tol=True):
    """Shape, dtype, then values to a tolerance relative to the largest magnitude (FFT sums n terms)."""
    if isinstance(ref, (tuple, list)):
        for o, r in zip(ours, ref):
            same(o, r, scale_tol)
        return
    assert isinstance(ours, cb.Tensor), type(ours)
    assert tuple(ours.shape) == tuple(ref.shape), (ours.shape, ref.shape)
    assert dtype_name(ours.dtype) == dtype_name(ref.dtype), (ours.dtype, ref.dtype)
    assert ours.is_complex() == ref.is_complex()
    a, b = to_np(ours), to_np(ref)
    tol = FLOAT_TOL.get(dtype_name(ref.dtype))
    if tol is None:
        np.testing.assert_array_equal(a, b)
        return
    scale = max(1.0, float(np.abs(b).max())) if b.size and scale_tol else 1.0
    np.testing.assert_allclose(a, b, atol=tol * scale, rtol=tol * 10)


def run(fn, *inputs, scale_tol=True):
    """fn(lib, *inputs) on torch and on candle_bind: the same result, or the same error type and message."""
    try:
        ref = fn(torch, *inputs)
    except Exception as e:  # noqa: BLE001 - the same exception is wanted from ours
        with pytest.raises(type(e)) as info:
            fn(cb, *[to_cb(x) if isinstance(x, torch.Tensor) else x for x in inputs])
        if "\n" not in str(e) and "Tensor" not in str(e):
            assert str(info.value) == str(e)
        return
    same(fn(cb, *[to_cb(x) if isinstance(x, torch.Tensor) else x for x in inputs]), ref, scale_tol)


def cplx(shape, dtype=torch.complex64, seed=0):
    real = torch.float64 if dtype == torch.complex128 else torch.float32
    return torch.complex(make(shape, seed=seed).to(real), make(shape, seed=seed + 7).to(real))


REAL = {"float32": make((3, 8)), "float64": make((3, 8)).double(), "odd": make((2, 7), seed=3)}
COMPLEX = {"complex64": cplx((3, 8)), "complex128": cplx((3, 8), torch.complex128), "odd": cplx((2, 7), seed=4)}


# ---- 1-d transforms ----

@pytest.mark.parametrize("name", ["fft", "ifft", "rfft", "ihfft", "hfft", "irfft"])
@pytest.mark.parametrize("kind", list(REAL))
@pytest.mark.parametrize("n", [None, 5, 8, 11])
@pytest.mark.parametrize("norm", [None, "backward", "ortho", "forward"])
def test_1d_real_input(name, kind, n, norm):
    run(lambda L, x: getattr(L.fft, name)(x, n=n, norm=norm), REAL[kind])


@pytest.mark.parametrize("name", ["fft", "ifft", "irfft", "hfft", "rfft", "ihfft"])
@pytest.mark.parametrize("kind", list(COMPLEX))
@pytest.mark.parametrize("n", [None, 4, 13])
@pytest.mark.parametrize("dim", [-1, 0])
def test_1d_complex_input(name, kind, n, dim):
    run(lambda L, x: getattr(L.fft, name)(x, n, dim, "ortho" if n == 4 else None), COMPLEX[kind])


@pytest.mark.parametrize("dtype", ["int64", "bool", "int32"])
def test_integer_input_is_promoted(dtype):
    run(lambda L, x: (L.fft.fft(x), L.fft.rfft(x), L.fft.ihfft(x)), make((6,), dtype))


@pytest.mark.parametrize("case", [
    lambda L, x: L.fft.fft(x, n=0), lambda L, x: L.fft.fft(x, n=-2), lambda L, x: L.fft.fft(x, dim=2),
    lambda L, x: L.fft.fft(x, dim=-3), lambda L, x: L.fft.fft(x, norm="bad"), lambda L, x: L.fft.fft(x[:, :0]),
    lambda L, x: L.fft.irfft(x[:, :1]), lambda L, x: L.fft.hfft(x[:, :1]), lambda L, x: L.fft.fft(x.sum()),
    lambda L, x: L.fft.rfft(L.complex(x, x)), lambda L, x: L.fft.ihfft(L.complex(x, x)),
    lambda L, x: L.fft.fft(x.half()), lambda L, x: L.fft.fft(x.bfloat16()),
    lambda L, x: L.fft.fftn(x, s=(2,), dim=(0, 1)), lambda L, x: L.fft.fftn(x, dim=(0, 0)),
    lambda L, x: L.fft.fft2(x[0]), lambda L, x: L.fft.rfftn(x.sum()), lambda L, x: L.fft.fftn(x, s=(2, 3, 4)),
    lambda L, x: L.fft.irfftn(x, s=(0, 4)), lambda L, x: L.fft.fftn(x, s=(2, -1)),
], ids=lambda f: str(id(f)))
def test_errors_and_edges(case):
    run(case, REAL["float32"])


def test_small_and_zero_dim():
    run(lambda L, x: (L.fft.fft(x[:1]), L.fft.rfft(x[:1]), L.fft.irfft(x[:2]), L.fft.fftn(x.sum()),
                      L.fft.ifftn(x.sum()), L.fft.fft(x, n=1)), make((5,)))


# ---- n-d transforms ----

@pytest.mark.parametrize("name", ["fft2", "ifft2", "fftn", "ifftn", "rfft2", "rfftn", "ihfft2", "ihfftn"])
@pytest.mark.parametrize("args", [{}, {"s": (4, 6)}, {"s": (5,)}, {"dim": (0,)}, {"dim": (-1, 0)},
                                  {"s": (3, 9), "dim": (2, 0)}, {"norm": "ortho"}, {"norm": "forward", "s": (2, 2)}],
                         ids=str)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_nd_real_input(name, args, dtype):
    if name.endswith("2") and "dim" in args and len(args["dim"]) == 1:
        args = dict(args, dim=(args["dim"][0], -1))
    run(lambda L, x: getattr(L.fft, name)(x, **args), make((3, 4, 5), seed=2).to(dtype))


@pytest.mark.parametrize("name", ["fft2", "ifft2", "fftn", "ifftn", "irfft2", "irfftn", "hfft2", "hfftn"])
@pytest.mark.parametrize("args", [{}, {"s": (4, 6)}, {"dim": (-1, 0)}, {"norm": "ortho"}, {"norm": "forward"},
                                  {"s": (3, 7), "dim": (2, 0)}], ids=str)
def test_nd_complex_input(name, args):
    run(lambda L, x: getattr(L.fft, name)(x, **args), cplx((3, 4, 5), seed=5))


# ---- frequencies and shifts ----

@pytest.mark.parametrize("n", [1, 4, 7, 10])
@pytest.mark.parametrize("d", [1.0, 0.1, 3])
def test_fftfreq_rfftfreq(n, d):
    run(lambda L: (L.fft.fftfreq(n, d), L.fft.rfftfreq(n, d), L.fft.fftfreq(n, d, dtype=L.float64),
                   L.fft.rfftfreq(n, d=d, dtype=L.float64)))


def test_fftfreq_errors_and_complex_dtype():
    run(lambda L: L.fft.fftfreq(4, dtype=L.int64))
    run(lambda L: L.fft.rfftfreq(4, dtype=L.int32))
    run(lambda L: L.fft.fftfreq(5, 0.5, dtype=L.complex64))


@pytest.mark.parametrize("dim", [None, 0, -1, (0, 1), [1]])
def test_fftshift_ifftshift(dim):
    run(lambda L, x: (L.fft.fftshift(x, dim), L.fft.ifftshift(x, dim), L.fft.ifftshift(L.fft.fftshift(x, dim), dim)),
        make((5, 6)))
    run(lambda L, x: (L.fft.fftshift(x, dim), L.fft.ifftshift(x, dim=dim)), cplx((3, 4)))
    run(lambda L: L.fft.fftshift(L.fft.fftfreq(7)))


def test_shift_of_zero_dim_errors():
    run(lambda L, x: L.fft.fftshift(x.sum()), make((3,)))


def test_out_argument():
    x = make((2, 8))
    out = cb.fft.rfft(to_cb(x))
    got = cb.fft.rfft(to_cb(x) * 2, out=out)
    assert got is out
    same(out, torch.fft.rfft(x * 2))
    run(lambda L, x: L.fft.rfft(x, out=L.zeros(2, 5)), x)


# ---- windows ----

WINDOWS = ["hann_window", "hamming_window", "blackman_window", "bartlett_window", "kaiser_window"]


@pytest.mark.parametrize("name", WINDOWS)
@pytest.mark.parametrize("n", [0, 1, 2, 5, 8, 400])
@pytest.mark.parametrize("periodic", [True, False])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_windows(name, n, periodic, dtype):
    run(lambda L: getattr(L, name)(n, periodic, dtype=getattr(L, dtype)))


def test_window_options_and_errors():
    run(lambda L: (L.hamming_window(9, True, 0.5, 0.3), L.kaiser_window(9, True, 5.0),
                   L.kaiser_window(9, False, 8.0), L.hann_window(12)))
    run(lambda L: L.hann_window(-1))
    run(lambda L: L.hann_window(4, dtype=L.int64))
    run(lambda L: L.kaiser_window(4, dtype=L.int64))
    run(lambda L: L.bartlett_window(3, dtype=L.float16))
    assert cb.hann_window(4).dtype == cb.get_default_dtype()


# ---- stft / istft ----

SIGNAL = make((2, 300), seed=9)


@pytest.mark.parametrize("args", [
    dict(n_fft=16), dict(n_fft=16, hop_length=5), dict(n_fft=32, win_length=20), dict(n_fft=17, hop_length=3),
    dict(n_fft=16, center=False), dict(n_fft=16, pad_mode="constant"), dict(n_fft=16, pad_mode="replicate"),
    dict(n_fft=16, pad_mode="circular"), dict(n_fft=16, normalized=True), dict(n_fft=16, onesided=False),
    dict(n_fft=20, hop_length=7, center=False, onesided=False, normalized=True), dict(n_fft=300, center=False),
    dict(n_fft=16, win_length=10, center=False, align_to_window=True),
], ids=str)
@pytest.mark.parametrize("window", [None, "hann", "float64"])
def test_stft(args, window):
    def fn(L, x):
        win = args.get("win_length", args["n_fft"])
        w = None if window is None else L.hann_window(win, dtype=L.float64 if window == "float64" else L.float32)
        return (L.stft(x, window=w, return_complex=True, **args), L.stft(x[0], window=w, return_complex=True, **args))
    run(fn, SIGNAL)


def test_stft_float64_and_complex_input():
    run(lambda L, x: L.stft(x, 16, window=L.hann_window(16, dtype=L.float64), return_complex=True), SIGNAL.double())
    run(lambda L, x: L.stft(x, 16, 4, window=L.hann_window(16), return_complex=True), cplx((2, 64)))
    run(lambda L, x: L.stft(x, 16, 4, return_complex=True), cplx((64,)))


def test_stft_whisper_log_mel_path():
    """whisper's log_mel_spectrogram: stft -> [..., :-1].abs() ** 2 -> filters @ magnitudes -> log10."""
    audio = make((4000,), seed=1) * 0.1
    filters = make((80, 201), low=0.0, high=0.05, seed=2)

    def fn(L, a, f):
        s = L.stft(a, 400, 160, window=L.hann_window(400), return_complex=True)
        magnitudes = s[..., :-1].abs() ** 2
        mel = f @ magnitudes
        log_spec = L.clamp(mel, min=1e-10).log10()
        log_spec = L.maximum(log_spec, log_spec.max() - 8.0)
        return magnitudes, (log_spec + 4.0) / 4.0
    run(fn, audio, filters)


def test_stft_return_complex_false_and_errors():
    with pytest.warns(UserWarning, match="return_complex=False is deprecated"):
        got = cb.stft(to_cb(SIGNAL), 16, return_complex=False)
    with pytest.warns(UserWarning):
        ref = torch.stft(SIGNAL, 16, return_complex=False)
    same(got, ref)
    x = SIGNAL[0]
    for fn in [lambda L, x: L.stft(x, 16), lambda L, x: L.stft(x, 256, return_complex=True),
               lambda L, x: L.stft(x, 400, center=False, return_complex=True),
               lambda L, x: L.stft(x, 16, hop_length=0, return_complex=True),
               lambda L, x: L.stft(x, 16, win_length=20, return_complex=True),
               lambda L, x: L.stft(x, 16, window=L.ones(5), return_complex=True),
               lambda L, x: L.stft(x.long(), 16, return_complex=True),
               lambda L, x: L.stft(x.reshape(1, 2, 150), 16, return_complex=True),
               lambda L, x: L.stft(x, 16, pad_mode="bogus", return_complex=True),
               lambda L, x: L.stft(x, 16, onesided=True, return_complex=True, window=L.complex(L.ones(16), L.ones(16))),
               lambda L, x: L.stft(x, 16, return_complex=True, align_to_window=True)]:
        run(fn, x)


@pytest.mark.parametrize("args", [
    dict(n_fft=16), dict(n_fft=16, hop_length=5), dict(n_fft=32, win_length=20), dict(n_fft=17, hop_length=3),
    dict(n_fft=16, center=False), dict(n_fft=16, normalized=True), dict(n_fft=16, onesided=False),
], ids=str)
@pytest.mark.parametrize("length", [None, 250, 320])
def test_istft(args, length):
    def fn(L, x):
        win = args.get("win_length", args["n_fft"])
        w = L.hann_window(win)
        s = L.stft(x, window=w, return_complex=True, **args)
        return L.istft(s, window=w, length=length, **args), L.istft(s[0], window=w, length=length, **args)
    run(fn, SIGNAL)


def test_istft_round_trip_complex_and_errors():
    def round_trip(L, x):
        w = L.hann_window(16)
        return L.istft(L.stft(x, 16, 4, window=w, return_complex=True), 16, 4, window=w, return_complex=True)
    run(round_trip, cplx((2, 64)))
    spec = torch.stft(SIGNAL[0], 16, window=torch.hann_window(16), return_complex=True)
    for fn in [lambda L, s: L.istft(L.view_as_real(s), 16),
               lambda L, s: L.istft(s, 16, window=L.zeros(16)),
               lambda L, s: L.istft(s, 16, hop_length=20),
               lambda L, s: L.istft(s, 18),
               lambda L, s: L.istft(s, 16, return_complex=True),
               lambda L, s: L.istft(s, 16, return_complex=True, onesided=False)]:
        run(fn, spec)


# ---- numpy scalars and arrays against tensors (__array_priority__) ----

def test_numpy_operands_give_tensors_as_torch():
    t, c = torch.ones(3), cb.ones(3)
    for expr in [lambda x: np.float64(2.0) * x, lambda x: x * np.float64(2.0), lambda x: np.float32(2) + x,
                 lambda x: np.int64(3) * x, lambda x: np.float64(2.0) / x, lambda x: np.float64(1.5) - x]:
        ref, ours = expr(t), expr(c)
        assert isinstance(ours, cb.Tensor), type(ours)
        same(ours, ref)


# ---- torch.signal.windows ----

@pytest.mark.parametrize("name,kwargs", [
    ("bartlett", {}), ("blackman", {}), ("cosine", {}), ("exponential", {}), ("exponential", {"tau": 2.5}),
    ("gaussian", {}), ("gaussian", {"std": 0.7}), ("general_cosine", {"a": [0.5, 0.3, 0.2]}),
    ("general_hamming", {"alpha": 0.6}), ("hamming", {}), ("hann", {}), ("kaiser", {}), ("kaiser", {"beta": 3.0}),
    ("nuttall", {})], ids=str)
@pytest.mark.parametrize("M", [0, 1, 2, 7, 10])
@pytest.mark.parametrize("sym", [True, False])
def test_signal_windows(name, kwargs, M, sym):
    run(lambda L: (getattr(L.signal.windows, name)(M, sym=sym, **kwargs),
                   getattr(L.signal.windows, name)(M, sym=sym, dtype=L.float64, **kwargs)))


def test_signal_windows_errors():
    for fn in [lambda L: L.signal.windows.hann(-1), lambda L: L.signal.windows.hann(4, dtype=L.float16),
               lambda L: L.signal.windows.gaussian(4, std=0), lambda L: L.signal.windows.exponential(4, center=1.0),
               lambda L: L.signal.windows.kaiser(4, beta=-1.0), lambda L: L.signal.windows.general_cosine(4, a=[])]:
        run(fn)
    run(lambda L: L.signal.windows.exponential(6, center=1.0, sym=False))


def test_native_kernel_paths():
    """src/fft.rs: lines strided along a middle dim, large batches (the threaded path), prime and odd
    lengths, non-contiguous inputs, padding and cutting, both precisions."""
    big = make((64, 1024), seed=11)
    run(lambda L, x: (L.fft.rfft(x), L.fft.fft(x), L.fft.irfft(L.fft.rfft(x)), L.fft.ifft(x, dim=0)), big)
    run(lambda L, x: (L.fft.fft(x, n=97, dim=1), L.fft.rfft(x, n=101, dim=1), L.fft.ihfft(x, dim=1),
                      L.fft.fftn(x, s=(7, 13), dim=(2, 0)), L.fft.irfftn(L.fft.rfftn(x), s=x.shape)),
        make((9, 40, 6), seed=12).double())
    nc = make((12, 30), seed=13).t()  # non-contiguous
    run(lambda L, x: (L.fft.fft(x), L.fft.rfft(x, dim=0), L.fft.hfft(L.complex(x, x)[:, 1:], n=17)), nc)
    run(lambda L, x: L.fft.fft2(L.complex(x, -x).transpose(0, 1), norm="ortho"), make((33, 8), seed=14))
    run(lambda L, x: L.stft(x, 400, 160, window=L.hann_window(400), return_complex=True), make((2, 16000), seed=15))
    run(lambda L, x: L.stft(x, 64, 16, window=L.hann_window(48, dtype=L.float64), return_complex=True,
                            onesided=False, normalized=True), make((3000,), seed=16).double())
    run(lambda L, x: L.stft(x, 16, 5, window=L.complex(L.hann_window(16), L.ones(16)), return_complex=True), SIGNAL)