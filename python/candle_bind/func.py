"""torch.func (torch.vmap): vmap runs the function once per index of the mapped dimension and stacks
the results, torch's semantics without its batching rules. transformers builds custom attention masks
with it (masking_utils' vmap path: four nested vmaps of a scalar mask function)."""

from __future__ import annotations

__all__ = ["vmap"]


def _flat(x):
    return x if isinstance(x, (tuple, list)) else (x,)


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    from . import Tensor, stack, tensor

    def mapped(*args, **kwargs):
        dims = tuple(in_dims) if isinstance(in_dims, (tuple, list)) else (in_dims,) * len(args)
        if len(dims) != len(args):
            raise ValueError(f"vmap: in_dims is compatible with the structure of `inputs` only if it has "
                             f"{len(args)} entries, got {len(dims)}")
        sizes = set()
        for a, d in zip(args, dims):
            if d is not None:
                if not isinstance(a, Tensor):
                    raise ValueError(f"vmap: Got in_dim={d} for an input but the input is of type {type(a)}. "
                                     "We cannot vmap over non-Tensor arguments")
                sizes.add(a.shape[d])
        if len(sizes) != 1:
            raise ValueError("vmap: Expected all tensors to have the same size in the mapped dimension, got "
                             f"sizes {sorted(sizes)}" if sizes else "vmap: at least one input must be mapped")
        n = sizes.pop()
        results = [func(*[a if d is None else a.select(d, i) for a, d in zip(args, dims)], **kwargs)
                   for i in range(n)]
        single = not isinstance(results[0], (tuple, list))
        columns = list(zip(*[_flat(r) for r in results]))
        outs = _flat(out_dims) * len(columns) if not isinstance(out_dims, (tuple, list)) else out_dims
        stacked = tuple(stack([r if isinstance(r, Tensor) else tensor(r) for r in col], dim=od)
                        for col, od in zip(columns, outs))
        return stacked[0] if single else stacked

    return mapped
