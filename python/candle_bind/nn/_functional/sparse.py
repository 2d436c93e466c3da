"""Sparse functionals: embedding, embedding_bag, one_hot."""

from __future__ import annotations

from ... import _C


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False, sparse=False):
    if input.is_floating_point():
        raise RuntimeError("Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; but got a floating point tensor instead")
    if padding_idx is not None:
        if padding_idx > 0:
            assert padding_idx < weight.size(0), "Padding_idx must be within num_embeddings"
        elif padding_idx < 0:
            assert padding_idx >= -weight.size(0), "Padding_idx must be within num_embeddings"
    if max_norm is not None:
        _embedding_renorm_(weight, input, max_norm, norm_type)
    flat = input.reshape(-1)
    return weight.index_select(0, flat).reshape(*input.shape, weight.shape[-1])


def _embedding_renorm_(weight, input, max_norm, norm_type):
    rows = _C.unique(input.reshape(-1))
    sel = weight.index_select(0, rows)
    norms = sel.norm(p=norm_type, dim=1, keepdim=True)
    scale = _C.where(norms > max_norm, max_norm / (norms + 1e-7), _C.ones_like(norms))
    weight.index_copy_(0, rows, sel * scale)


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False, mode="mean",
                  sparse=False, per_sample_weights=None, include_last_offset=False, padding_idx=None):
    if mode not in ("sum", "mean", "max"):
        raise ValueError(f"mode has to be one of sum, mean or max, got {mode}")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. per_sample_weights is only supported for mode='sum' (got mode='{mode}').")
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None")
        if input.shape[1] == 0:
            raise RuntimeError("step must be nonzero")
        bags = [input[i] for i in range(input.shape[0])]
        psw = [per_sample_weights[i] for i in range(input.shape[0])] if per_sample_weights is not None else None
    elif input.dim() == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        starts = offsets.tolist()
        ends = starts[1:] + ([] if include_last_offset else [input.shape[0]])
        if include_last_offset:
            starts = starts[:-1]
        bags = [input[s:e] for s, e in zip(starts, ends)]
        psw = [per_sample_weights[s:e] for s, e in zip(starts, ends)] if per_sample_weights is not None else None
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.dim()}")
    if max_norm is not None:
        _embedding_renorm_(weight, input, max_norm, norm_type)
    if padding_idx is not None and padding_idx < 0:  # counted from the end, as torch
        padding_idx += weight.shape[0]
    outs = []
    for i, bag in enumerate(bags):
        if padding_idx is not None:
            keep = bag != padding_idx
            if psw is not None:
                psw[i] = psw[i][keep]
            bag = bag[keep]
        if bag.numel() == 0:
            outs.append(_C.zeros(weight.shape[1], dtype=weight.dtype, device=weight.device))
            continue
        rows = weight.index_select(0, bag)
        if psw is not None:
            rows = rows * psw[i].unsqueeze(1)
        outs.append(rows.sum(0) if mode == "sum" else rows.mean(0) if mode == "mean" else rows.amax(0))
    return _C.stack(outs, 0) if outs else _C.zeros(0, weight.shape[1], dtype=weight.dtype, device=weight.device)


def one_hot(tensor, num_classes=-1):
    if tensor.is_floating_point():
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if num_classes == -1:
        num_classes = int(tensor.max().item()) + 1 if tensor.numel() else 0
    if tensor.numel() and (int(tensor.min().item()) < 0 or int(tensor.max().item()) >= num_classes):
        raise RuntimeError("Class values must be smaller than num_classes." if tensor.numel() else "Class values must be non-negative.")
    return (tensor.long().unsqueeze(-1) == _C.arange(num_classes, device=tensor.device)).long()
