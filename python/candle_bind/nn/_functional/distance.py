"""Distance functionals: cosine_similarity, pairwise_distance."""

from __future__ import annotations

from ..._tensor import dtype_title


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    from ... import promote_types

    common = promote_types(x1.dtype, x2.dtype)
    if not common.is_floating_point:
        raise RuntimeError(f"expected common dtype to be floating point, yet common dtype is {dtype_title(common)}")
    if tuple(x1.shape) != tuple(x2.shape):
        from ..._ops import broadcast_tensors

        x1, x2 = broadcast_tensors(x1, x2)
    x1, x2 = x1.to(common), x2.to(common)
    n1 = x1.norm(dim=dim).clamp_min(eps)
    n2 = x2.norm(dim=dim).clamp_min(eps)
    return (x1 * x2).sum(dim) / (n1 * n2)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    return (x1 - x2 + eps).norm(p=p, dim=-1, keepdim=keepdim)


def pdist(input, p=2):
    """The p-norm distance between each pair of rows of a 2-D input, upper triangle in row-major order."""
    if input.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.dim()}D")
    if not input.dtype.is_floating_point:
        raise RuntimeError("pdist only supports floating-point dtypes")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    from ... import triu_indices

    n = input.shape[0]
    i, j = triu_indices(n, n, 1)
    return (input.index_select(0, i) - input.index_select(0, j)).norm(p=p, dim=1)
