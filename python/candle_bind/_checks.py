"""torch's assertion helpers and symbolic-shape shims that model code calls on every forward
(`torch._assert` in torchvision's ViT, `torch._check` in its meta kernels, `torch.sym_int`): shapes are
plain ints here, so the symbolic forms are the Python builtins."""

from __future__ import annotations

import builtins
import math

__all__ = ["_assert", "_check", "_check_index", "_check_value", "_check_type", "_check_not_implemented",
           "_check_with", "_check_tensor_all", "_check_tensor_all_with", "_check_is_size", "sym_int", "sym_float", "sym_max", "sym_min", "sym_not", "sym_sqrt",
           "SymInt", "SymFloat", "SymBool", "_shape_as_tensor", "scalar_tensor"]

_DEFAULT = "Expected cond to be True, but got False. (Could this error message be improved? If so, please report " \
           "an enhancement request to PyTorch.)"


def _assert(condition, message):
    """torch._assert: Python's assert, as a function (so it also runs where `assert` is compiled out)."""
    assert condition, message


def _check_with(error_type, cond, message=None):
    if not builtins.bool(cond):
        raise error_type(message() if callable(message) else (message or _DEFAULT))


def _check(cond, message=None):
    _check_with(RuntimeError, cond, message)


def _check_tensor_all_with(error_type, cond, message=None):
    """torch._check_tensor_all_with: `cond` is a bool tensor, every element must be True."""
    _check_with(error_type, cond.all().item(), message)


def _check_tensor_all(cond, message=None):
    _check_tensor_all_with(RuntimeError, cond, message)


def _check_index(cond, message=None):
    _check_with(IndexError, cond, message)


def _check_value(cond, message=None):
    _check_with(ValueError, cond, message)


def _check_type(cond, message=None):
    _check_with(TypeError, cond, message)


def _check_not_implemented(cond, message=None):
    _check_with(NotImplementedError, cond, message)


def _check_is_size(i, message=None, *, max=None):  # noqa: A002 - torch's name
    _check(i >= 0, message)
    if max is not None:
        _check(i <= max, message)


SymInt, SymFloat, SymBool = builtins.int, builtins.float, builtins.bool
sym_int, sym_float, sym_max, sym_min = builtins.int, builtins.float, builtins.max, builtins.min


def sym_not(a):
    return not a


def sym_sqrt(a):
    return math.sqrt(a)


def _shape_as_tensor(input):
    from . import _C

    return _C.tensor(list(input.shape), dtype=_C.int64)


def scalar_tensor(s, *, dtype=None, device=None, layout=None, requires_grad=False, pin_memory=False):
    """A 0-d tensor of `s`, float32 (the default dtype) unless asked otherwise, as torch's."""
    from . import _C

    return _C.tensor(s, dtype=dtype or _C.get_default_dtype(), device=device)
