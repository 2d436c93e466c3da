"""In-place samplers torch has on Tensor: cauchy_, exponential_, geometric_, log_normal_. Each transforms
uniforms (or normals) by the distribution's inverse CDF, torch's own formulas. With `generator=` the
uniforms come from that Generator's stream (torch's MT19937, _generator.py); torch's CPU kernels for
these four use vectorised transforms of their own, so the numbers follow the right distribution but are
not torch's, seed for seed. A family module.
"""

from __future__ import annotations

import math

from . import _C

_FLOATS = (_C.float16, _C.bfloat16, _C.float32, _C.float64)


def _dtype_name(dtype) -> str:
    return str(dtype).split(".")[-1].capitalize()


def _need_float(self, name: str):
    if self.dtype not in _FLOATS:
        raise NotImplementedError(f"\"{name}_cpu\" not implemented for '{_dtype_name(self.dtype)}'")


def _uniform(self, generator, name: str):
    """Uniforms in [0, 1) shaped as self, float64 for float64 tensors, else float32."""
    from ._generator import engine

    double = self.dtype == _C.float64
    eng = engine(generator, name)
    if eng is None:
        return _C.rand(tuple(self.shape), dtype=_C.float64 if double else _C.float32)
    import numpy as np

    return _C.from_numpy(np.ascontiguousarray(eng.uniform(self.numel(), double))).reshape(tuple(self.shape))


def _write(self, values, name: str):
    self._assign_result(values.to(self.dtype), name)
    return self


def exponential_(self, lambd=1.0, *, generator=None):
    _need_float(self, "exponential")
    if not lambd > 0.0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd}")
    u = _uniform(self, generator, "exponential_")
    return _write(self, -(-u).log1p() / lambd, "exponential_")


def cauchy_(self, median=0.0, sigma=1.0, *, generator=None):
    _need_float(self, "cauchy")
    if not sigma > 0.0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma}")
    u = _uniform(self, generator, "cauchy_")
    return _write(self, median + sigma * (math.pi * (u - 0.5)).tan(), "cauchy_")


def log_normal_(self, mean=1.0, std=2.0, *, generator=None):
    _need_float(self, "log_normal")
    if not std > 0.0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std}")
    from ._generator import randn

    z = randn(*self.shape, dtype=_C.float64 if self.dtype == _C.float64 else _C.float32, generator=generator)
    return _write(self, (z * std + mean).exp(), "log_normal_")


def geometric_(self, p, *, generator=None):
    """The number of Bernoulli(p) trials up to the first success: ceil(log(u) / log1p(-p))."""
    if self.dtype == _C.bool:
        raise NotImplementedError("\"geometric_cpu\" not implemented for 'Bool'")
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p}")
    u = _uniform(self, generator, "geometric_")
    return _write(self, (u.log() / math.log1p(-p)).ceil(), "geometric_")


METHODS = ("exponential_", "cauchy_", "log_normal_", "geometric_")


def _checked_normal_(native):
    def normal_(self, mean=0.0, std=1.0, *args, **kwargs):
        if isinstance(std, (int, float)) and std < 0:  # torch's check; the native op samples |std|
            raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
        return native(self, mean, std, *args, **kwargs)

    normal_.__name__ = normal_.__qualname__ = "normal_"
    normal_.__doc__ = native.__doc__
    return normal_


from ._tensor import _Checked  # noqa: E402

_C.Tensor.normal_ = _Checked(_checked_normal_(_C.Tensor.normal_), _C.Tensor.normal_)  # still the native one to stubs
