"""nn.utils.rnn: PackedSequence, pack_padded_sequence, pad_packed_sequence, pad_sequence."""

from __future__ import annotations

from typing import NamedTuple, Optional

from ... import _C
from ..._C import Tensor


class PackedSequence(NamedTuple):
    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Optional[Tensor] = None
    unsorted_indices: Optional[Tensor] = None


def pad_sequence(sequences, batch_first: bool = False, padding_value: float = 0.0, padding_side: str = "right"):
    max_len = max(s.shape[0] for s in sequences)
    trailing = tuple(sequences[0].shape[1:])
    out = _C.full((len(sequences), max_len, *trailing), padding_value, dtype=sequences[0].dtype)
    for i, s in enumerate(sequences):
        n = s.shape[0]
        if padding_side == "right":
            out[i, :n] = s
        else:
            out[i, max_len - n:] = s
    return out if batch_first else out.transpose(0, 1).contiguous()


def pack_padded_sequence(input, lengths, batch_first: bool = False, enforce_sorted: bool = True):
    lengths = [int(x) for x in (lengths.tolist() if isinstance(lengths, Tensor) else lengths)]
    if enforce_sorted:
        if any(lengths[i] < lengths[i + 1] for i in range(len(lengths) - 1)):
            raise RuntimeError("`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. "
                               "You can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to sidestep this requirement if you do not need ONNX exportability.")
        order = list(range(len(lengths)))
        sorted_indices = unsorted_indices = None
    else:
        order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
        sorted_indices = _C.tensor(order, dtype=_C.int64)
        inv = [0] * len(order)
        for pos, i in enumerate(order):
            inv[i] = pos
        unsorted_indices = _C.tensor(inv, dtype=_C.int64)
    if any(n <= 0 for n in lengths):
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element in 'lengths' that is <= 0")
    x = input if batch_first else input.transpose(0, 1)  # (B, T, *)
    sorted_lengths = [lengths[i] for i in order]
    steps, batch_sizes = [], []
    for t in range(sorted_lengths[0]):
        bs = sum(1 for n in sorted_lengths if n > t)
        batch_sizes.append(bs)
        idx = _C.tensor(order[:bs], dtype=_C.int64)
        steps.append(x[:, t].index_select(0, idx))
    return PackedSequence(_C.cat(steps, 0), _C.tensor(batch_sizes, dtype=_C.int64), sorted_indices, unsorted_indices)


def pad_packed_sequence(sequence, batch_first: bool = False, padding_value: float = 0.0, total_length: Optional[int] = None):
    data, batch_sizes = sequence.data, sequence.batch_sizes.tolist()
    b = batch_sizes[0]
    T = len(batch_sizes)
    if total_length is not None:
        if total_length < T:
            raise ValueError(f"Expected total_length to be at least the length of the longest sequence ({T}), but got total_length={total_length}")
        T = total_length
    out = _C.full((b, T, *data.shape[1:]), padding_value, dtype=data.dtype)
    lengths = [0] * b
    offset = 0
    for t, bs in enumerate(batch_sizes):
        out[:bs, t] = data[offset:offset + bs]
        for i in range(bs):
            lengths[i] += 1
        offset += bs
    lengths_t = _C.tensor(lengths, dtype=_C.int64)
    if sequence.unsorted_indices is not None:
        out = out.index_select(0, sequence.unsorted_indices)
        lengths_t = lengths_t.index_select(0, sequence.unsorted_indices)
    return (out if batch_first else out.transpose(0, 1).contiguous()), lengths_t


def pack_sequence(sequences, enforce_sorted: bool = True):
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)
