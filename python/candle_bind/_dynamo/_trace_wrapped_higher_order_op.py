"""torch._dynamo._trace_wrapped_higher_order_op: `TransformGetItemToIndex` rewrites tensor indexing
while torch traces a vmapped function; indexing needs no rewrite here, so it changes nothing."""

from __future__ import annotations

import contextlib

__all__ = ["TransformGetItemToIndex"]


class TransformGetItemToIndex(contextlib.nullcontext):
    pass
