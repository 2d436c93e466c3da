"""torch.distributions.constraints: the constraint objects distributions validate with."""

from __future__ import annotations

__all__ = ["Constraint", "real", "positive", "nonnegative", "boolean", "simplex", "unit_interval",
           "positive_definite", "interval", "greater_than", "integer_interval"]


class Constraint:
    is_discrete = False
    event_dim = 0

    def check(self, value):
        raise NotImplementedError


class _Real(Constraint):
    def check(self, value):
        return value == value


class _GreaterThan(Constraint):
    def __init__(self, lower_bound, eq=False):
        self.lower_bound, self._eq = lower_bound, eq

    def check(self, value):
        return value >= self.lower_bound if self._eq else value > self.lower_bound


class _Interval(Constraint):
    def __init__(self, lower_bound, upper_bound):
        self.lower_bound, self.upper_bound = lower_bound, upper_bound

    def check(self, value):
        return (value >= self.lower_bound) & (value <= self.upper_bound)


class _Boolean(Constraint):
    is_discrete = True

    def check(self, value):
        return (value == 0) | (value == 1)


class _Simplex(Constraint):
    event_dim = 1

    def check(self, value):
        return (value >= 0).all(-1) & ((value.sum(-1) - 1).abs() < 1e-6)


class _PositiveDefinite(Constraint):
    """Symmetric with a successful Cholesky-free test: every leading minor positive (small matrices)."""

    event_dim = 2

    def check(self, value):
        import numpy as np

        from .. import tensor

        a = value.double().cpu().numpy()
        batch = a.reshape(-1, *a.shape[-2:])
        ok = [bool(np.allclose(m, m.T) and np.all(np.linalg.eigvalsh(m) > 0)) for m in batch]
        return tensor(ok).reshape(a.shape[:-2])


real = _Real()
positive = _GreaterThan(0.0)
nonnegative = _GreaterThan(0.0, eq=True)
boolean = _Boolean()
simplex = _Simplex()
unit_interval = _Interval(0.0, 1.0)
positive_definite = _PositiveDefinite()
interval = _Interval
greater_than = _GreaterThan
integer_interval = _Interval
