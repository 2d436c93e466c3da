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


# statistics and float decomposition (_stats_ops, _numeric_ops)
class cummax(NamedTuple):  # noqa: N801
    values: Tensor
    indices: Tensor


class cummin(NamedTuple):  # noqa: N801
    values: Tensor
    indices: Tensor


class mode(NamedTuple):  # noqa: N801
    values: Tensor
    indices: Tensor


class nanmedian(NamedTuple):  # noqa: N801
    values: Tensor
    indices: Tensor


class histogram(NamedTuple):  # noqa: N801
    hist: Tensor
    bin_edges: Tensor


class histogramdd(NamedTuple):  # noqa: N801
    hist: Tensor
    bin_edges: tuple


class frexp(NamedTuple):  # noqa: N801
    mantissa: Tensor
    exponent: Tensor


def _pair(name: str, *fields: str):
    return NamedTuple(name, [(f, Tensor) for f in fields])


# torch.linalg's factorizations with info codes and pivots, and the legacy top-level ones
linalg_eig = _pair("linalg_eig", "eigenvalues", "eigenvectors")
linalg_polar = _pair("linalg_polar", "U", "H")
linalg_cholesky_ex = _pair("linalg_cholesky_ex", "L", "info")
linalg_inv_ex = _pair("linalg_inv_ex", "inverse", "info")
linalg_solve_ex = _pair("linalg_solve_ex", "result", "info")
linalg_lu = _pair("linalg_lu", "P", "L", "U")
linalg_lu_factor = _pair("linalg_lu_factor", "LU", "pivots")
linalg_lu_factor_ex = _pair("linalg_lu_factor_ex", "LU", "pivots", "info")
linalg_ldl_factor = _pair("linalg_ldl_factor", "LD", "pivots")
linalg_ldl_factor_ex = _pair("linalg_ldl_factor_ex", "LD", "pivots", "info")
lu_unpack = _pair("lu_unpack", "P", "L", "U")
geqrf = _pair("geqrf", "a", "tau")
triangular_solve = _pair("triangular_solve", "solution", "cloned_coefficient")
_lu_with_info = _pair("_lu_with_info", "LU", "pivots", "info")
