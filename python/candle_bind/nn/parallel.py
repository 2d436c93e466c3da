"""torch.nn.parallel: one device here, so DataParallel runs the wrapped module as it is;
DistributedDataParallel needs torch.distributed, which candle_bind does not have."""

from __future__ import annotations

from .modules.module import Module

__all__ = ["DataParallel", "DistributedDataParallel"]


class DataParallel(Module):
    """`DataParallel(model)(x)` is `model(x)`; the wrapped model is `.module` (its state_dict keys
    gain the `module.` prefix, as torch's)."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        self.module = module
        self.device_ids, self.output_device, self.dim = device_ids or [], output_device, dim

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)


class DistributedDataParallel(Module):
    def __init__(self, module, *args, **kwargs):
        raise RuntimeError("DistributedDataParallel needs torch.distributed, which candle_bind does not support "
                           "(it runs in one process)")
