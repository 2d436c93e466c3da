"""ComplexTensor's math: abs/angle/conj, the transcendental functions (numpy's complex kernels on the
host memory, one pass over the whole array), reductions, comparisons and tests (the class is in
_complex.py)."""

from __future__ import annotations

import builtins

from . import _C
from ._C import Tensor
from ._complex import (ComplexTensor, _binary, _dims, _host_view, _join, _pairs, _adopt, complex_from_real, real_dtype,
                       unsupported)


class _Math:
    def abs(self):
        if self.device.type == "cpu":  # numpy's hypot over the host memory: one pass, any strides
            import numpy as np

            c = _host_view(self)
            out = np.empty(c.shape, c.real.dtype)
            return _C.from_numpy(np.abs(c, out=out))
        re, im = self.real, self.imag
        return (re * re + im * im).sqrt()

    __abs__ = absolute = abs

    def angle(self):
        from ._math_ops import atan2

        return atan2(self.imag, self.real)

    def conj(self):
        p = _pairs(self)
        return _join(p[..., 0], -p[..., 1])

    conj_physical = conj

    def resolve_conj(self):
        return self

    def resolve_neg(self):
        return self

    def exp(self):
        re, im = self.real, self.imag
        m = re.exp()
        return _join(m * im.cos(), m * im.sin())

    def reciprocal(self):
        return _binary("div", 1.0, self)

    def sgn(self):
        p = _pairs(self)
        a = self.abs().unsqueeze(-1)
        return ComplexTensor(_C.where(a == 0, _C.zeros_like(p), p / a))

    def isnan(self):
        return _pairs(self).isnan().any(-1)

    def isfinite(self):
        return _pairs(self).isfinite().all(-1)

    def isinf(self):
        return _pairs(self).isinf().any(-1)

    # ---- reductions ----
    def sum(self, dim=None, keepdim=False, *, dtype=None):
        p = _pairs(self)
        if dtype is not None:
            p = p.to(real_dtype(dtype))
        dims = _dims(dim, self.dim())
        return ComplexTensor(p.sum(dims, keepdim) if dims else p.clone())

    def mean(self, dim=None, keepdim=False, *, dtype=None):
        p = _pairs(self)
        if dtype is not None:
            p = p.to(real_dtype(dtype))
        dims = _dims(dim, self.dim())
        return ComplexTensor(p.mean(dims, keepdim) if dims else p.clone())


    def abs_(self):
        raise RuntimeError("In-place abs is not supported for complex tensors.")

    # ---- tests and logic (a complex number is true where either part is nonzero) ----
    def _nonzero_mask(self):
        return (_pairs(self) != 0).any(-1)

    def nonzero(self, *, as_tuple=False):
        return self._nonzero_mask().nonzero(as_tuple=as_tuple)

    def argwhere(self):
        return self._nonzero_mask().argwhere()

    def count_nonzero(self, dim=None):
        return self._nonzero_mask().count_nonzero(dim)

    def all(self, dim=None, keepdim=False):
        m = self._nonzero_mask()
        return m.all() if dim is None else m.all(dim, keepdim)

    def any(self, dim=None, keepdim=False):
        m = self._nonzero_mask()
        return m.any() if dim is None else m.any(dim, keepdim)

    def logical_not(self):
        return self._nonzero_mask().logical_not()

    def bool(self, memory_format=None):
        return self._nonzero_mask()

    def isclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
        other = other if isinstance(other, ComplexTensor) else complex_from_real(other, self.dtype)
        close = (self == other) | ((self - other).abs() <= atol + rtol * other.abs())
        finite = self.isfinite() & other.isfinite()
        close = close & (finite | (self == other))
        return close | (self.isnan() & other.isnan()) if equal_nan else close

    # ---- reductions with real results ----
    def var(self, dim=None, *, correction=None, keepdim=False, unbiased=None):
        if isinstance(dim, builtins.bool):  # torch's var(input, unbiased)
            dim, unbiased = None, dim
        if unbiased is not None:
            correction = int(unbiased)
        kw = {"correction": 1 if correction is None else correction, "keepdim": keepdim}
        return self.real.var(dim, **kw) + self.imag.var(dim, **kw)

    def std(self, dim=None, *, correction=None, keepdim=False, unbiased=None):
        if isinstance(dim, builtins.bool):
            dim, unbiased = None, dim
        return self.var(dim, correction=correction, keepdim=keepdim, unbiased=unbiased).sqrt()

    def norm(self, p="fro", dim=None, keepdim=False, dtype=None):
        if isinstance(p, str) and p != "fro":  # a matrix norm of |x| is not the complex matrix's (nuc: its SVD)
            raise NotImplementedError(f"norm(p={p!r}) is not supported for complex tensors by candle_bind yet")
        return self.abs().norm(p, dim, keepdim, dtype=None if dtype is None else real_dtype(dtype))

    # ---- products (numpy's complex kernels over the whole array) ----
    def prod(self, dim=None, keepdim=False, *, dtype=None):
        c = _to(self, dtype)
        if dim is None:
            return _np_apply(lambda a: a.prod(), c)
        return _np_apply(lambda a: a.prod(axis=_dims(dim, c.dim())[0] if c.dim() else None, keepdims=keepdim), c)

    def cumprod(self, dim, *, dtype=None):
        c = _to(self, dtype)
        return _np_apply(lambda a: a.cumprod(axis=_dims(dim, c.dim())[0]) if a.ndim else a.copy(), c)

    def __pow__(self, exponent):
        if type(exponent) in (int, float) and exponent in (0, 1, 2):  # the common ones, without the host trip
            return self * self if exponent == 2 else self.clone() if exponent == 1 else complex_from_real(_C.ones_like(self.real), self.dtype)
        return _np_binary("power", self, exponent)

    pow = __pow__

    def __rpow__(self, base):
        return _np_binary("power", base, self)

    def float_power(self, exponent):
        return _np_binary("power", self.to(_C.complex128), exponent)


