"""Loss functionals, with torch's reductions and legacy size_average/reduce arguments."""

from __future__ import annotations

from ... import _C
from ..._tensor import dtype_title, need_float
# Functionals call each other as F.x, looked up at call time as the one-file module's globals were:
# a monkeypatched nn.functional.x reaches these callers too.
from .. import functional as F
from ..._opmath import opmath


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


@opmath
def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    if not delta > 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    d = (input - target).abs()
    return _reduce(_C.where(d < delta, 0.5 * d.square(), delta * (d - 0.5 * delta)), reduction)


@opmath
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
    # torch's composite, step by step (its half results round after each): (1 - t) x - w_pos log σ(x)
    log_sig = F.logsigmoid(input)
    if pos_weight is not None:
        log_sig = ((pos_weight - 1) * target + 1) * log_sig
    loss = (1 - target) * input - log_sig
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


# ----------------------------------------------------------------------------- margin and embedding losses


def _check_reduction(reduction: str, message: str = "{} is not a valid value for reduction") -> None:
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(message.format(reduction))


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    import math

    if isinstance(var, float):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = var * _C.ones_like(input)
    elif (var < 0).any().item():
        raise ValueError("var has negative entry/entries")
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):  # homoscedastic: one variance per row
            var = var.unsqueeze(-1)
        elif not (input.dim() == var.dim()
                  and sum(y for x, y in zip(input.shape, var.shape) if x != y) == 1):
            raise ValueError("var is of incorrect size")
    _check_reduction(reduction, "{} is not valid")
    var = var.clamp_min(eps)
    loss = 0.5 * (var.log() + (input - target).square() / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None,
                     reduction="mean"):
    import math

    for i, (name, v) in enumerate((("input", input), ("target", target))):
        if not isinstance(v, _C.Tensor):
            raise TypeError(f"poisson_nll_loss(): argument '{name}' (position {i + 1}) must be Tensor, not "
                            f"{type(v).__name__}")
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    loss = input.exp() - target * input if log_input else input - target * (input + eps).log()
    if full:  # Stirling's term for target > 1
        t = target.to(loss.dtype)
        stirling = t * t.log() - t + 0.5 * (2 * math.pi * t).log()
        loss = loss + _C.where(t > 1, stirling, _C.zeros_like(stirling))
    return _reduce(loss, reduction)


