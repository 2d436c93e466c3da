from .linear import Linear, LinearPackedParams
from .utils import WeightedQuantizedModule

__all__ = ["Linear", "LinearPackedParams", "WeightedQuantizedModule"]
