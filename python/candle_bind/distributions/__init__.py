"""torch.distributions: the distributions inference code samples from (Categorical, Bernoulli,
Normal), computed with candle_bind ops."""

from __future__ import annotations

import math

from . import constraints  # noqa: F401

__all__ = ["Distribution", "Categorical", "Bernoulli", "Normal", "constraints"]


class Distribution:
    def __init__(self, batch_shape=(), event_shape=(), validate_args=None):
        from .. import Size

        self._batch_shape, self._event_shape = Size(batch_shape), Size(event_shape)

    @property
    def batch_shape(self):
        return self._batch_shape

    @property
    def event_shape(self):
        return self._event_shape

    def _extended(self, sample_shape):
        return tuple(sample_shape) + tuple(self._batch_shape) + tuple(self._event_shape)


class Categorical(Distribution):
    def __init__(self, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            self.probs = probs / probs.sum(-1, keepdim=True)
            self.logits = self.probs.clamp(min=1.1754943508222875e-38).log()
        else:
            self.logits = logits - logits.logsumexp(-1, keepdim=True)
            self.probs = self.logits.softmax(-1)
        self._num_events = self.probs.shape[-1]
        super().__init__(self.probs.shape[:-1])

    def sample(self, sample_shape=()):
        n = math.prod(sample_shape)
        flat = self.probs.reshape(-1, self._num_events)
        draws = flat.multinomial(n, replacement=True).t()
        return draws.reshape(*sample_shape, *self.batch_shape)

    def log_prob(self, value):
        value = value.long().unsqueeze(-1)
        logits = self.logits.expand(*value.shape[:-1], self._num_events) if value.dim() > 1 else self.logits
        return logits.gather(-1, value).squeeze(-1)

    def entropy(self):
        from .. import finfo

        logits = self.logits.clamp(min=finfo(self.logits.dtype).min)
        return -(logits * self.probs).sum(-1)

    @property
    def mean(self):
        return self.probs.new_full(self.batch_shape, float("nan"))


class Bernoulli(Distribution):
    def __init__(self, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        self.probs = probs if probs is not None else logits.sigmoid()
        super().__init__(self.probs.shape)

    def sample(self, sample_shape=()):
        return self.probs.expand(*self._extended(sample_shape)).bernoulli()


class Normal(Distribution):
    def __init__(self, loc, scale, validate_args=None):
        from .. import Tensor, tensor

        self.loc = loc if isinstance(loc, Tensor) else tensor(float(loc))
        self.scale = scale if isinstance(scale, Tensor) else tensor(float(scale))
        super().__init__((self.loc + self.scale).shape)

    def sample(self, sample_shape=()):
        from .. import randn

        return self.loc + self.scale * randn(*self._extended(sample_shape), dtype=self.loc.dtype)

    rsample = sample

    def log_prob(self, value):
        var = self.scale**2
        return -((value - self.loc) ** 2) / (2 * var) - self.scale.log() - math.log(math.sqrt(2 * math.pi))
