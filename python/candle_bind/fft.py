"""torch.fft: discrete Fourier transforms.

Candle has no FFT: the transforms are our Rust kernels (src/fft.rs: rustfft and realfft, in the input's
precision, float32 for float32/complex64 as torch), 1-D passes along one dim each, batched over the
other dims and split over candle_bind's threads. An n-dimensional transform is one pass per dim. Complex
tensors go in and out as their interleaved parts (`ComplexTensor`, candle_bind/_complex.py). Tensors on
another device are transformed on the host and moved back.
"""

from __future__ import annotations

import math

from . import _C
from ._C import Tensor
from ._complex import ComplexTensor, dtype_title, real_dtype

__all__ = ["fft", "ifft", "rfft", "irfft", "fft2", "ifft2", "rfft2", "irfft2", "fftn", "ifftn", "rfftn", "irfftn",
           "hfft", "ihfft", "hfft2", "ihfft2", "hfftn", "ihfftn", "fftfreq", "rfftfreq", "fftshift", "ifftshift"]

_TITLE = {True: "ComplexFloat", False: "ComplexDouble"}
_NORMS = (None, "backward", "ortho", "forward")
# hfft/ihfft are the inverse transforms run the other way round: their norm names swap.
_SWAPPED = {None: "forward", "backward": "forward", "ortho": "ortho", "forward": "backward"}


def _operand(input, name: str, real_only: bool = False):
    """(host tensor, complex?, shape): a complex input as its interleaved parts, a real one as a float
    tensor of the precision the transform runs in."""
    if not isinstance(input, Tensor):
        raise TypeError(f"fft_{name}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    if isinstance(input, ComplexTensor):
        if real_only:
            raise TypeError(f"{name} expects a real input tensor, but got {_TITLE[input.dtype == _C.complex64]}")
        x = Tensor(input)
        return (x if x.device.type == "cpu" else x.cpu()), True, tuple(input.shape)
    if input.dtype in (_C.float16, _C.bfloat16):
        raise NotImplementedError(f"Unsupported dtype {'Half' if input.dtype == _C.float16 else 'BFloat16'}")
    x = input if input.device.type == "cpu" else input.cpu()
    if not x.is_floating_point():
        x = x.to(_C.get_default_dtype())  # integers and bools as torch: the default float dtype
    return x, False, tuple(input.shape)


def _as_complex(x: Tensor) -> Tensor:
    """The interleaved parts of a real tensor taken as complex (zero imaginary parts)."""
    return _C.stack([x, _C.zeros_like(x)], -1)


def _norm(norm):
    if norm not in _NORMS:
        raise RuntimeError(f'Invalid normalization mode: "{norm}"')
    return norm or "backward"


def _scale(norm: str, n: int, inverse: bool) -> float:
    """The factor of a transform over `n` points: 1/n on the normalised side, 1/sqrt(n) both ways."""
    if norm == "ortho":
        return 1.0 / math.sqrt(n) if n else 1.0
    return 1.0 / n if n and (norm == "backward") == inverse else 1.0


def _check_n(n):
    if n is not None and n < 1:
        raise RuntimeError(f"Invalid number of data points ({n}) specified")


def _axis(dim: int, ndim: int) -> int:
    if ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    if not -ndim <= dim < ndim:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}], but got {dim})")
    return dim % ndim


def _axes(shape, s, dim):
    """The dims (and sizes) an n-dimensional transform runs over, as torch resolves them."""
    ndim = len(shape)
    if s is not None:
        s = [int(x) for x in s]
        if dim is None:
            if len(s) > ndim:
                raise RuntimeError(f"Got shape with {len(s)} values but input tensor only has {ndim} dimensions.")
            dim = list(range(ndim - len(s), ndim))
    if dim is None:
        dim = list(range(ndim))
    elif isinstance(dim, int):
        dim = [dim]
    axes = [_axis(d, ndim) for d in dim]
    if len(set(axes)) != len(axes):
        raise RuntimeError("FFT dims must be unique")
    if s is not None:
        if len(s) != len(axes):
            raise RuntimeError("When given, dim and shape arguments must have the same length")
        s = [shape[ax] if n == -1 else n for n, ax in zip(s, axes)]
        for n in s:
            _check_n(n)
    for i, ax in enumerate(axes):
        if (s is None or s[i] is None) and shape[ax] == 0:
            raise RuntimeError("Invalid number of data points (0) specified")
    return s, axes


def _finish(x: Tensor, is_complex: bool, like: Tensor, out, name: str):
    result = ComplexTensor(x) if is_complex else x
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


