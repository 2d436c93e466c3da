"""Loss functionals, with torch's reductions and legacy size_average/reduce arguments."""

from __future__ import annotations

from ... import _C
from ..._tensor import dtype_title, need_float
# Functionals call each other as F.x, looked up at call time as the one-file module's globals were:
# a monkeypatched nn.functional.x reaches these callers too.
from .. import functional as F


def _reduce(loss, reduction: str):
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ValueError(f"{reduction} is not a valid value for reduction")


def _legacy_reduction(size_average, reduce, reduction):
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    return ("mean" if size_average else "sum") if reduce else "none"


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    """Negative log-likelihood over class dim 1 (or 0 for an unbatched input), torch's weighting."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if input.dim() < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {input.dim()})")
    if target.dtype not in (_C.int64, _C.uint8):
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got {dtype_title(target.dtype)}")
    cdim = 0 if input.dim() == 1 else 1
    if input.dim() > 1 and input.shape[0] != target.shape[0]:
        raise ValueError(f"Expected input batch_size ({input.shape[0]}) to match target batch_size ({target.shape[0]}).")
    valid = target != ignore_index
    safe_t = _C.where(valid, target, _C.zeros_like(target)).long()
    picked = -input.gather(cdim, safe_t.unsqueeze(cdim)).squeeze(cdim)
    w = weight.index_select(0, safe_t.reshape(-1)).reshape(safe_t.shape) if weight is not None else _C.ones_like(picked)
    w = w * valid.to(w.dtype)
    loss = picked * w
    if reduction == "mean":
        return loss.sum() / w.sum()
    return _reduce(loss, reduction)


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean",
                  label_smoothing=0.0):
    """log_softmax + nll_loss; class-index or class-probability targets; label smoothing as torch."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    cdim = 0 if input.dim() == 1 else 1
    logp = input.log_softmax(cdim)
    n_classes = input.shape[cdim]
    if target.is_floating_point():  # probabilities
        if label_smoothing > 0:
            target = target * (1 - label_smoothing) + label_smoothing / n_classes
        wshape = [1] * input.dim()
        wshape[cdim] = n_classes
        terms = logp * target if weight is None else logp * target * weight.reshape(*wshape)
        loss = -terms.sum(cdim)
        return loss.sum() / (input.numel() // n_classes) if reduction == "mean" else _reduce(loss, reduction)
    nll = F.nll_loss(logp, target, weight, ignore_index=ignore_index, reduction=reduction)
    if label_smoothing <= 0:
        return nll
    valid = (target != ignore_index)
    wshape = [1] * input.dim()
    wshape[cdim] = n_classes
    smooth = -(logp * weight.reshape(*wshape)).sum(cdim) if weight is not None else -logp.sum(cdim)
    smooth = smooth * valid.to(smooth.dtype)
    if reduction == "mean":
        if weight is not None:
            safe_t = _C.where(valid, target, _C.zeros_like(target)).long()
            denom = (weight.index_select(0, safe_t.reshape(-1)).reshape(safe_t.shape) * valid.to(weight.dtype)).sum()
        else:
            denom = valid.sum().to(smooth.dtype)
        smooth = smooth.sum() / denom
    else:
        smooth = _reduce(smooth, reduction)
    return nll * (1 - label_smoothing) + smooth * (label_smoothing / n_classes)


def _check_same_size(input, target, name):
    if tuple(input.shape) != tuple(target.shape):
        import warnings

        warnings.warn(f"Using a target size ({target.shape}) that is different to the input size ({input.shape}). "
                      "This will likely lead to incorrect results due to broadcasting. Please ensure they have the same size.",
                      stacklevel=3)


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    _check_same_size(input, target, "mse_loss")
    return _reduce((input - target).square(), _legacy_reduction(size_average, reduce, reduction))


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    _check_same_size(input, target, "l1_loss")
    return _reduce((input - target).abs(), _legacy_reduction(size_average, reduce, reduction))


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    d = (input - target).abs()
    loss = d - 0.5 * beta if beta == 0 else _C.where(d < beta, 0.5 * d.square() / beta, d - 0.5 * beta)
    return _reduce(loss, _legacy_reduction(size_average, reduce, reduction))


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    if not delta > 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    d = (input - target).abs()
    return _reduce(_C.where(d < delta, 0.5 * d.square(), delta * (d - 0.5 * delta)), reduction)


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    if target.dtype != input.dtype:
        raise RuntimeError(f"Found dtype {dtype_title(target.dtype)} but expected {dtype_title(input.dtype)}")
    need_float(input, "binary_cross_entropy")
    if tuple(input.shape) != tuple(target.shape):
        raise ValueError(f"Using a target size ({target.shape}) that is different to the input size ({input.shape}) is deprecated. Please ensure they have the same size.")
    if (input < 0).any().item() or (input > 1).any().item():
        raise RuntimeError("all elements of input should be between 0 and 1")
    # torch clamps the logs at -100.
    loss = -(target * input.log().clamp_min(-100) + (1 - target) * (1 - input).log().clamp_min(-100))
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, _legacy_reduction(size_average, reduce, reduction))


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None, reduction="mean",
                                     pos_weight=None):
    if tuple(input.shape) != tuple(target.shape):
        raise ValueError(f"Target size ({target.shape}) must be the same as input size ({input.shape})")
    log_sig = F.logsigmoid(input)
    log_one_minus = F.logsigmoid(-input)
    if pos_weight is not None:
        loss = -(pos_weight * target * log_sig + (1 - target) * log_one_minus)
    else:
        loss = -(target * log_sig + (1 - target) * log_one_minus)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, _legacy_reduction(size_average, reduce, reduction))


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    if log_target:
        loss = target.exp() * (target - input)
    else:
        # torch's xlogy(t, t) - t·input: 0 where t == 0, NaN where t < 0.
        loss = target.xlogy(target) - target * input
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if reduction == "batchmean":
        return loss.sum() / input.shape[0] if input.dim() else loss.sum()
    return _reduce(loss, reduction)
