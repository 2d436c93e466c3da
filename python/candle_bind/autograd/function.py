"""torch.autograd.function: `Function.apply` runs the user's `forward` with a context object that
records what backward would need (nothing is ever differentiated here)."""

from __future__ import annotations

__all__ = ["Function", "FunctionCtx", "once_differentiable"]


class FunctionCtx:
    def save_for_backward(self, *tensors) -> None:
        self.saved_tensors = tensors

    def mark_dirty(self, *args) -> None:
        return None

    def mark_non_differentiable(self, *args) -> None:
        return None

    def set_materialize_grads(self, value: bool) -> None:
        return None


class Function:
    """Subclass with `@staticmethod forward(ctx, ...)` (or `forward(...)` + `setup_context`) and
    call `MyFunction.apply(...)`."""

    def __init__(self, *args, **kwargs):
        pass

    @classmethod
    def apply(cls, *args, **kwargs):
        ctx = FunctionCtx()
        if cls.setup_context is not Function.setup_context:  # forward without ctx (torch 2.0 style)
            out = cls.forward(*args, **kwargs)
            cls.setup_context(ctx, args, out)
            return out
        return cls.forward(ctx, *args, **kwargs)

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise RuntimeError("candle_bind has no autograd: backward never runs")

    @staticmethod
    def setup_context(ctx, inputs, output):
        return None


def once_differentiable(fn):
    return fn
