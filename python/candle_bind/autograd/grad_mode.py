"""torch.autograd.grad_mode: the grad-mode context managers (candle_bind's own)."""

from .. import enable_grad, inference_mode, no_grad, set_grad_enabled  # noqa: F401

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "inference_mode"]
