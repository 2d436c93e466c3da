"""torch.optim: candle_bind is for inference (no autograd), so optimizers exist for the code that
imports or builds them (training utilities that libraries import eagerly) and `step()` raises."""

from __future__ import annotations

from . import lr_scheduler  # noqa: F401

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "Adagrad", "RMSprop", "lr_scheduler"]


class Optimizer:
    def __init__(self, params, defaults: dict):
        self.defaults = dict(defaults)
        params = list(params)
        if params and not isinstance(params[0], dict):
            params = [{"params": params}]
        self.param_groups = [{**self.defaults, **group} for group in params]
        self.state: dict = {}

    def zero_grad(self, set_to_none: bool = True) -> None:
        return None

    def step(self, closure=None):
        raise RuntimeError("candle_bind has no autograd: optimizers cannot step (inference only)")

    def state_dict(self) -> dict:
        return {"state": self.state, "param_groups": [{k: v for k, v in g.items() if k != "params"}
                                                      for g in self.param_groups]}

    def load_state_dict(self, state_dict: dict) -> None:
        self.state = dict(state_dict.get("state", {}))

    def add_param_group(self, param_group: dict) -> None:
        self.param_groups.append({**self.defaults, **param_group})


def _optimizer(name: str, **defaults):
    def __init__(self, params, lr=defaults.get("lr", 1e-3), **kwargs):
        Optimizer.__init__(self, params, {**defaults, "lr": lr, **kwargs})

    return type(name, (Optimizer,), {"__init__": __init__, "__module__": __name__})


SGD = _optimizer("SGD", lr=1e-3, momentum=0)
Adam = _optimizer("Adam", lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0)
AdamW = _optimizer("AdamW", lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2)
Adagrad = _optimizer("Adagrad", lr=1e-2)
RMSprop = _optimizer("RMSprop", lr=1e-2)
