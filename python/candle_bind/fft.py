"""torch.fft: discrete Fourier transforms.

Candle has no FFT: pocketfft does the transforms on the host, in the input's precision (float32 for
float32/complex64, as torch), through scipy.fft when it is installed (the same pocketfft, vectorised
across rows and run on candle_bind's thread count: 2-3x faster) and numpy.fft otherwise. Results come
back on the input's device; complex ones are `ComplexTensor`s (candle_bind/_complex.py).
"""

from __future__ import annotations

import numpy as np

from . import _C
from ._C import Tensor
from ._complex import ComplexTensor, dtype_title, from_numpy_complex, real_dtype

__all__ = ["fft", "ifft", "rfft", "irfft", "fft2", "ifft2", "rfft2", "irfft2", "fftn", "ifftn", "rfftn", "irfftn",
           "hfft", "ihfft", "hfft2", "ihfft2", "hfftn", "ihfftn", "fftfreq", "rfftfreq", "fftshift", "ifftshift"]

_TITLE = {True: "ComplexFloat", False: "ComplexDouble"}
_NORMS = (None, "backward", "ortho", "forward")
# hfft/ihfft are the inverse transforms run the other way round: their norm names swap.
_SWAPPED = {None: "forward", "backward": "forward", "ortho": "ortho", "forward": "backward"}


_BACKEND: list = []


def backend():
    """(module, extra keyword arguments) of the FFT library: scipy.fft if installed, else numpy.fft."""
    if not _BACKEND:
        try:
            import scipy.fft as sfft

            _BACKEND.append(sfft)
        except ImportError:
            _BACKEND.append(np.fft)
    lib = _BACKEND[0]
    return lib, ({} if lib is np.fft else {"workers": _C.get_num_threads()})


def _call(name: str):
    def run(a, n, axis, norm):
        lib, kw = backend()
        return getattr(lib, name)(a, n, axis, norm, **kw)
    return run


def _numpy_in(input, name: str, real_only: bool = False) -> np.ndarray:
    """The input as a numpy array of the precision the transform runs in."""
    if not isinstance(input, Tensor):
        raise TypeError(f"fft_{name}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    if isinstance(input, ComplexTensor):
        if real_only:
            raise TypeError(f"{name} expects a real input tensor, but got {_TITLE[input.dtype == _C.complex64]}")
        return input.numpy()
    if input.dtype in (_C.float16, _C.bfloat16):
        raise NotImplementedError(f"Unsupported dtype {'Half' if input.dtype == _C.float16 else 'BFloat16'}")
    if not input.is_floating_point():
        input = input.to(_C.get_default_dtype())  # integers and bools as torch: the default float dtype
    return input.cpu().numpy()


def _norm(norm):
    if norm not in _NORMS:
        raise RuntimeError(f'Invalid normalization mode: "{norm}"')
    return norm or "backward"


def _check_n(n):
    if n is not None and n < 1:
        raise RuntimeError(f"Invalid number of data points ({n}) specified")


def _axis(dim: int, ndim: int) -> int:
    if ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    if not -ndim <= dim < ndim:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}], but got {dim})")
    return dim % ndim


def _axes(a: np.ndarray, s, dim, name: str):
    """The dims (and sizes) an n-dimensional transform runs over, as torch resolves them."""
    if s is not None:
        s = [int(x) for x in s]
        if dim is None:
            if len(s) > a.ndim:
                raise RuntimeError(f"Got shape with {len(s)} values but input tensor only has {a.ndim} dimensions.")
            dim = list(range(a.ndim - len(s), a.ndim))
    if dim is None:
        dim = list(range(a.ndim))
    elif isinstance(dim, int):
        dim = [dim]
    axes = [_axis(d, a.ndim) for d in dim]
    if len(set(axes)) != len(axes):
        raise RuntimeError("FFT dims must be unique")
    if s is not None:
        if len(s) != len(axes):
            raise RuntimeError("When given, dim and shape arguments must have the same length")
        s = [a.shape[ax] if n == -1 else n for n, ax in zip(s, axes)]
        for n in s:
            _check_n(n)
    for i, ax in enumerate(axes):
        if (s is None or s[i] is None) and a.shape[ax] == 0:
            raise RuntimeError("Invalid number of data points (0) specified")
    return s, axes


def _complex_out(a: np.ndarray, like: Tensor, out=None, name=""):
    result = from_numpy_complex(a)
    if like.device.type != "cpu":
        result = result.to(like.device)
    return _write(result, out, name)


def _real_out(a: np.ndarray, like: Tensor, out=None, name=""):
    result = _C.from_numpy(np.ascontiguousarray(a))
    if like.device.type != "cpu":
        result = result.to(like.device)
    return _write(result, out, name)


def _write(result, out, name):
    if out is None:
        return result
    if isinstance(result, ComplexTensor) and not isinstance(out, ComplexTensor):
        raise RuntimeError(f"{name} expects a complex output tensor, but got {dtype_title(out.dtype)}")
    out.copy_(result)
    return out


def _one(name: str, run, real_out: bool = False, real_only: bool = False, swap: bool = False):
    """A 1-d transform (fft, ifft, rfft, irfft, hfft, ihfft) over numpy's function `run`."""
    def transform(input, n=None, dim=-1, norm=None, *, out=None):
        a = _numpy_in(input, name, real_only)
        _check_n(n)
        axis = _axis(dim, a.ndim)
        norm = _norm(norm)
        if n is None and a.shape[axis] == 0:
            raise RuntimeError("Invalid number of data points (0) specified")
        if real_out and n is None and a.shape[axis] == 1:
            raise RuntimeError("Invalid number of data points (0) specified")
        r = run(a, n, axis, norm)
        return (_real_out if real_out else _complex_out)(r, input, out, name)

    transform.__name__ = transform.__qualname__ = name
    transform.__doc__ = f"torch.fft.{name}(input, n=None, dim=-1, norm=None)"
    return transform


