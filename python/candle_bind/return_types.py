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


# torch.linalg's and torch.svd's results
class svd(NamedTuple):  # noqa: N801
    U: Tensor
    S: Tensor
    V: Tensor


class linalg_svd(NamedTuple):  # noqa: N801
    U: Tensor
    S: Tensor
    Vh: Tensor


class linalg_qr(NamedTuple):  # noqa: N801
    Q: Tensor
    R: Tensor


class linalg_eigh(NamedTuple):  # noqa: N801
    eigenvalues: Tensor
    eigenvectors: Tensor


class linalg_slogdet(NamedTuple):  # noqa: N801
    sign: Tensor
    logabsdet: Tensor


class linalg_lstsq(NamedTuple):  # noqa: N801
    solution: Tensor
    residuals: Tensor
    rank: Tensor
    singular_values: Tensor
