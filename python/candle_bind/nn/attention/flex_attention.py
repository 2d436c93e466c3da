"""torch.nn.attention.flex_attention: the names libraries import. Flex attention compiles a kernel
from Python mask functions with torch.compile, which candle_bind does not have; calling it says so
(use the "sdpa" or "eager" attention implementation)."""

from __future__ import annotations

__all__ = ["BlockMask", "create_block_mask", "flex_attention", "AuxRequest", "and_masks", "or_masks"]

_DEFAULT_SPARSE_BLOCK_SIZE = 128


def _unsupported(*args, **kwargs):
    raise NotImplementedError("flex_attention is not supported by candle_bind: use attn_implementation='sdpa' "
                              "or 'eager'")


class BlockMask:
    def __init__(self, *args, **kwargs):
        _unsupported()


class AuxRequest:
    def __init__(self, *args, **kwargs):
        _unsupported()


create_block_mask = flex_attention = create_mask = _unsupported


def and_masks(*mask_mods):
    return lambda *idx: all(m(*idx) for m in mask_mods)


def or_masks(*mask_mods):
    return lambda *idx: any(m(*idx) for m in mask_mods)
