"""torch.optim.lr_scheduler: learning-rate schedules over an optimizer's param groups (they only
change numbers; nothing trains here)."""

from __future__ import annotations

__all__ = ["LRScheduler", "LambdaLR", "ReduceLROnPlateau", "StepLR", "CosineAnnealingLR"]


class LRScheduler:
    def __init__(self, optimizer, last_epoch: int = -1):
        self.optimizer = optimizer
        self.base_lrs = [g.get("initial_lr", g["lr"]) for g in optimizer.param_groups]
        self.last_epoch = last_epoch
        self.step()

    def get_lr(self):
        return self.base_lrs

    def get_last_lr(self):
        return self._last_lr

    def step(self, epoch=None):
        self.last_epoch += 1
        self._last_lr = list(self.get_lr())
        for group, lr in zip(self.optimizer.param_groups, self._last_lr):
            group["lr"] = lr

    def state_dict(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict: dict) -> None:
        self.__dict__.update(state_dict)


_LRScheduler = LRScheduler


class LambdaLR(LRScheduler):
    def __init__(self, optimizer, lr_lambda, last_epoch: int = -1):
        n = len(optimizer.param_groups)
        self.lr_lambdas = list(lr_lambda) if isinstance(lr_lambda, (list, tuple)) else [lr_lambda] * n
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        return [base * f(self.last_epoch) for f, base in zip(self.lr_lambdas, self.base_lrs)]


class StepLR(LRScheduler):
    def __init__(self, optimizer, step_size, gamma=0.1, last_epoch: int = -1):
        self.step_size, self.gamma = step_size, gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        return [base * self.gamma ** (self.last_epoch // self.step_size) for base in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    def __init__(self, optimizer, T_max, eta_min=0.0, last_epoch: int = -1):  # noqa: N803 - torch's name
        self.T_max, self.eta_min = T_max, eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        import math

        return [self.eta_min + (base - self.eta_min) * (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
                for base in self.base_lrs]


class ReduceLROnPlateau:
    def __init__(self, optimizer, mode="min", factor=0.1, patience=10, **kwargs):
        self.optimizer, self.mode, self.factor, self.patience = optimizer, mode, factor, patience

    def step(self, metrics, epoch=None) -> None:
        return None

    def get_last_lr(self):
        return [g["lr"] for g in self.optimizer.param_groups]
