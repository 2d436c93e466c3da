"""torch.<op>_ functions (torch.relu_, torch.exp_, ...: the Tensor method called on the input), the in-place
Tensor aliases torch spells twice (arccosh_ for acosh_), and Tensor.fill_diagonal_.
A family module (see _OP_FAMILIES).
"""

from __future__ import annotations


def _calls_method(name: str):
    def forward(input, *args, **kwargs):
        return getattr(input, name)(*args, **kwargs)

    forward.__name__ = forward.__qualname__ = name
    return forward


_METHOD_FORMS = (
    "abs_", "acos_", "acosh_", "addmv_", "arccos_", "arccosh_", "arcsin_", "arcsinh_", "arctan_", "arctanh_",
    "as_strided_", "asin_", "asinh_", "atan_", "atanh_", "ceil_", "clamp_", "clamp_max_", "clamp_min_", "clip_",
    "conj_physical_", "cos_", "cosh_", "deg2rad_", "detach_", "erf_", "erfc_", "exp2_", "exp_", "expm1_", "fill_",
    "fix_", "floor_", "frac_", "gcd_", "i0_", "index_put_", "lcm_", "ldexp_", "log10_", "log1p_", "log2_", "log_",
    "logit_", "nan_to_num_", "neg_", "negative_", "rad2deg_", "reciprocal_", "resize_as_", "round_", "rsqrt_",
    "sigmoid_", "sin_", "sinc_", "sinh_", "sqrt_", "square_", "tan_", "tanh_", "trunc_", "xlogy_", "zero_",
)
globals().update({name: _calls_method(name) for name in _METHOD_FORMS})

_ALIASES = {"arccosh_": "acosh_", "arcsinh_": "asinh_", "arctanh_": "atanh_", "arctan2_": "atan2_"}
globals().update({alias: _calls_method(target) for alias, target in _ALIASES.items()})


def fill_diagonal_(self, fill_value, wrap=False):
    """torch's diagonal fill: (i, i, ..., i); a 2-D matrix taller than wide restarts below with `wrap`."""
    from . import arange

    if self.dim() < 2:
        raise RuntimeError("dimensions must larger than 1")
    if self.dim() > 2 and len(set(self.shape)) != 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    if self.numel() == 0:
        return self
    height, width = self.shape[0], self.shape[1]
    if self.dim() == 2 and wrap and height > width + 1:
        # every (width + 1)-th element of the row-major order, as torch's strided view of the storage
        flat = arange(0, (self.numel() + width) // (width + 1), device=self.device) * (width + 1)
        index = (flat // width, flat % width)
    else:
        index = (arange(min(height, width), device=self.device),) * self.dim()
    self[index] = fill_value
    return self


FUNCTIONS = _METHOD_FORMS
METHODS = tuple(_ALIASES) + ("fill_diagonal_",)
