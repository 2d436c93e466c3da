"""torch.asarray, torch.frombuffer and the deprecated inclusive torch.range. A family module.
numpy import copies here (README: from_numpy copies), so neither asarray nor frombuffer aliases its source.
"""

from __future__ import annotations

import math
import warnings

from . import _C
from ._tensor import dtype_title


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False):
    from . import as_tensor

    if isinstance(obj, _C.Tensor) or type(obj).__name__ == "ComplexTensor":
        out = obj.to(device=device if device is not None else obj.device, dtype=dtype or obj.dtype)
        if out is not obj and copy is False:
            raise ValueError(f"can't alias tensor with dtype '{dtype_title(obj.dtype)}' into dtype "
                             f"'{dtype_title(out.dtype)}'.")
        return out.clone() if copy and out is obj else out
    if copy is False:
        raise ValueError("can't alias a non-tensor object without copying: candle_bind copies numpy and buffers")
    out = as_tensor(obj, dtype=dtype, device=device)
    if requires_grad:
        out.requires_grad_(True)
    return out


def frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False):
    import numpy as np

    from . import bfloat16, from_numpy

    probe = _C.empty(0, dtype=dtype)
    item = probe.element_size()
    length = memoryview(buffer).nbytes
    if length <= 0 or count == 0:
        raise ValueError(f"both buffer length ({length}) and count ({count}) must not be 0")
    if not 0 <= offset < length:
        raise ValueError(f"offset ({offset} bytes) must be non-negative and no greater than buffer length "
                         f"({length} bytes) minus 1")
    if count < 0 and (length - offset) % item:
        raise ValueError(f"buffer length ({length - offset} bytes) after offset ({offset} bytes) must be a multiple "
                         f"of element size ({item})")
    if count > 0 and count * item > length - offset:
        raise ValueError(f"requested buffer length ({count} * {item} bytes) after offset ({offset} bytes) must not "
                         f"be greater than actual buffer length ({length} bytes)")
    if dtype == bfloat16:  # numpy has no bfloat16: the bits as uint16, widened to float32 and rounded back exactly
        bits = np.frombuffer(buffer, dtype=np.uint16, count=count, offset=offset)
        return from_numpy((bits.astype(np.uint32) << 16).view(np.float32)).to(bfloat16)
    return from_numpy(np.frombuffer(buffer, dtype=probe.numpy().dtype, count=count, offset=offset))


def range(start, end, step=1, *, dtype=None, layout=None, device=None, pin_memory=False,  # noqa: A001
          requires_grad=False):
    """torch.range: [start, end] inclusive, in the default float dtype unless told (deprecated in torch too)."""
    from . import arange, float64, get_default_dtype

    warnings.warn("torch.range is deprecated and will be removed in a future release because its behavior is "
                  "inconsistent with Python's range builtin. Instead, use torch.arange, which produces values in "
                  "[start, end).", UserWarning, stacklevel=2)
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (step > 0 and end < start) or (step < 0 and end > start):
        raise RuntimeError("upper bound and larger bound inconsistent with step sign")
    n = math.floor((end - start) / step) + 1
    out = arange(n, dtype=float64, device=device) * step + start
    return out.to(dtype or get_default_dtype())


FUNCTIONS = ("asarray", "frombuffer", "range")