def _to(x, dtype):
    return x if dtype is None else x.to(dtype)


def _np_apply(fn, x, *, rd=None):
    """fn over the numpy view of complex `x` (copied to the host when it is elsewhere), as a tensor of
    `x`'s precision on its device."""
    import numpy as np

    from ._complex import from_numpy_complex

    host = x if x.device.type == "cpu" else x.cpu()
    with np.errstate(all="ignore"):
        out = np.asarray(fn(_host_view(host)))
    parts = np.float64 if x.dtype == _C.complex128 else np.float32
    if out.dtype.kind == "c":
        t = from_numpy_complex(out, parts)
    else:
        t = _C.from_numpy(np.ascontiguousarray(out.astype(parts if out.dtype.kind == "f" else out.dtype)))
    return t if x.device.type == "cpu" else t.to(x.device)


def _np_unary(name: str, fn):
    def method(self):
        return _np_apply(fn, self)

    method.__name__ = method.__qualname__ = name
    return method


def _np_binary(ufunc: str, a, b):
    """A numpy ufunc of a complex tensor and another operand (tensor or number), in torch's result dtype."""
    import numpy as np

    from ._complex import _result_real_dtype, complex_dtype

    if not isinstance(a, (Tensor, complex, float, int)) or not isinstance(b, (Tensor, complex, float, int)):
        return NotImplemented
    cd = complex_dtype(_result_real_dtype(a, b))
    x = a if isinstance(a, ComplexTensor) else b
    arrays = []
    for v in (a, b):
        if isinstance(v, ComplexTensor):
            arrays.append(_host_view(v.to(cd).cpu()))
        elif isinstance(v, Tensor):
            arrays.append(v.cpu().numpy())
        else:
            arrays.append(v)
    ct = np.complex128 if cd == _C.complex128 else np.complex64
    with np.errstate(all="ignore"):
        out = getattr(np, ufunc)(np.asarray(arrays[0], ct), np.asarray(arrays[1], ct))
    return _np_apply(lambda _: out, x.to(cd))


def _sigmoid(a):
    import numpy as np

    return 1 / (1 + np.exp(-a))


def _rsqrt(a):
    import numpy as np

    return 1 / np.sqrt(a)


def _np_fn(name):
    def fn(a):
        import numpy as np

        return getattr(np, name)(a)

    return fn


_NUMPY = {"sin": "sin", "cos": "cos", "tan": "tan", "sinh": "sinh", "cosh": "cosh", "tanh": "tanh", "asin": "arcsin",
          "acos": "arccos", "atan": "arctan", "asinh": "arcsinh", "acosh": "arccosh", "atanh": "arctanh", "log": "log",
          "log2": "log2", "log10": "log10", "log1p": "log1p", "sqrt": "sqrt", "expm1": "expm1", "exp2": "exp2",
          "sinc": "sinc", "arcsin": "arcsin", "arccos": "arccos", "arctan": "arctan", "arcsinh": "arcsinh",
          "arccosh": "arccosh", "arctanh": "arctanh"}
for _n, _f in _NUMPY.items():
    setattr(_Math, _n, _np_unary(_n, _np_fn(_f)))
_Math.sigmoid = _np_unary("sigmoid", _sigmoid)
_Math.rsqrt = _np_unary("rsqrt", _rsqrt)

for _n in ("logical_and", "logical_or", "logical_xor"):
    def _logical(self, other, _n=_n):
        other = other._nonzero_mask() if isinstance(other, ComplexTensor) else other
        return getattr(self._nonzero_mask(), _n)(other)

    _logical.__name__ = _n
    setattr(_Math, _n, _logical)


_adopt(_Math)

