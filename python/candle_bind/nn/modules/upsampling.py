"""Upsample, UpsamplingNearest2d, UpsamplingBilinear2d over F.interpolate."""

from __future__ import annotations

from .. import functional as F
from .module import Module

__all__ = ["Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d"]


class Upsample(Module):
    def __init__(self, size=None, scale_factor=None, mode: str = "nearest", align_corners=None, recompute_scale_factor=None):
        super().__init__()
        self.name = type(self).__name__
        self.size = size
        self.scale_factor = float(scale_factor) if isinstance(scale_factor, (int, float)) else (tuple(float(f) for f in scale_factor) if scale_factor else None)
        self.mode = mode
        self.align_corners = align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input):
        return F.interpolate(input, self.size, self.scale_factor, self.mode, self.align_corners,
                             recompute_scale_factor=self.recompute_scale_factor)

    def extra_repr(self) -> str:
        if self.scale_factor is not None:
            info = "scale_factor=" + repr(self.scale_factor)
        else:
            info = "size=" + repr(self.size)
        return info + ", mode=" + repr(self.mode)


class UpsamplingNearest2d(Upsample):
    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)