def cosine_embedding_loss(input1, input2, target, margin=0, size_average=None, reduce=None, reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    tdim = target.dim()
    if tdim not in (0, 1):
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if tdim == 1 and not (input1.dim() == 2 and input2.dim() == 2):
        raise RuntimeError(f"1D target tensor expects 2D input tensors, but found inputs with sizes "
                           f"{list(input1.shape)} and {list(input2.shape)}.")
    if tdim == 0 and not (input1.dim() == 1 and input2.dim() == 1):
        raise RuntimeError(f"0D target tensor expects 1D input tensors, but found inputs with sizes "
                           f"{list(input1.shape)} and {list(input2.shape)}.")
    eps = 1e-12
    prod = (input1 * input2).sum(tdim)
    cos = prod / (((input1 * input1).sum(tdim) + eps) * ((input2 * input2).sum(tdim) + eps)).sqrt()
    zeros = _C.zeros_like(cos)
    loss = _C.where(target == 1, 1 - cos, zeros) + _C.where(target == -1, (cos - margin).clamp_min(0), zeros)
    return _reduce(loss, reduction)


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    zeros = _C.zeros_like(input)
    loss = _C.where(target != 1, (margin - input).clamp_min(0), zeros) + _C.where(target != -1, input, zeros)
    return _reduce(loss, reduction)


def margin_ranking_loss(input1, input2, target, margin=0, size_average=None, reduce=None, reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if input1.dim() != input2.dim() or input1.dim() != target.dim():
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension but got sizes: "
                           f"input1: {input1.shape}, input2: {input2.shape}, target: {target.shape} ")
    return _reduce((-target * (input1 - input2) + margin).clamp_min(0), reduction)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    return _reduce((-input * target).exp().log1p(), reduction)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    loss = -(target * F.logsigmoid(input) + (1 - target) * F.logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    class_dim = input.dim() - 1
    loss = loss.sum(class_dim) / input.shape[class_dim]
    _check_reduction(reduction, "{} is not valid")
    return _reduce(loss, reduction)


def _margin_frames(input, name):
    """(frames, classes) of a (C) or (N, C) margin-loss input, with torch's emptiness check."""
    nd = input.dim()
    if not ((nd == 2 and input.shape[1] != 0) or (nd == 1 and input.shape[0] != 0) or nd == 0):
        raise RuntimeError(f"Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
                           f"{list(input.shape)}")
    if nd <= 1:
        return 1, (1 if nd == 0 else input.shape[0])
    return input.shape[0], input.shape[1]


def _check_long(target):
    if target.dtype != _C.int64:
        raise RuntimeError(f"expected scalar type Long but found {dtype_title(target.dtype)}")


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None, reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.dim() != 1:
        raise ValueError("weight must be one-dimensional")
    _check_reduction(reduction)
    nframe, dim = _margin_frames(input, "multi_margin_loss")
    if not (target.dim() <= 1 and target.numel() == nframe):
        raise RuntimeError(f"inconsistent target size, expected {nframe} but got {list(target.shape)}")
    if weight is not None and not (weight.dim() <= 1 and weight.numel() == dim):
        raise RuntimeError(f"inconsistent weight size, expected {dim} but got {list(weight.shape)}")
    _check_long(target)
    t = target.reshape(nframe, 1).long()
    if t.numel() and ((t < 0).any().item() or (t >= dim).any().item()):
        raise RuntimeError("target out of range")
    x = input.reshape(nframe, dim)
    z = (margin - x.gather(1, t) + x).clamp_min(0)
    if p == 2:
        z = z * z
    if weight is not None:
        z = z * weight.to(x.dtype).index_select(0, t.reshape(-1)).reshape(nframe, 1)
    not_target = _C.arange(dim).reshape(1, dim) != t
    loss = (z * not_target.to(z.dtype)).sum(1) / dim
    if reduction == "none":
        return loss if target.dim() > 0 else loss.reshape(())
    return loss.mean() if reduction == "mean" else loss.sum()


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    nframe, dim = _margin_frames(input, "multilabel_margin_loss")
    if input.dim() <= 1:
        ok = target.dim() <= 1 and target.numel() == dim
    else:
        ok = target.dim() == 2 and tuple(target.shape) == (nframe, dim)
    if not ok:
        raise RuntimeError(f"inconsistent target size: {list(target.shape)} for input of size: {list(input.shape)}")
    _check_long(target)
    t = target.reshape(nframe, dim).long()
    if t.numel() and ((t < -1).any().item() or (t >= dim).any().item()):
        raise RuntimeError("target index is out of bounds")
    x = input.reshape(nframe, dim)
    # The targets of a row are its entries before the first -1.
    listed = (t != -1).long().cumprod(1).bool()
    safe = _C.where(listed, t, _C.zeros_like(t))
    is_target = ((safe.unsqueeze(2) == _C.arange(dim).reshape(1, 1, dim)) & listed.unsqueeze(2)).any(1)
    xy = x.gather(1, safe)  # (N, J): the score of each listed target
    z = (1 - (xy.unsqueeze(2) - x.unsqueeze(1))).clamp_min(0)  # (N, J, C)
    keep = listed.unsqueeze(2) & ~is_target.unsqueeze(1)
    loss = (z * keep.to(z.dtype)).sum((1, 2)) / dim
    if reduction == "none":
        return loss if target.dim() > 1 else loss.reshape(())
    return loss.mean() if reduction == "mean" else loss.sum()


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False, size_average=None,
                        reduce=None, reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    dims = (anchor.dim(), positive.dim(), negative.dim())
    if not dims[0] == dims[1] == dims[2]:
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions, but got: anchor {dims[0]}D, positive {dims[1]}D, and negative {dims[2]}D inputs")
    d_pos = F.pairwise_distance(anchor, positive, p, eps)
    d_neg = F.pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = d_neg.minimum(F.pairwise_distance(positive, negative, p, eps))
    return _reduce((margin + d_pos - d_neg).clamp_min(0), reduction)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None, margin=1.0, swap=False,
                                      reduction="mean"):
    _check_reduction(reduction)
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    dims = (anchor.dim(), positive.dim(), negative.dim())
    if not dims[0] == dims[1] == dims[2]:
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions, but got: anchor {dims[0]}D, positive {dims[1]}D, and negative {dims[2]}D inputs")
    dist = distance_function if distance_function is not None else F.pairwise_distance
    d_pos, d_neg = dist(anchor, positive), dist(anchor, negative)
    if swap:
        d_neg = d_neg.minimum(dist(positive, negative))
    return _reduce((margin + d_pos - d_neg).clamp_min(0), reduction)


def linear_cross_entropy(input, linear_weight, target, *, linear_bias=None, weight=None, reduction="mean",
                         ignore_index=None, label_smoothing=0.0, options=None):
    """cross_entropy(linear(input, W, b), target) with torch's shape checks (the chunked options path is a
    memory optimisation; the result is the same, so `options` is accepted and the plain path runs)."""
    import math

    if input.dim() < 1 or input.dim() > 2:
        raise RuntimeError(f"expected input with dimensionality 1 or 2, got {input.dim()}")
    if linear_weight.dim() < 2:
        raise RuntimeError(f"expected linear_weight with dimensionality at least 2, got {linear_weight.dim()}")
    batches, in_features = tuple(input.shape[:-1]), input.shape[-1]
    if in_features != linear_weight.shape[-1]:
        raise RuntimeError("expected equal input and linear_weight last dimensions (in_features), "
                           f"got {input.shape[-1]} and {linear_weight.shape[-1]}, respectively")
    num_classes, out_features = linear_weight.shape[0], tuple(linear_weight.shape[1:-1])
    if linear_bias is not None and tuple(linear_bias.shape) != (num_classes, *out_features):
        raise RuntimeError(f"expected linear_bias shape {(num_classes, *out_features)}, got {tuple(linear_bias.shape)}")
    if out_features and not batches:
        raise RuntimeError(f"K-dimensional loss defined by linear_weight shape {tuple(linear_weight.shape)} requires"
                           f" batched input, (N, {in_features}), got unbatched input with shape {tuple(input.shape)}")
    logits_shape = (*batches, num_classes, *out_features)
    if tuple(target.shape) == logits_shape and ignore_index is not None:
        raise RuntimeError("ignore_index cannot be specified when target contains probabilities")
    ignore_index = -100 if ignore_index is None else ignore_index
    if out_features:
        rows = math.prod(out_features, start=num_classes)
        linear_weight = linear_weight.reshape(rows, in_features)
        linear_bias = linear_bias.reshape(rows) if linear_bias is not None else None
    logits = F.linear(input, linear_weight, linear_bias).reshape(logits_shape)
    return F.cross_entropy(logits, target, weight=weight, reduction=reduction, ignore_index=ignore_index,
                           label_smoothing=label_smoothing)


# ------------------------------------------------------------------------------------------------- CTC


def _lengths(v, name):
    t = v if isinstance(v, _C.Tensor) else _C.tensor(list(v) if isinstance(v, (list, tuple)) else [v])
    return [int(x) for x in t.reshape(-1).tolist()]


def _logaddexp3(a, b, c):
    m = a.maximum(b).maximum(c)
    m = _C.where(m.isinf(), _C.zeros_like(m), m)  # all -inf: log(0) = -inf below
    return m + ((a - m).exp() + (b - m).exp() + (c - m).exp()).log()


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean", zero_infinity=False):
    """Connectionist temporal classification: the forward (alpha) recursion in log space, one tensor step per
    time step, over the batch and the blank-interleaved label positions at once."""
    _check_reduction(reduction)
    unbatched = log_probs.dim() == 2
    if unbatched:
        log_probs = log_probs.unsqueeze(1)
        targets = targets.unsqueeze(0) if targets.dim() == 1 else targets
    if log_probs.dim() != 3:
        raise RuntimeError(f"ctc_loss: expected log_probs to be 2-D or 3-D, got {log_probs.dim()}-D")
    T, N, C = log_probs.shape
    in_len, tg_len = _lengths(input_lengths, "input_lengths"), _lengths(target_lengths, "target_lengths")
    if not 0 <= blank < C:
        raise RuntimeError("blank must be in label range")
    if len(in_len) != N:
        raise RuntimeError(f"input_lengths must be of size batch_size, but got {len(in_len)}")
    if len(tg_len) != N:
        raise RuntimeError(f"target_lengths must be of size batch_size, but got {len(tg_len)}")
    for n in range(N):
        if in_len[n] > T or in_len[n] < 0:
            raise RuntimeError(f"Expected input_lengths to have value at most {T}, but got value {in_len[n]} "
                               f"(while checking arguments for ctc_loss_cpu)")
    S = max(tg_len, default=0)
    tg = targets.long()
    if tg.dim() == 1 and not unbatched:  # concatenated targets: cut them into padded rows
        if tg.shape[0] < sum(tg_len):
            raise RuntimeError(f"Expected tensor to have size at least {sum(tg_len)} at dimension 0, but got size "
                               f"{tg.shape[0]} for argument #2 'targets' (while checking arguments for ctc_loss_cpu)")
        rows, start = [], 0
        for n in range(N):
            row = tg[start:start + tg_len[n]]
            rows.append(_C.cat([row, _C.full((S - tg_len[n],), blank, dtype=_C.int64)]) if S > tg_len[n] else row)
            start += tg_len[n]
        tg = _C.stack(rows) if N else _C.zeros(0, S, dtype=_C.int64)
    else:
        for n in range(N):
            if tg_len[n] > tg.shape[1]:
                raise RuntimeError(f"Expected tensor to have size at least {tg_len[n]} at dimension 1, but got size "
                                   f"{tg.shape[1]} for argument #2 'targets' (while checking arguments for ctc_loss_cpu)")
        tg = tg[:, :S] if S else _C.zeros(N, 0, dtype=_C.int64)
    L = 2 * S + 1
    ext = _C.full((N, L), blank, dtype=_C.int64)
    if S:
        ext[:, 1::2] = tg
    # a transition from s-2 skips a blank between two different labels
    skip = _C.zeros(N, L, dtype=_C.bool)
    if S > 1:
        skip[:, 3::2] = tg[:, 1:] != tg[:, :-1]
    neg_inf = float("-inf")
    dtype = log_probs.dtype
    alpha = _C.full((N, L), neg_inf, dtype=dtype)
    if T:
        lp0 = log_probs[0].gather(1, ext)
        alpha[:, :1] = lp0[:, :1]
        if S:
            alpha[:, 1:2] = lp0[:, 1:2]
    live = _C.tensor(in_len).reshape(N, 1)
    pad1 = _C.full((N, 1), neg_inf, dtype=dtype)
    pad2 = _C.full((N, 2), neg_inf, dtype=dtype)
    for t in range(1, T):
        prev1 = _C.cat([pad1, alpha[:, :-1]], 1)
        prev2 = _C.cat([pad2, alpha[:, :-2]], 1)
        prev2 = _C.where(skip, prev2, _C.full_like(prev2, neg_inf))
        new = _logaddexp3(alpha, prev1, prev2) + log_probs[t].gather(1, ext)
        alpha = _C.where(live > t, new, alpha)
    last = _C.tensor([2 * s for s in tg_len]).reshape(N, 1)
    end1 = alpha.gather(1, last).reshape(N)
    end2 = alpha.gather(1, (last - 1).clamp_min(0)).reshape(N)
    end2 = _C.where(last.reshape(N) > 0, end2, _C.full_like(end2, neg_inf))
    m = end1.maximum(end2)
    m = _C.where(m.isinf(), _C.zeros_like(m), m)
    loss = -(m + ((end1 - m).exp() + (end2 - m).exp()).log())
    loss = _C.where(_C.tensor(in_len) == 0, _C.where(_C.tensor(tg_len) == 0, _C.zeros_like(loss),
                                                     _C.full_like(loss, float("inf"))), loss)
    if zero_infinity:
        loss = _C.where(loss == float("inf"), _C.zeros_like(loss), loss)
    if reduction == "mean":
        return (loss / _C.tensor(tg_len).clamp_min(1).to(dtype)).mean()
    if reduction == "sum":
        return loss.sum()
    return loss.squeeze(0) if unbatched else loss
