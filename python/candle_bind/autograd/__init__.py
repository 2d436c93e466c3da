"""torch.autograd: candle_bind has no autograd (inference only). Custom `Function`s run their
`forward`; the grad-mode context managers track the flag model code reads; asking for gradients
raises an error that says so."""

from __future__ import annotations

from . import function, grad_mode, graph  # noqa: F401
from .function import Function, once_differentiable  # noqa: F401
from .grad_mode import enable_grad, inference_mode, no_grad, set_grad_enabled  # noqa: F401

__all__ = ["Function", "once_differentiable", "no_grad", "enable_grad", "set_grad_enabled", "inference_mode",
           "grad", "backward", "Variable", "function", "grad_mode", "graph"]


def _no_autograd(*args, **kwargs):
    raise RuntimeError("candle_bind has no autograd: gradients cannot be computed (inference only)")


grad = backward = _no_autograd


def Variable(data, requires_grad=False, volatile=False):  # noqa: N802 - torch's name
    """The pre-0.4 wrapper: the tensor itself."""
    data.requires_grad = requires_grad
    return data
