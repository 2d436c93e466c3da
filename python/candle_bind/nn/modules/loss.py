"""Loss modules over `nn.functional`'s losses (evaluation loops call them)."""

from __future__ import annotations

from .. import functional as F
from .module import Module

__all__ = ["BCELoss", "BCEWithLogitsLoss", "CrossEntropyLoss", "HuberLoss", "KLDivLoss", "L1Loss", "MSELoss", "NLLLoss",
           "SmoothL1Loss"]


class _Loss(Module):
    def __init__(self, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__()
        self.reduction = F._legacy_reduction(size_average, reduce, reduction)


class _WeightedLoss(_Loss):
    def __init__(self, weight=None, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)


class L1Loss(_Loss):
    def forward(self, input, target):
        return F.l1_loss(input, target, reduction=self.reduction)


class MSELoss(_Loss):
    def forward(self, input, target):
        return F.mse_loss(input, target, reduction=self.reduction)


class SmoothL1Loss(_Loss):
    def __init__(self, size_average=None, reduce=None, reduction: str = "mean", beta: float = 1.0):
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input, target):
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    def __init__(self, reduction: str = "mean", delta: float = 1.0):
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input, target):
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class NLLLoss(_WeightedLoss):
    def __init__(self, weight=None, size_average=None, ignore_index: int = -100, reduce=None, reduction: str = "mean"):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index

    def forward(self, input, target):
        return F.nll_loss(input, target, weight=self.weight, ignore_index=self.ignore_index, reduction=self.reduction)


class CrossEntropyLoss(_WeightedLoss):
    def __init__(self, weight=None, size_average=None, ignore_index: int = -100, reduce=None, reduction: str = "mean",
                 label_smoothing: float = 0.0):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing

    def forward(self, input, target):
        return F.cross_entropy(input, target, weight=self.weight, ignore_index=self.ignore_index,
                               reduction=self.reduction, label_smoothing=self.label_smoothing)


class BCELoss(_WeightedLoss):
    def forward(self, input, target):
        return F.binary_cross_entropy(input, target, weight=self.weight, reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    def __init__(self, weight=None, size_average=None, reduce=None, reduction: str = "mean", pos_weight=None):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input, target):
        return F.binary_cross_entropy_with_logits(input, target, self.weight, pos_weight=self.pos_weight,
                                                  reduction=self.reduction)


class KLDivLoss(_Loss):
    def __init__(self, size_average=None, reduce=None, reduction: str = "mean", log_target: bool = False):
        super().__init__(size_average, reduce, reduction)
        self.log_target = log_target

    def forward(self, input, target):
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


# Margin, embedding and sequence losses, with torch's constructor arguments and attribute names.
class _Simple(_Loss):
    _fn = ""
    _attrs: tuple = ()

    def forward(self, *inputs):
        return getattr(F, self._fn)(*inputs, **{a: getattr(self, a) for a in self._attrs}, reduction=self.reduction)


def _loss_class(name, fn, params=(), weighted=False):
    """A loss module whose __init__(…, size_average, reduce, reduction) stores `params` (name, default) pairs."""
    attrs = tuple(p for p, _ in params if p != "size_average") + (("weight",) if weighted else ())
    def __init__(self, *args, **kwargs):
        names = [p for p, _ in params] + (["weight"] if weighted else [])
        names += [p for p in ("size_average", "reduce", "reduction") if p not in names]
        values = dict(dict(weight=None, size_average=None, reduce=None, reduction="mean"), **dict(params))
        values.update(zip(names, args))
        values.update(kwargs)
        _Loss.__init__(self, values["size_average"], values["reduce"], values["reduction"])
        for p in attrs:
            if p != "weight":
                setattr(self, p, values[p])
        if weighted:
            self.register_buffer("weight", values["weight"])

    return type(name, (_Simple,), {"__init__": __init__, "_fn": fn, "_attrs": attrs, "__module__": __name__})


CosineEmbeddingLoss = _loss_class("CosineEmbeddingLoss", "cosine_embedding_loss", (("margin", 0.0),))
HingeEmbeddingLoss = _loss_class("HingeEmbeddingLoss", "hinge_embedding_loss", (("margin", 1.0),))
MarginRankingLoss = _loss_class("MarginRankingLoss", "margin_ranking_loss", (("margin", 0.0),))
MultiLabelMarginLoss = _loss_class("MultiLabelMarginLoss", "multilabel_margin_loss")
MultiLabelSoftMarginLoss = _loss_class("MultiLabelSoftMarginLoss", "multilabel_soft_margin_loss", weighted=True)
MultiMarginLoss = _loss_class("MultiMarginLoss", "multi_margin_loss", (("p", 1), ("margin", 1.0)), weighted=True)
SoftMarginLoss = _loss_class("SoftMarginLoss", "soft_margin_loss")
PoissonNLLLoss = _loss_class("PoissonNLLLoss", "poisson_nll_loss", (("log_input", True), ("full", False),
                                                                    ("size_average", None), ("eps", 1e-8)))
TripletMarginLoss = _loss_class("TripletMarginLoss", "triplet_margin_loss", (("margin", 1.0), ("p", 2.0),
                                                                             ("eps", 1e-6), ("swap", False)))


class GaussianNLLLoss(_Loss):
    def __init__(self, *, full=False, eps=1e-6, reduction="mean"):
        super().__init__(None, None, reduction)
        self.full, self.eps = full, eps

    def forward(self, input, target, var):
        return F.gaussian_nll_loss(input, target, var, full=self.full, eps=self.eps, reduction=self.reduction)


class CTCLoss(_Loss):
    def __init__(self, blank=0, reduction="mean", zero_infinity=False):
        super().__init__(None, None, reduction)
        self.blank, self.zero_infinity = blank, zero_infinity

    def forward(self, log_probs, targets, input_lengths, target_lengths):
        return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, self.blank, self.reduction,
                          self.zero_infinity)


class TripletMarginWithDistanceLoss(_Loss):
    def __init__(self, *, distance_function=None, margin=1.0, swap=False, reduction="mean"):
        super().__init__(None, None, reduction)
        if margin <= 0:
            raise ValueError(f"TripletMarginWithDistanceLoss: expected margin to be greater than 0, got {margin} instead")
        self.distance_function, self.margin, self.swap = distance_function, margin, swap

    def forward(self, anchor, positive, negative):
        return F.triplet_margin_with_distance_loss(anchor, positive, negative, distance_function=self.distance_function,
                                                   margin=self.margin, swap=self.swap, reduction=self.reduction)


__all__ += ["CTCLoss", "CosineEmbeddingLoss", "GaussianNLLLoss", "HingeEmbeddingLoss", "MarginRankingLoss",
            "MultiLabelMarginLoss", "MultiLabelSoftMarginLoss", "MultiMarginLoss", "PoissonNLLLoss", "SoftMarginLoss",
            "TripletMarginLoss", "TripletMarginWithDistanceLoss"]
