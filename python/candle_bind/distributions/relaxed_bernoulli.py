"""torch.distributions.relaxed_bernoulli: the Concrete / Gumbel-sigmoid relaxation of a Bernoulli
(peft's Poly router samples module choices with it while training)."""

from __future__ import annotations

from . import Distribution

__all__ = ["RelaxedBernoulli", "LogitRelaxedBernoulli"]


def _clamp_probs(p):
    from .. import finfo

    eps = finfo(p.dtype).eps
    return p.clamp(min=eps, max=1 - eps)


class LogitRelaxedBernoulli(Distribution):
    """Samples are logits: (log u - log(1-u) + log p - log(1-p)) / temperature, u ~ U(0, 1)."""

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        from .. import Tensor, tensor

        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        self.temperature = temperature
        if probs is not None:
            self.probs = probs if isinstance(probs, Tensor) else tensor(float(probs))
            clamped = _clamp_probs(self.probs)
            self.logits = clamped.log() - (-clamped).log1p()
        else:
            self.logits = logits if isinstance(logits, Tensor) else tensor(float(logits))
            self.probs = self.logits.sigmoid()
        super().__init__(self.logits.shape)

    def rsample(self, sample_shape=()):
        from .. import rand

        u = _clamp_probs(rand(*self._extended(sample_shape), dtype=self.probs.dtype, device=self.probs.device))
        probs = _clamp_probs(self.probs)
        return (u.log() - (-u).log1p() + probs.log() - (-probs).log1p()) / self.temperature

    sample = rsample


class RelaxedBernoulli(LogitRelaxedBernoulli):
    """Samples in (0, 1): the sigmoid of LogitRelaxedBernoulli's."""

    def rsample(self, sample_shape=()):
        return super().rsample(sample_shape).sigmoid()

    sample = rsample
