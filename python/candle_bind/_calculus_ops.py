"""Numerical calculus and norms over existing tensor ops: trapezoid/trapz, cumulative_trapezoid, gradient,
renorm, Tensor.dist. Written from torch's aten (Integration.cpp, ReduceOps.cpp's gradient, Normalization's
renorm) so the arithmetic, and so the rounding and result dtypes, are torch's. A family module.
"""

from __future__ import annotations

import builtins
import numbers

from . import _C
from ._C import Tensor
from ._blas_ops import dist  # noqa: F401 - Tensor.dist


def _wrap(dim: int, ndim: int) -> int:
    n = builtins.max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    return dim % n


def _slice(t, dim: int, start: int, stop=None):
    """t[start:stop] along dim, Python slice rules (negative bounds count from the end)."""
    n = t.shape[dim]
    s, e, _ = slice(start, stop).indices(n)
    return t.narrow(dim, s, builtins.max(e - s, 0))


def _zeros_except(y, dim: int):
    shape = list(y.shape)
    del shape[dim]
    return _C.zeros(shape, dtype=y.dtype)


def _x_diff(y, x, dim: int, name: str):
    """dx of torch's trapezoid: x 1-D along dim, or broadcast against y after the difference."""
    if x.dim() == 1:
        if x.shape[0] != y.shape[dim]:
            raise RuntimeError(f"{name}: There must be one `x` value for each sample point")
        shape = [1] * y.dim()
        shape[dim] = x.shape[0]
        x = x.reshape(shape)
    elif x.dim() < y.dim():
        x = x.reshape([1] * (y.dim() - x.dim()) + list(x.shape))
    return _slice(x, dim, 1) - _slice(x, dim, 0, -1)


def trapezoid(y, x=None, *, dx=None, dim=-1):
    """The trapezoidal rule along dim, with sample points x or a constant spacing dx (default 1)."""
    d = _wrap(dim, y.dim())
    if x is not None and not isinstance(x, Tensor):  # trapezoid(y, 0.5): a positional spacing
        x, dx = None, x
    if y.shape[d] == 0:
        return _zeros_except(y, d)
    if y.dtype == _C.bool or (x is not None and x.dtype == _C.bool):
        raise NotImplementedError("trapezoid: received a bool input for `x` or `y`, but bool is not supported")
    if x is not None:
        step = _x_diff(y, x, d, "trapezoid")
        return (step * (_slice(y, d, 1) + _slice(y, d, 0, -1))).sum(d) / 2.0
    dx = 1 if dx is None else dx
    if isinstance(dx, (builtins.bool, complex)):
        raise RuntimeError("trapezoid: Currently, we only support dx as a real number.")
    return (y.sum(d) - (y.select(d, 0) + y.select(d, -1)) * 0.5) * float(dx)


def trapz(y, x=None, *, dx=None, dim=-1):
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """The running trapezoidal integral along dim (one fewer element than y there)."""
    d = _wrap(dim, y.dim())
    if x is not None and not isinstance(x, Tensor):
        x, dx = None, x
    if y.dtype == _C.bool or (x is not None and x.dtype == _C.bool):
        raise NotImplementedError("cumulative_trapezoid: received a bool input for `x` or `y`, but bool is not supported")
    if x is not None:
        step = _x_diff(y, x, d, "cumulative_trapezoid")
        return ((step * (_slice(y, d, 0, -1) + _slice(y, d, 1))) / 2.0).cumsum(d)
    dx = 1 if dx is None else dx
    if isinstance(dx, (builtins.bool, complex)):
        raise RuntimeError("cumulative_trapezoid: Currently, we only support dx as a real number.")
    return ((float(dx) / 2.0) * (_slice(y, d, 0, -1) + _slice(y, d, 1))).cumsum(d)


# ------------------------------------------------------------------------------------------- gradient


