"""torch.testing.assert_close with torch's default tolerances per dtype."""

from __future__ import annotations

import candle_bind

# (rtol, atol) torch uses when none are given.
_DEFAULT_TOLERANCES = {"float16": (1e-3, 1e-5), "bfloat16": (1.6e-2, 1e-5), "float32": (1.3e-6, 1e-5),
                       "float64": (1e-7, 1e-7)}


def _dtype_name(t) -> str:
    return repr(t.dtype).rsplit(".", 1)[-1]


def assert_close(actual, expected, *, allow_subclasses=True, rtol=None, atol=None, equal_nan=False,
                 check_device=True, check_dtype=True, check_layout=True, check_stride=False, msg=None):
    """Raises AssertionError unless shapes (and dtypes) agree and values are close."""
    if not isinstance(actual, candle_bind.Tensor) and not isinstance(expected, candle_bind.Tensor):
        actual, expected = candle_bind.tensor(actual), candle_bind.tensor(expected)
    elif not isinstance(actual, candle_bind.Tensor):
        actual = candle_bind.tensor(actual, dtype=expected.dtype)
    elif not isinstance(expected, candle_bind.Tensor):
        expected = candle_bind.tensor(expected, dtype=actual.dtype)
    if (rtol is None) != (atol is None):
        raise ValueError("Both 'rtol' and 'atol' must be either specified or omitted")
    if actual.shape != expected.shape:
        raise AssertionError(msg or f"The values for attribute 'shape' do not match: {actual.shape} != {expected.shape}.")
    if check_dtype and actual.dtype != expected.dtype:
        raise AssertionError(msg or f"The values for attribute 'dtype' do not match: {actual.dtype} != {expected.dtype}.")
    if rtol is None:
        rtol, atol = _DEFAULT_TOLERANCES.get(_dtype_name(actual), (0.0, 0.0))
    if actual.dtype != expected.dtype:
        actual, expected = actual.double(), expected.double()
    close = actual.isclose(expected, rtol=rtol, atol=atol, equal_nan=equal_nan)
    if not bool(close.all().item()):
        bad = int((~close).sum().item())
        diff = (actual.double() - expected.double()).abs()
        raise AssertionError(msg or (
            f"Tensor-likes are not close!\n\nMismatched elements: {bad} / {actual.numel()}\n"
            f"Greatest absolute difference: {diff.max().item()} (up to {atol} allowed)"))


__all__ = ["assert_close"]
