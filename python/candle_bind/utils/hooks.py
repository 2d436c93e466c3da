"""torch.utils.hooks: `RemovableHandle`, the handle `Module.register_*_hook` returns (accelerate
imports the module to build its own save/load-state hook handles)."""

from candle_bind.nn.modules.module import RemovableHandle

__all__ = ["RemovableHandle"]
