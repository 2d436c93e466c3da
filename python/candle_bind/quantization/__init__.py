"""torch.quantization: the older name of torch.ao.quantization (the same objects)."""

from ..ao.quantization import *  # noqa: F401,F403
from ..ao.quantization import __all__  # noqa: F401
from ..ao.quantization import quantize, observer, qconfig, quantization_mappings  # noqa: F401


def __getattr__(name):
    from ..ao import quantization

    return getattr(quantization, name)