def gradient(input, *, spacing=1, dim=None, edge_order=1):
    """Central differences inside, one-sided (first or second order) at the edges; one tensor per dim."""
    if spacing is None:
        spacing = 1
    if isinstance(dim, int):
        dims = [dim]
    elif dim is None:
        dims = None
    else:
        dims = list(dim)
    scalar = isinstance(spacing, (numbers.Number, Tensor)) and not (isinstance(spacing, Tensor) and spacing.dim() > 0)
    if isinstance(spacing, Tensor) and spacing.dim() > 0:
        spacing = [spacing]
    if scalar:
        spacing = [spacing.item() if isinstance(spacing, Tensor) else spacing] * (input.dim() if dims is None else len(dims))
    else:
        spacing = list(spacing)
    if input.dtype == _C.uint8:
        raise NotImplementedError("torch.gradient does not support uint8 input.")
    if dims is None and not scalar and len(spacing) != input.dim():
        raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar, or a list of length equal "
                           f"to 'self.dim() = {input.dim()}', since dim argument was not given, but got a list of "
                           f"length {len(spacing)}")
    if dims is not None and len(spacing) != len(dims):
        raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar or it's spacing and dim "
                           f"arguments to have the same length, but got a spacing argument of length {len(spacing)} "
                           f"and a dim argument of length {len(dims)}.")
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    if dims is None:
        dims = list(range(input.dim()))
    wrapped = [_wrap(d, input.dim()) for d in dims]
    if len(set(wrapped)) != len(wrapped):
        raise RuntimeError(f"dim {wrapped[0]} appears multiple times in the list of dims")
    for d in wrapped:
        if input.shape[d] < edge_order + 1:
            raise RuntimeError("torch.gradient expected each dimension size to be at least edge_order+1")
    out = []
    for d, h in zip(wrapped, spacing):
        if isinstance(h, Tensor) and h.dim() == 0:
            h = h.item()
        out.append(_grad_coords(input, h, d, edge_order) if isinstance(h, Tensor) else
                   _grad_uniform(input, h, d, edge_order))
    return tuple(out)


def _grad_uniform(f, h, d: int, edge_order: int):
    center = (_slice(f, d, 2) - _slice(f, d, 0, -2)) / h
    if edge_order == 1:
        first = (_slice(f, d, 1, 2) - _slice(f, d, 0, 1)) / h
        last = (_slice(f, d, -1) - _slice(f, d, -2, -1)) / h
    else:
        first = (_slice(f, d, 0, 1) * -1.5 + _slice(f, d, 1, 2) * 2.0 - _slice(f, d, 2, 3) * 0.5) / h
        last = (_slice(f, d, -3, -2) * 0.5 + _slice(f, d, -2, -1) * -2.0 + _slice(f, d, -1) * 1.5) / h
    return _C.cat([first, center / 2, last], d)


def _grad_coords(f, x, d: int, edge_order: int):
    if x.dim() != 1:
        raise RuntimeError(f"torch.gradient expected each element of spacing to have one dimension, but got an "
                           f"element with {x.dim()} dimensions!")
    shape = [1] * f.dim()
    shape[d] = -1
    h = x[1:] - x[:-1]
    h1, h2 = h[:-1], h[1:]
    a = (-h2 / (h1 * (h1 + h2))).reshape(shape)
    b = ((h2 - h1) / (h1 * h2)).reshape(shape)
    c = (h1 / (h2 * (h1 + h2))).reshape(shape)
    center = a * _slice(f, d, 0, -2) + b * _slice(f, d, 1, -1) + c * _slice(f, d, 2)
    if edge_order == 1:
        first = (_slice(f, d, 1, 2) - _slice(f, d, 0, 1)) / h[0]
        last = (_slice(f, d, -1) - _slice(f, d, -2, -1)) / h[-1]
    else:
        a = -(2.0 * h[0] + h[1]) / (h[0] * (h[0] + h[1]))
        b = (h[0] + h[1]) / (h[0] * h[1])
        c = (-h[0]) / (h[1] * (h[0] + h[1]))
        first = a * _slice(f, d, 0, 1) + b * _slice(f, d, 1, 2) + c * _slice(f, d, 2, 3)
        a = h[-1] / (h[-2] * (h[-1] + h[-2]))
        b = -(h[-1] + h[-2]) / (h[-1] * h[-2])
        c = (2 * h[-1] + h[-2]) / (h[-1] * (h[-1] + h[-2]))
        last = a * _slice(f, d, -3, -2) + b * _slice(f, d, -2, -1) + c * _slice(f, d, -1)
    return _C.cat([first, center, last], d)


# --------------------------------------------------------------------------------------------- norms


def renorm(input, p, dim, maxnorm):
    """Each slice along dim rescaled so its p-norm is at most maxnorm (torch's renorm)."""
    if not input.is_floating_point():
        raise NotImplementedError(f"linalg.vector_norm: Expected a floating point or complex tensor as input. Got "
                                  f"{str(input.dtype).split('.')[-1].capitalize()}")
    if float(p) <= 0:
        raise RuntimeError(f"renorm: non-positive-norm not supported")
    if float(maxnorm) < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    if input.dim() <= 1:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {input.dim()} dimensions")
    d = _wrap(dim, input.dim())
    others = [i for i in range(input.dim()) if i != d]
    x = input.float() if input.dtype in (_C.float16, _C.bfloat16) else input  # torch's norm accumulates in float
    norm = x.norm(float(p), others, keepdim=True)
    factor = _C.where(norm > maxnorm, maxnorm / (norm + 1e-7), _C.ones_like(norm))
    return input * factor.to(input.dtype)


FUNCTIONS = ("trapezoid", "trapz", "cumulative_trapezoid", "gradient", "renorm")
METHODS = ("renorm", "dist")
INPLACE = ("renorm",)
