"""`burn.functional`: module ops (convolution, pooling, interpolation, attention, ...) and
activations, validated and dispatched to the backend's ModuleOps / ActivationOps."""

from burn.frontend.reduction import logsumexp
from burn.functional.activation import (
    celu,
    elu,
    gelu,
    glu,
    hard_sigmoid,
    hardtanh,
    leaky_relu,
    log_sigmoid,
    log_softmax,
    mish,
    prelu,
    quiet_softmax,
    relu,
    relu6,
    selu,
    sigmoid,
    silu,
    softmax,
    softmin,
    softplus,
    softsign,
    tanh,
    tanhshrink,
    threshold,
    thresholded_relu,
)
from burn.functional.attention import attention
from burn.functional.conv import (
    conv1d,
    conv2d,
    conv3d,
    conv_transpose1d,
    conv_transpose2d,
    conv_transpose3d,
    fold4d,
    unfold4d,
)
from burn.functional.ctc import ctc_loss
from burn.functional.embedding import embedding
from burn.functional.interpolate import interpolate
from burn.functional.layers import batch_norm, layer_norm, linear
from burn.functional.loss import (
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    cosine_embedding_loss,
    cross_entropy,
    huber_loss,
    kl_div,
    l1_loss,
    mse_loss,
    nll_loss,
    smooth_l1_loss,
)
from burn.functional.pool import (
    adaptive_avg_pool1d,
    adaptive_avg_pool2d,
    adaptive_avg_pool3d,
    avg_pool1d,
    avg_pool2d,
    max_pool1d,
    max_pool1d_with_indices,
    max_pool2d,
    max_pool2d_with_indices,
)
from burn.functional.sampling import deform_conv2d, grid_sample_2d

__all__ = [
    "adaptive_avg_pool1d", "adaptive_avg_pool2d", "attention", "avg_pool1d", "avg_pool2d",
    "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
    "deform_conv2d", "elu", "embedding", "gelu", "grid_sample_2d", "hard_sigmoid",
    "interpolate", "leaky_relu", "log_sigmoid", "logsumexp", "log_softmax", "max_pool1d",
    "max_pool1d_with_indices", "max_pool2d", "max_pool2d_with_indices", "mish", "prelu",
    "relu", "selu", "sigmoid", "silu", "softmax", "softmin", "softplus", "tanh", "unfold4d",
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "cosine_embedding_loss",
    "cross_entropy", "huber_loss", "kl_div", "l1_loss", "mse_loss", "nll_loss",
    "smooth_l1_loss", "celu", "glu", "hardtanh", "quiet_softmax", "relu6", "softsign",
    "tanhshrink", "threshold", "thresholded_relu", "batch_norm", "layer_norm", "linear",
    "adaptive_avg_pool3d", "ctc_loss", "fold4d",
]