def _many(name: str, run, default_dim=None, real_out: bool = False, real_only: bool = False):
    """An n-dimensional transform (fftn, fft2, rfftn, ...) over numpy's function `run`."""
    def transform(input, s=None, dim=default_dim, norm=None, *, out=None):
        a = _numpy_in(input, name, real_only)
        s, axes = _axes(a, s, dim, name)
        norm = _norm(norm)
        if real_only and not axes or real_out and not axes:
            raise RuntimeError(f"{name} must transform at least one axis")
        if not axes:
            return _complex_out(a.astype(np.result_type(a.dtype, np.complex64)), input, out, name)
        if real_out and s is None and a.shape[axes[-1]] == 1:
            raise RuntimeError("Invalid number of data points (0) specified")
        r = run(a, s, axes, norm)
        return (_real_out if real_out else _complex_out)(r, input, out, name)

    transform.__name__ = transform.__qualname__ = name
    transform.__doc__ = f"torch.fft.{name}(input, s=None, dim={default_dim}, norm=None)"
    return transform


def _hfftn(a, s, axes, norm):
    # hfftn is irfftn of the conjugate with the norm names swapped (the last dim is the halved one).
    return _call("irfftn")(np.conj(a), s, axes, _SWAPPED[norm])


def _ihfftn(a, s, axes, norm):
    return np.conj(_call("rfftn")(a, s, axes, _SWAPPED[norm]))


fft = _one("fft", _call("fft"))
ifft = _one("ifft", _call("ifft"))
rfft = _one("rfft", _call("rfft"), real_only=True)
irfft = _one("irfft", _call("irfft"), real_out=True)
hfft = _one("hfft", _call("hfft"), real_out=True)
ihfft = _one("ihfft", _call("ihfft"), real_only=True)
fft2 = _many("fft2", _call("fftn"), (-2, -1))
ifft2 = _many("ifft2", _call("ifftn"), (-2, -1))
rfft2 = _many("rfft2", _call("rfftn"), (-2, -1), real_only=True)
irfft2 = _many("irfft2", _call("irfftn"), (-2, -1), real_out=True)
hfft2 = _many("hfft2", _hfftn, (-2, -1), real_out=True)
ihfft2 = _many("ihfft2", _ihfftn, (-2, -1), real_only=True)
fftn = _many("fftn", _call("fftn"))
ifftn = _many("ifftn", _call("ifftn"))
rfftn = _many("rfftn", _call("rfftn"), real_only=True)
irfftn = _many("irfftn", _call("irfftn"), real_out=True)
hfftn = _many("hfftn", _hfftn, real_out=True)
ihfftn = _many("ihfftn", _ihfftn, real_only=True)


def _freq_dtype(name: str, dtype):
    dtype = dtype or _C.get_default_dtype()
    if not dtype.is_floating_point and not dtype.is_complex:
        raise RuntimeError(f"{name} requires a floating point or complex dtype")
    if dtype.is_complex:  # torch's arange has no complex kernel
        raise NotImplementedError(f"\"arange_cpu\" not implemented for '{_TITLE[dtype == _C.complex64]}'")
    return dtype


def fftfreq(n, d=1.0, *, dtype=None, layout=None, device=None, requires_grad=False, out=None):
    """The sample frequencies of an n-point fft: [0, 1, ..., (n-1)//2, -(n//2), ..., -1] / (d * n)."""
    dtype = _freq_dtype("fftfreq", dtype)
    rd = real_dtype(dtype)
    # As torch: an arange in the output dtype, the upper half shifted down, times 1 / (n * d).
    k = np.arange(n, dtype=np.float64 if rd == _C.float64 else np.float32)
    k[(n + 1) // 2:] -= n
    k *= k.dtype.type(1.0 / (n * d))
    return _freq_out(k, dtype, device, out)


def rfftfreq(n, d=1.0, *, dtype=None, layout=None, device=None, requires_grad=False, out=None):
    """The sample frequencies of an n-point rfft: [0, 1, ..., n//2] / (d * n)."""
    dtype = _freq_dtype("rfftfreq", dtype)
    rd = real_dtype(dtype)
    k = np.arange(n // 2 + 1, dtype=np.float64 if rd == _C.float64 else np.float32)
    k *= k.dtype.type(1.0 / (n * d))
    return _freq_out(k, dtype, device, out)


def _freq_out(k, dtype, device, out):
    result = _C.from_numpy(k)
    if device is not None:
        result = result.to(device)
    return _write(result, out, "fftfreq")


def _shift(name: str, input, dim, up: bool):
    if dim is None:
        dim = list(range(input.dim()))
    elif isinstance(dim, int):
        dim = [dim]
    if not dim:
        raise RuntimeError("`shifts` required")
    n = input.dim()
    dims = [_axis(d, n) for d in dim]
    shifts = [input.shape[d] // 2 if up else (input.shape[d] + 1) // 2 for d in dims]
    return input.roll(shifts, dims)


def fftshift(input, dim=None):
    """Moves the zero-frequency term to the centre of each dim (all dims by default)."""
    return _shift("fftshift", input, dim, True)


def ifftshift(input, dim=None):
    """The inverse of fftshift."""
    return _shift("ifftshift", input, dim, False)


