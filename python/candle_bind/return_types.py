"""Named tuples returned by reductions with a dim, as `torch.return_types`."""

from typing import NamedTuple

from ._C import Tensor


class max(NamedTuple):  # noqa: N801 - torch's names
    values: Tensor
    indices: Tensor


class min(NamedTuple):  # noqa: N801
    values: Tensor
    indices: Tensor


class sort(NamedTuple):  # noqa: N801
    values: Tensor
    indices: Tensor


class topk(NamedTuple):  # noqa: N801
    values: Tensor
    indices: Tensor


class kthvalue(NamedTuple):  # noqa: N801
    values: Tensor
    indices: Tensor


class median(NamedTuple):  # noqa: N801
    values: Tensor
    indices: Tensor


class aminmax(NamedTuple):  # noqa: N801
    min: Tensor
    max: Tensor
