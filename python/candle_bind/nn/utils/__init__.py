"""torch.nn.utils: weight norm (both APIs), parametrizations, rnn packing, parameter helpers."""

from . import parametrizations, rnn  # noqa: F401
from .weight_norm import remove_weight_norm, weight_norm  # noqa: F401


def parameters_to_vector(parameters):
    from ... import _C

    return _C.cat([p.reshape(-1) for p in parameters])


def vector_to_parameters(vec, parameters):
    pointer = 0
    for p in parameters:
        n = p.numel()
        p.copy_(vec[pointer:pointer + n].reshape(p.shape))
        pointer += n
