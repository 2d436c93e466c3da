"""torch.ao: only what quantizable models need before they are quantized (torch.ao.quantization)."""

from . import quantization  # noqa: F401
