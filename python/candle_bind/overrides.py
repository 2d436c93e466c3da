"""torch.overrides: the names libraries subclass or test against at import (diffusers' layer-skip hook
subclasses `TorchFunctionMode`). candle_bind's functions do not dispatch through `__torch_function__`,
so a mode can be defined but not entered."""

from __future__ import annotations

__all__ = ["TorchFunctionMode", "get_default_nowrap_functions", "has_torch_function", "is_tensor_like"]


class TorchFunctionMode:
    """Subclassable; entering one raises: candle_bind calls do not go through `__torch_function__`."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        raise NotImplementedError

    def __enter__(self):
        raise NotImplementedError(f"torch.overrides.TorchFunctionMode ({type(self).__name__}) is not supported by "
                                  "candle_bind: its functions do not dispatch through __torch_function__")

    def __exit__(self, *exc):
        return False


def get_default_nowrap_functions() -> set:
    return set()


def has_torch_function(relevant_args) -> bool:
    return False


def is_tensor_like(inp) -> bool:
    from . import Tensor

    return isinstance(inp, Tensor) or hasattr(type(inp), "__torch_function__")
