"""torch.nn.functional: argument handling as torch does it, compute in Rust (`candle_bind._C`).

The functionals live in family modules under `nn/_functional/` (activation, conv, pooling, ...); this
module re-exports them and stays the one public namespace: layers and the family modules call
`F.x` through it at call time, so monkeypatching `nn.functional.x` reaches them all, as in torch.
"""

from __future__ import annotations

# Imported names this module has always exposed (`F.math`, `F.Tensor`, ...), kept for code that reads them.
import builtins  # noqa: F401
import math  # noqa: F401
from typing import Optional, Sequence  # noqa: F401

from .. import _C  # noqa: F401
from .._C import Tensor  # noqa: F401
from .._blas_ops import grouped_mm  # noqa: F401 - torch.nn.functional.grouped_mm (mixture-of-experts layers)
from .._tensor import dtype_cpp, dtype_title, need_float, not_implemented  # noqa: F401

from ._functional.activation import (
    celu, elu, gelu, glu, hardshrink, hardsigmoid, hardswish, hardtanh, leaky_relu, log_softmax, logsigmoid, mish,
    prelu, relu, relu6, rrelu, selu, sigmoid, silu, snake, softmax, softmin, softplus, softshrink, softsign, tanh,
    tanhshrink, threshold,
)
from ._functional.attention import multi_head_attention_forward, scaled_dot_product_attention
from ._functional.conv import conv1d, conv2d, conv3d, conv_transpose1d, conv_transpose2d, conv_transpose3d, fold, unfold
from ._functional.distance import cosine_similarity, pairwise_distance, pdist
from ._functional.dropout import alpha_dropout, dropout, dropout1d, dropout2d, dropout3d, feature_alpha_dropout
from ._functional.linear import bilinear, linear
from ._functional.loss import (
    binary_cross_entropy, binary_cross_entropy_with_logits, cross_entropy, huber_loss, kl_div, l1_loss, mse_loss,
    nll_loss, smooth_l1_loss,
)
from ._functional.loss import (
    cosine_embedding_loss, ctc_loss, gaussian_nll_loss, hinge_embedding_loss, linear_cross_entropy,
    margin_ranking_loss, multi_margin_loss, multilabel_margin_loss, multilabel_soft_margin_loss, poisson_nll_loss,
    soft_margin_loss, triplet_margin_loss, triplet_margin_with_distance_loss,
)
from ._functional.normalization import (
    batch_norm, group_norm, instance_norm, layer_norm, local_response_norm, normalize, rms_norm,
)
from ._functional.pooling import (
    adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d, adaptive_max_pool1d, adaptive_max_pool2d,
    adaptive_max_pool3d, avg_pool1d, avg_pool2d, avg_pool3d, lp_pool1d, lp_pool2d, max_pool1d,
    max_pool1d_with_indices, max_pool2d, max_pool2d_with_indices, max_pool3d, max_pool3d_with_indices,
)
from ._functional.pooling import (
    fractional_max_pool2d, fractional_max_pool2d_with_indices, fractional_max_pool3d,
    fractional_max_pool3d_with_indices, max_unpool1d, max_unpool2d, max_unpool3d,
)
from ._functional.sparse import embedding, embedding_bag, one_hot
from ._functional.vision import (
    affine_grid, channel_shuffle, grid_sample, interpolate, pad, pixel_shuffle, pixel_unshuffle, upsample,
)
from ._functional.vision import upsample_bilinear, upsample_nearest

# Private helpers stay reachable here: layers call F._ntuple / F._legacy_reduction, and code written
# against the single-file module may import the others from it.
from ._functional.activation import _SELU_ALPHA, _SELU_SCALE, _softmax_dim
from ._functional.attention import _broadcast_lead, _sdpa_fused
from ._functional.conv import _conv, _conv_t, _empty_input_params
from ._functional.dropout import _check_p, _feature_dropout
from ._functional.loss import _check_same_size, _legacy_reduction, _reduce
from ._functional.normalization import _C_finfo_eps, _channel_shape, _norm_rows
from ._functional.pooling import _adaptive, _ntuple_none, _pool, _pool_out, _pool_windows
from ._functional.sparse import _embedding_renorm_
from ._functional.vision import (
    _INTERPOLATE_MODES, _along, _check_nonconstant_pad, _cubic_weights, _grid_coord, _pad_coord, _source_index,
    _taps, _weights_shape,
)
from ._functional._utils import _int, _maybe_inplace, _ntuple

__all__ = [
    "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d", "adaptive_max_pool1d",
    "adaptive_max_pool2d", "adaptive_max_pool3d", "alpha_dropout", "avg_pool1d", "avg_pool2d", "avg_pool3d",
    "bilinear", "celu", "channel_shuffle", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
    "conv_transpose3d", "cosine_similarity", "dropout", "dropout1d", "dropout2d", "dropout3d", "elu", "embedding",
    "embedding_bag", "feature_alpha_dropout", "fold", "gelu", "glu", "hardshrink", "hardsigmoid", "hardswish",
    "hardtanh", "leaky_relu", "linear", "log_softmax", "logsigmoid", "max_pool1d", "max_pool2d", "max_pool3d",
    "mish", "normalize", "one_hot", "pad", "pairwise_distance", "pixel_shuffle", "pixel_unshuffle", "prelu", "relu",
    "relu6", "rrelu", "selu", "sigmoid", "silu", "snake", "softmax", "softmin", "softplus", "softshrink",
    "softsign", "tanh", "tanhshrink", "threshold", "unfold", "binary_cross_entropy",
    "binary_cross_entropy_with_logits", "cross_entropy", "huber_loss", "kl_div", "l1_loss", "mse_loss", "nll_loss",
    "smooth_l1_loss", "batch_norm", "group_norm", "instance_norm", "layer_norm", "local_response_norm", "rms_norm",
    "scaled_dot_product_attention", "interpolate", "upsample", "affine_grid", "grid_sample",
    "cosine_embedding_loss", "ctc_loss", "fractional_max_pool2d", "fractional_max_pool3d", "gaussian_nll_loss",
    "hinge_embedding_loss", "linear_cross_entropy", "margin_ranking_loss", "max_unpool1d", "max_unpool2d",
    "max_unpool3d", "multi_head_attention_forward", "multi_margin_loss", "multilabel_margin_loss",
    "multilabel_soft_margin_loss", "pdist", "poisson_nll_loss", "soft_margin_loss", "triplet_margin_loss",
    "triplet_margin_with_distance_loss", "upsample_bilinear", "upsample_nearest",
]


def _own_functions():
    # Functions report this module as theirs, as before the split: pickled references (a model holding
    # F.gelu saved whole), help() and reprs name the public path, not a private family module.
    family = __name__.rpartition(".")[0] + "._functional."
    for v in list(globals().values()):
        if type(v) is type(_own_functions) and v.__module__.startswith(family):
            v.__module__ = __name__


_own_functions()
del _own_functions
from .._nn_ops import celu_, elu_, hardtanh_, leaky_relu_, relu_, rrelu_, selu_, threshold_  # noqa: E402,F401
