"""torch.signal.windows: scipy-style windows (symmetric by default, `sym=False` for the periodic form),
with torch's formulas over a linspace, evaluated on the host in float64 and cast to `dtype`."""

from __future__ import annotations

import math

import numpy as np

from .. import _C

__all__ = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine", "general_hamming",
           "hamming", "hann", "kaiser", "nuttall"]


def _out(name, M, dtype, layout, device, values):
    dtype = dtype or _C.get_default_dtype()
    if M < 0:
        raise ValueError(f"{name} requires non-negative window length, got M={M}")
    if layout is not None and repr(layout) != "torch.strided":
        raise ValueError(f"{name} is implemented for strided tensors only, got: {layout}")
    if dtype not in (_C.float32, _C.float64):
        raise ValueError(f"{name} expects float32 or float64 dtypes, got: {dtype}")
    w = values() if M > 0 else np.zeros(0)
    out = _C.from_numpy(np.ascontiguousarray(w, dtype=np.float64)).to(dtype)
    return out.to(device) if device is not None else out


def _line(start, step, M):
    """torch.linspace(start, start + (M - 1) * step, M)."""
    return np.linspace(start, start + (M - 1) * step, M)


def exponential(M, *, center=None, tau=1.0, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    if tau <= 0:
        raise ValueError(f"Tau must be positive, got: {tau} instead.")
    if sym and center is not None:
        raise ValueError("Center must be None for symmetric windows")
    c = (M if not sym and M > 1 else M - 1) / 2.0 if center is None else center
    return _out("exponential", M, dtype, layout, device, lambda: np.exp(-np.abs(_line(-c / tau, 1 / tau, M))))


def cosine(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    step = math.pi / (M + 1 if not sym and M > 1 else M) if M else 0.0
    return _out("cosine", M, dtype, layout, device, lambda: np.sin(_line(0.5 * step, step, M)))


def gaussian(M, *, std=1.0, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    if std <= 0:
        raise ValueError(f"Standard deviation must be positive, got: {std} instead.")
    start, step = -(M if not sym and M > 1 else M - 1) / 2.0, 1 / (std * math.sqrt(2))
    return _out("gaussian", M, dtype, layout, device, lambda: np.exp(-(_line(start * step, step, M) ** 2)))


def kaiser(M, *, beta=12.0, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    if beta < 0:
        raise ValueError(f"beta must be non-negative, got: {beta} instead.")

    def values():
        if M == 1:
            return np.ones(1)
        step = 2.0 * beta / (M if not sym else M - 1)
        k = np.linspace(-beta, min(beta, -beta + (M - 1) * step), M)
        return np.i0(np.sqrt(np.maximum(beta * beta - k ** 2, 0))) / np.i0(beta)
    return _out("kaiser", M, dtype, layout, device, values)


def general_cosine(M, *, a, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    def values():
        if M == 1:
            return np.ones(1)
        if not isinstance(a, (list, tuple)):
            raise TypeError("Coefficients must be a list/tuple")
        if not a:
            raise ValueError("Coefficients cannot be empty")
        k = _line(0.0, 2 * math.pi / (M if not sym else M - 1), M)
        return sum((-1) ** i * w * np.cos(i * k) for i, w in enumerate(a))
    return _out("general_cosine", M, dtype, layout, device, values)


def general_hamming(M, *, alpha=0.54, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    return general_cosine(M, a=[alpha, 1.0 - alpha], sym=sym, dtype=dtype, layout=layout, device=device)


def hamming(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    return general_hamming(M, sym=sym, dtype=dtype, layout=layout, device=device)


def hann(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    return general_hamming(M, alpha=0.5, sym=sym, dtype=dtype, layout=layout, device=device)


def blackman(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    return general_cosine(M, a=[0.42, 0.5, 0.08], sym=sym, dtype=dtype, layout=layout, device=device)


def nuttall(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    return general_cosine(M, a=[0.3635819, 0.4891775, 0.1365995, 0.0106411], sym=sym, dtype=dtype, layout=layout,
                          device=device)


def bartlett(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    def values():
        if M == 1:
            return np.ones(1)
        return 1 - np.abs(_line(-1.0, 2 / (M if not sym else M - 1), M))
    return _out("bartlett", M, dtype, layout, device, values)
