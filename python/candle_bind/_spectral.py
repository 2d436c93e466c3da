"""torch.stft, torch.istft and the window functions (torch.hann_window, ...).

The framing, windowing and transforms run in numpy on the host (one strided view of all frames, one
pocketfft call over them, no loop over frames), in the input's precision, as torch's CPU kernels;
results come back on the input's device.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from . import _C
from ._C import Tensor
from ._complex import ComplexTensor, from_numpy_complex

FUNCTIONS = ("stft", "istft", "hann_window", "hamming_window", "blackman_window", "bartlett_window", "kaiser_window")

_PAD_MODES = {"reflect": "reflect", "constant": "constant", "replicate": "edge", "circular": "wrap"}
_TYPE_NAMES = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16", "int64": "Long",
               "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool",
               "complex64": "ComplexFloat", "complex128": "ComplexDouble"}


def _dname(dtype) -> str:
    return repr(dtype).rsplit(".", 1)[-1]


def _host(x: Tensor) -> np.ndarray:
    return x.numpy() if isinstance(x, ComplexTensor) else x.cpu().numpy()


# ---- window functions (torch's formulas, evaluated in the output dtype as its kernels do) ----

def _window(name: str, window_length: int, periodic: bool, dtype, device, formula):
    dtype = dtype or _C.get_default_dtype()
    if window_length < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got window_length={window_length}")
    if not dtype.is_floating_point:
        raise RuntimeError(f"{name} expects floating point dtypes, got: TensorOptions(dtype={_cpp_name(dtype)}, "
                           f"device=cpu, layout=Strided (default), requires_grad=false (default), "
                           f"pinned_memory=false, memory_format=(nullopt))")
    npdt = {"float64": np.float64, "float16": np.float16}.get(_dname(dtype), np.float32)  # torch's arithmetic
    if window_length <= 1:
        w = np.ones(window_length, npdt)
    else:
        n = window_length + 1 if periodic else window_length
        w = formula(np.arange(n, dtype=npdt), n)[:window_length].astype(npdt)
    out = _C.from_numpy(np.ascontiguousarray(w))
    if out.dtype != dtype:
        out = out.to(dtype)
    return out.to(device) if device is not None else out


def _cpp_name(dtype) -> str:
    from ._tensor import dtype_cpp

    return dtype_cpp(dtype)


def _cosine_sum(alpha: float, beta: float):
    def formula(k, n):
        k *= k.dtype.type(2.0 * math.pi / (n - 1))
        return np.cos(k) * k.dtype.type(-beta) + k.dtype.type(alpha)
    return formula


def hann_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False,
                pin_memory=False):
    """0.5 - 0.5 cos(2 pi n / (N - 1)), N = window_length (+1 when periodic, the last point dropped)."""
    return _window("hann_window", window_length, periodic, dtype, device, _cosine_sum(0.5, 0.5))


def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None, layout=None, device=None,
                   requires_grad=False, pin_memory=False):
    return _window("hamming_window", window_length, periodic, dtype, device, _cosine_sum(alpha, beta))


def _blackman(k, n):
    k *= k.dtype.type(math.pi / (n - 1))
    return np.cos(k * 4) * k.dtype.type(0.08) - np.cos(k * 2) * k.dtype.type(0.5) + k.dtype.type(0.42)


def blackman_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False,
                    pin_memory=False):
    return _window("blackman_window", window_length, periodic, dtype, device, _blackman)


def _bartlett(k, n):
    k *= k.dtype.type(2.0 / (n - 1))
    half = ((n - 1) >> 1) + 1
    k[half:] = 2 - k[half:]
    return k


def bartlett_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False,
                    pin_memory=False):
    return _window("bartlett_window", window_length, periodic, dtype, device, _bartlett)


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, layout=None, device=None,
                  requires_grad=False, pin_memory=False):
    """I0(beta sqrt(1 - ((n - a) / a)^2)) / I0(beta), a = (N - 1) / 2."""
    def formula(k, n):
        a = (n - 1) / 2.0
        return np.i0(beta * np.sqrt(np.maximum(1 - ((k.astype(np.float64) - a) / a) ** 2, 0))) / np.i0(beta)
    return _window("kaiser_window", window_length, periodic, dtype, device, formula)


# ---- stft / istft ----

def _describe(x) -> str:
    if x is None:
        return "None"
    return f"torch.{_TYPE_NAMES.get(_dname(x.dtype), _dname(x.dtype))}Tensor{{{list(x.shape)}}}"


def stft(input, n_fft, hop_length=None, win_length=None, window=None, center=True, pad_mode="reflect",
         normalized=False, onesided=None, return_complex=None, align_to_window=None):
    """Short-time Fourier transform: (B?, L) -> (B?, n_fft // 2 + 1 or n_fft, frames), complex."""
    if center and align_to_window is not None:
        raise RuntimeError("stft align_to_window should only be set when center = false")
    x = _host(input)
    if center:
        if pad_mode not in _PAD_MODES:
            raise NotImplementedError(f"Unrecognised padding mode {pad_mode}")
        pad = n_fft // 2
        x = _pad(x, pad, pad_mode)
    hop = n_fft // 4 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length
    is_complex = isinstance(input, ComplexTensor) or isinstance(window, ComplexTensor)
    where = (f"stft(torch.{_TYPE_NAMES.get(_dname(input.dtype), '')}Tensor{list(x.shape)}, n_fft={n_fft}, "
             f"hop_length={hop}, win_length={win}, window={_describe(window)}, normalized={int(bool(normalized))}, "
             f"onesided={_opt(onesided)}, return_complex={_opt(return_complex)}, align_to_window="
             f"{_opt(align_to_window)}) : ")
    if return_complex is None and not is_complex:
        raise RuntimeError("stft requires the return_complex parameter be given for real inputs, and will further "
                           "require that return_complex=True in a future PyTorch release.")
    if not (input.is_floating_point() or isinstance(input, ComplexTensor)):
        raise NotImplementedError(where + "expected a tensor of floating point or complex values")
    if x.ndim not in (1, 2):
        raise RuntimeError(where + "expected a 1D or 2D tensor")
    length = x.shape[-1]
    if not 0 < n_fft <= length:
        raise RuntimeError(where + f"expected 0 < n_fft < {length}, but got n_fft={n_fft}")
    if hop <= 0:
        raise RuntimeError(where + f"expected hop_length > 0, but got hop_length={hop}")
    if not 0 < win <= n_fft:
        raise RuntimeError(where + f"expected 0 < win_length <= n_fft, but got win_length={win}")
    if window is not None and (window.dim() != 1 or window.shape[0] != win):
        raise RuntimeError(where + f"expected a 1D window tensor of size equal to win_length={win}, but got window "
                           f"with size {list(window.shape)}")
    if window is not None and window.device != input.device:
        raise RuntimeError(f"stft input and window must be on the same device but got self on {input.device} and "
                           f"window on {window.device}")
    if window is None:
        warnings.warn("A window was not provided. A rectangular window will be applied,which is known to cause "
                      "spectral leakage. Other windows such as torch.hann_window or torch.hamming_window are "
                      "recommended to reduce spectral leakage.To suppress this warning and use a rectangular window, "
                      "explicitly set `window=torch.ones(n_fft, device=<device>)`.", UserWarning, stacklevel=2)
    onesided = not is_complex if onesided is None else onesided
    if onesided and is_complex:
        raise RuntimeError("Cannot have onesided output if window or input is complex")
    w = None if window is None else _host(window)
    if w is not None and win < n_fft:
        left = (n_fft - win) // 2
        w = np.pad(w, (left, n_fft - win - left))
    elif w is None and win < n_fft:
        left = (n_fft - win) // 2
        w = np.zeros(n_fft, x.real.dtype)
        w[left:left + win] = 1
    if not center and align_to_window:
        x = _pad(x, (n_fft - win) // 2, pad_mode)
    norm = "ortho" if normalized else "backward"
    if x.dtype in (np.float32, np.float64) and (w is None or w.dtype in (np.float32, np.float64)):
        out = _real_stft(x, w, n_fft, hop, onesided, normalized)
    else:
        out = _complex_stft(x, w, n_fft, hop, onesided, norm)
    if input.device.type != "cpu":
        out = out.to(input.device)
    if return_complex is False:
        warnings.warn("stft with return_complex=False is deprecated. In a future pytorch release, stft will return "
                      "complex tensors for all inputs, and return_complex=False will raise an error.\n"
                      "Note: you can still call torch.view_as_real on the complex output to recover the old "
                      "return format.", UserWarning, stacklevel=2)
        return Tensor(out)
    return out


def _real_stft(x: np.ndarray, w, n_fft: int, hop: int, onesided: bool, normalized: bool) -> ComplexTensor:
    """A real signal's STFT in one Rust call (src/fft.rs: frames, window, batched r2c)."""
    dtype = x.dtype if w is None else np.result_type(x.dtype, w.dtype)
    xt = _C.from_numpy(np.ascontiguousarray(x[None] if x.ndim == 1 else x, dtype))
    wt = None if w is None else _C.from_numpy(np.ascontiguousarray(w, dtype))
    parts = _C.stft_frames(xt, n_fft, hop, wt, onesided, 1.0 / math.sqrt(n_fft) if normalized else 1.0)
    out = ComplexTensor(parts).transpose(-1, -2)  # (B, freq, frames): a transposed view, as torch's
    return out[0] if x.ndim == 1 else out


def _complex_stft(x: np.ndarray, w, n_fft: int, hop: int, onesided: bool, norm: str) -> ComplexTensor:
    """A complex signal's (or window's) STFT: pocketfft on a strided view of every frame."""
    frames = np.lib.stride_tricks.sliding_window_view(x, n_fft, axis=-1)[..., ::hop, :]
    if w is not None:
        frames = frames * w
    spec = np.fft.rfft(frames, axis=-1, norm=norm) if onesided else np.fft.fft(frames, axis=-1, norm=norm)
    return from_numpy_complex(spec).transpose(-1, -2)  # (B?, freq, frames), a transposed view as torch's


def _opt(v) -> str:
    return "None" if v is None else str(int(bool(v)))


def _pad(x: np.ndarray, pad: int, mode: str) -> np.ndarray:
    length = x.shape[-1]
    if mode == "reflect" and pad >= length:
        shape = [1] * (3 - x.ndim) + list(x.shape)
        raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding input dimension, but "
                           f"got: padding ({pad}, {pad}) at dimension {len(shape) - 1} of input {shape}")
    if mode == "circular" and pad > length:
        raise RuntimeError("Padding value causes wrapping around more than once.")
    if mode == "replicate" and length == 0 and pad:
        raise RuntimeError("padding size is expected to be 2")
    widths = [(0, 0)] * (x.ndim - 1) + [(pad, pad)]
    return np.pad(x, widths, mode=_PAD_MODES[mode])


def istft(input, n_fft, hop_length=None, win_length=None, window=None, center=True, normalized=False,
          onesided=None, length=None, return_complex=False):
    """The inverse of stft: overlap-add of the inverse transforms of the frames, divided by the summed
    squared window (least squares)."""
    hop = n_fft // 4 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length
    if not isinstance(input, ComplexTensor):
        raise TypeError("istft requires a complex-valued input tensor matching the output from stft with "
                        "return_complex=True.")
    where = (f"istft(CPU{_TYPE_NAMES[_dname(input.dtype)]}Type{list(input.shape)}, n_fft={n_fft}, hop_length={hop}, "
             f"win_length={win}, window={_describe(window)}, center={int(bool(center))}, normalized="
             f"{int(bool(normalized))}, onesided={_opt(onesided)}, length={length}, return_complex="
             f"{int(bool(return_complex))}) ")
    if input.numel() == 0:
        raise RuntimeError(where + ": input tensor cannot be empty")
    if input.dim() not in (2, 3):
        raise RuntimeError(where + f": expected a tensor with 2 or 3 dimensions of complex, but got {input.dim()}")
    n_frames, fft_size = input.shape[-1], input.shape[-2]
    onesided = fft_size != n_fft if onesided is None else onesided
    if onesided and n_fft // 2 + 1 != fft_size:
        raise RuntimeError(where + ": expected the frequency dimension (3rd to the last) of the input tensor to "
                           f"match n_fft / 2 + 1 when onesided=True, but got {fft_size}")
    if not onesided and n_fft != fft_size:
        raise RuntimeError(where + ": expected the frequency dimension (3rd to the last) of the input tensor to "
                           f"match n_fft when onesided=False, but got {fft_size}")
    if not 0 < hop <= win:
        raise RuntimeError(where + ": expected 0 < hop_length <= win_length")
    if not 0 < win <= n_fft:
        raise RuntimeError(where + ": expected 0 < win_length <= n_fft")
    if window is not None and (window.dim() != 1 or window.shape[0] != win):
        raise RuntimeError(where + ": expected a 1D window tensor of size equal to win_length="
                           f"{win}, but got window with size {list(window.shape)}")
    if return_complex and onesided:
        raise RuntimeError("Cannot have onesided output if window or input is complex")
    if not return_complex and isinstance(window, ComplexTensor):
        raise RuntimeError("Complex windows are incompatible with return_complex=False")
    if window is None:
        warnings.warn("A window was not provided. A rectangular window will be applied.Please provide the same "
                      "window used by stft to make the inversion lossless.To suppress this warning and use a "
                      "rectangular window, explicitly set `window=torch.ones(n_fft, device=<device>)`.", UserWarning,
                      stacklevel=2)
    spec = input.numpy()
    spec = spec[None] if spec.ndim == 2 else spec
    w = np.ones(win, spec.real.dtype) if window is None else _host(window)
    if win < n_fft:
        left = (n_fft - win) // 2
        w = np.pad(w, (left, n_fft - win - left))
    norm = "ortho" if normalized else "backward"
    frames = np.swapaxes(spec, 1, 2)  # (B, frames, freq)
    if return_complex:
        frames = np.fft.ifft(frames, n_fft, axis=-1, norm=norm)
    else:
        frames = np.fft.irfft(frames[..., :n_fft // 2 + 1], n_fft, axis=-1, norm=norm)
    frames = frames * w
    batch = frames.shape[0]
    total = n_fft + hop * (n_frames - 1)
    # overlap-add as one weighted bincount over every (frame, sample) position
    pos = (np.arange(n_frames)[:, None] * hop + np.arange(n_fft)[None, :]).reshape(-1)
    env = np.bincount(pos, weights=np.broadcast_to(np.abs(w) ** 2 if np.iscomplexobj(w) else w * w,
                                                   (n_frames, n_fft)).reshape(-1), minlength=total)
    offsets = (np.arange(batch)[:, None] * total + pos[None, :]).reshape(-1)
    y = _overlap_add(frames.reshape(-1), offsets, batch * total).reshape(batch, total)
    start = n_fft // 2 if center else 0
    end = start + length if length is not None else (total - n_fft // 2 if center else total)
    end = min(end, total)
    env = env[start:end]
    if env.size and np.abs(env).min() < 1e-11:
        raise RuntimeError(where + "window overlap add min: " + str(float(np.abs(env).min())))
    y = (y[:, start:end] / env).astype(frames.dtype)
    if length is not None and y.shape[1] < length:
        y = np.pad(y, ((0, 0), (0, length - y.shape[1])))
    y = y[0] if input.dim() == 2 else y
    out = from_numpy_complex(y) if return_complex else _C.from_numpy(np.ascontiguousarray(y))
    return out.to(input.device) if input.device.type != "cpu" else out


def _overlap_add(values: np.ndarray, positions: np.ndarray, size: int) -> np.ndarray:
    if np.iscomplexobj(values):
        return _overlap_add(values.real, positions, size) + 1j * _overlap_add(values.imag, positions, size)
    return np.bincount(positions, weights=values, minlength=size)
