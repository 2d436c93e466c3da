"""torch.distributions.wishart: importable (peft's MonteCLoRA imports it at load time); building
one says it is not served."""

from __future__ import annotations

from . import Distribution

__all__ = ["Wishart"]


class Wishart(Distribution):
    def __init__(self, *args, **kwargs):
        raise NotImplementedError("torch.distributions.Wishart is not supported by candle_bind yet (its sampler "
                                  "needs chi-squared draws); sample it with real torch")
