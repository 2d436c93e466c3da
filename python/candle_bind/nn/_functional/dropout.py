"""Dropout functionals: dropout, feature (channel) dropout 1d-3d, alpha dropout."""

from __future__ import annotations

from ... import _C
# Functionals call each other as F.x, looked up at call time as the one-file module's globals were:
# a monkeypatched nn.functional.x reaches these callers too.
from .. import functional as F
from ._utils import _maybe_inplace
from .activation import _SELU_ALPHA, _SELU_SCALE


def _check_p(p):
    if p != p:  # NaN: torch's native check
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {p}")
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def dropout(input, p=0.5, training=True, inplace=False):
    _check_p(p)
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return _maybe_inplace(input, input * 0.0, inplace)
    keep = _C.empty(*input.shape, dtype=input.dtype, device=input.device).bernoulli_(1 - p)
    return _maybe_inplace(input, input * keep / (1 - p), inplace)


def _feature_dropout(input, p, training, inplace, n, name):
    _check_p(p)
    if not training or p == 0.0:
        return input
    if input.dim() not in (n + 1, n + 2):
        raise RuntimeError(f"{name}: Expected {n + 1}D or {n + 2}D input, but got input of size: {list(input.shape)}")
    shape = list(input.shape[:-n]) + [1] * n
    keep = _C.empty(*shape, dtype=input.dtype, device=input.device).bernoulli_(1 - p)
    return _maybe_inplace(input, input * keep / (1 - p) if p < 1 else input * 0.0, inplace)


def dropout1d(input, p=0.5, training=True, inplace=False):
    return _feature_dropout(input, p, training, inplace, 1, "dropout1d")


def dropout2d(input, p=0.5, training=True, inplace=False):
    return _feature_dropout(input, p, training, inplace, 2, "dropout2d")


def dropout3d(input, p=0.5, training=True, inplace=False):
    return _feature_dropout(input, p, training, inplace, 3, "dropout3d")


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    _check_p(p)
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return _maybe_inplace(input, input * 0.0, inplace)
    alpha = -_SELU_ALPHA * _SELU_SCALE
    keep = _C.empty(*input.shape, dtype=input.dtype, device=input.device).bernoulli_(1 - p)
    a = ((1 - p) * (1 + p * alpha**2)) ** -0.5
    b = -a * alpha * p
    return _maybe_inplace(input, (input * keep + alpha * (1 - keep)) * a + b, inplace)


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    return F.alpha_dropout(input, p, training, inplace)
