"""NumPy kernels of the module ops (conv, pooling, interpolation, grid sampling, layer norm,
cross entropy) and their backward."""

from .conv import (
    conv,
    conv_backward,
    conv_backward_from_columns,
    conv_saving_columns,
    conv_transpose,
    conv_transpose_backward,
    deform_conv2d,
    deform_conv2d_backward,
    unfold4d,
)
from .grid_sample import grid_sample_2d, grid_sample_2d_backward
from .interpolate import interpolate, interpolate_backward
from .loss import cross_entropy, cross_entropy_backward
from .norm import layer_norm, layer_norm_backward
from .pool import (
    adaptive_avg_pool,
    adaptive_avg_pool_backward,
    avg_pool,
    avg_pool_backward,
    max_pool_backward,
    max_pool_with_indices,
)

__all__ = [
    "adaptive_avg_pool",
    "adaptive_avg_pool_backward",
    "avg_pool",
    "avg_pool_backward",
    "conv",
    "conv_backward",
    "conv_backward_from_columns",
    "conv_saving_columns",
    "conv_transpose",
    "conv_transpose_backward",
    "cross_entropy",
    "cross_entropy_backward",
    "deform_conv2d",
    "deform_conv2d_backward",
    "grid_sample_2d",
    "grid_sample_2d_backward",
    "interpolate",
    "interpolate_backward",
    "layer_norm",
    "layer_norm_backward",
    "max_pool_backward",
    "max_pool_with_indices",
    "unfold4d",
]