def _passes(x: Tensor, is_complex: bool, axes, sizes, kind: str, norm: str, swap: bool = False):
    """The transform `kind` over `axes` (output sizes `sizes`, None for the default) as 1-D passes.

    kind: "fft"/"ifft" (complex out), "rfft" (one-sided, real in), "irfft" (real out, last axis halved),
    "hfft" (irfft of the conjugate), "ihfft" (conjugate of rfft). Returns (result, is_complex)."""
    if swap:
        norm = _SWAPPED[norm]
    inverse = kind in ("ifft", "irfft", "hfft")
    lengths = []
    for i, ax in enumerate(axes):
        n = sizes[i] if sizes is not None and sizes[i] is not None else None
        if n is None:
            m = x.shape[ax]
            n = 2 * (m - 1) if kind in ("irfft", "hfft") and i == len(axes) - 1 else m
        lengths.append(n)
    scale = _scale(norm, math.prod(lengths), inverse)
    conj = kind in ("hfft", "ihfft")
    # A float32 hfftn done pass by pass in float32 carries ~2x the round-off of torch's (MKL's) on small
    # outputs (1.5e-5 off on OpInfo's samples); it is no model hot path: float64 inside, float32 out.
    narrow = kind == "hfft" and len(axes) > 1 and x.dtype == _C.float32
    if narrow:
        x = x.to(_C.float64)
    order = list(range(len(axes)))
    if kind in ("rfft", "ihfft") or kind in ("fft", "ifft") and not is_complex:
        order = order[-1:] + order[:-1]  # the real-input pass (over the last dim) first
    for j, i in enumerate(order):
        ax, n = axes[i], lengths[i]
        s = scale if j == len(order) - 1 else 1.0
        c = conj and j == 0
        if not is_complex:
            if kind in ("irfft", "hfft"):
                x, is_complex = _as_complex(x), True
            else:
                # rfft/ihfft: one-sided (ihfft conjugated: then the other passes run backward, as
                # conj(F(y)) = B(conj(y))); fft/ifft of a real input: both halves (ifft's = conj of fft's)
                onesided = kind in ("rfft", "ihfft")
                x = _C.fft_r2c(x, ax, n, onesided, s, c or kind == "ifft")
                is_complex = True
                if kind == "ihfft":
                    inverse = True
                continue
        if kind in ("irfft", "hfft") and j == len(order) - 1:
            x, is_complex = _C.fft_c2r(x, ax, n, s, c), False
        else:
            x = _C.fft_c2c(x, ax, n, inverse, s, c)
    return (x.to(_C.float32) if narrow else x), is_complex


def _one(name: str, kind: str, real_out: bool = False, real_only: bool = False, swap: bool = False):
    """A 1-d transform (fft, ifft, rfft, irfft, hfft, ihfft)."""
    def transform(input, n=None, dim=-1, norm=None, *, out=None):
        x, is_complex, shape = _operand(input, name, real_only)
        _check_n(n)
        axis = _axis(dim, len(shape))
        norm = _norm(norm)
        if n is None and shape[axis] == 0:
            raise RuntimeError("Invalid number of data points (0) specified")
        if real_out and n is None and shape[axis] == 1:
            raise RuntimeError("Invalid number of data points (0) specified")
        r, c = _passes(x, is_complex, [axis], [n], kind, norm, swap)
        return _finish(r, c, input, out, name)

    transform.__name__ = transform.__qualname__ = name
    transform.__doc__ = f"torch.fft.{name}(input, n=None, dim=-1, norm=None)"
    return transform


def _many(name: str, kind: str, default_dim=None, real_out: bool = False, real_only: bool = False,
          swap: bool = False):
    """An n-dimensional transform (fftn, fft2, rfftn, ...)."""
    def transform(input, s=None, dim=default_dim, norm=None, *, out=None):
        x, is_complex, shape = _operand(input, name, real_only)
        s, axes = _axes(shape, s, dim)
        norm = _norm(norm)
        if real_only and not axes or real_out and not axes:
            raise RuntimeError(f"{name} must transform at least one axis")
        if not axes:
            return _finish(x.clone() if is_complex else _as_complex(x), True, input, out, name)
        if real_out and s is None and shape[axes[-1]] == 1:
            raise RuntimeError("Invalid number of data points (0) specified")
        r, c = _passes(x, is_complex, axes, s, kind, norm, swap)
        return _finish(r, c, input, out, name)

    transform.__name__ = transform.__qualname__ = name
    transform.__doc__ = f"torch.fft.{name}(input, s=None, dim={default_dim}, norm=None)"
    return transform


fft = _one("fft", "fft")
ifft = _one("ifft", "ifft")
rfft = _one("rfft", "rfft", real_only=True)
irfft = _one("irfft", "irfft", real_out=True)
hfft = _one("hfft", "hfft", real_out=True, swap=True)
ihfft = _one("ihfft", "ihfft", real_only=True, swap=True)
fft2 = _many("fft2", "fft", (-2, -1))
ifft2 = _many("ifft2", "ifft", (-2, -1))
rfft2 = _many("rfft2", "rfft", (-2, -1), real_only=True)
irfft2 = _many("irfft2", "irfft", (-2, -1), real_out=True)
hfft2 = _many("hfft2", "hfft", (-2, -1), real_out=True, swap=True)
ihfft2 = _many("ihfft2", "ihfft", (-2, -1), real_only=True, swap=True)
fftn = _many("fftn", "fft")
ifftn = _many("ifftn", "ifft")
rfftn = _many("rfftn", "rfft", real_only=True)
irfftn = _many("irfftn", "irfft", real_out=True)
hfftn = _many("hfftn", "hfft", real_out=True, swap=True)
ihfftn = _many("ihfftn", "ihfft", real_only=True, swap=True)


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
    import numpy as np

    # As torch: an arange in the output dtype, the upper half shifted down, times 1 / (n * d).
    k = np.arange(n, dtype=np.float64 if rd == _C.float64 else np.float32)
    k[(n + 1) // 2:] -= n
    k *= k.dtype.type(1.0 / (n * d))
    return _freq_out(k, dtype, device, out)


def rfftfreq(n, d=1.0, *, dtype=None, layout=None, device=None, requires_grad=False, out=None):
    """The sample frequencies of an n-point rfft: [0, 1, ..., n//2] / (d * n)."""
    dtype = _freq_dtype("rfftfreq", dtype)
    rd = real_dtype(dtype)
    import numpy as np

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


