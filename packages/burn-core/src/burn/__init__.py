"""Burn for Python: tensors, backends and autodiff (burn-core)."""

from burn import errors, functional
from burn.autodiff import Gradients, is_grad_enabled, no_grad
from burn.device import Device, available_backends, default_device, set_default_device
from burn.dtype import (
    DType,
    Kind,
    bfloat16,
    bool_,
    float16,
    float32,
    float64,
    int8,
    int32,
    int64,
    uint8,
)
from burn.frontend import (
    Tensor,
    arange,
    bernoulli,
    cat,
    empty,
    empty_like,
    eye,
    from_dlpack,
    from_numpy,
    full,
    full_like,
    normal,
    one_hot,
    ones,
    ones_like,
    rand,
    randint,
    randn,
    seed,
    stack,
    tensor,
    uniform,
    where,
    zeros,
    zeros_like,
)

# isort: split
# Subpackages that build on the names above (imported last: they use `burn.float32` & co.).
from burn import data, lr_scheduler, nn, optim, record, train  # noqa: E402

__version__ = "0.1.0"
__all__ = [
    "DType", "Device", "Gradients", "Kind", "Tensor", "arange", "available_backends", "data",
    "lr_scheduler", "nn", "optim", "record", "train",
    "bernoulli", "bfloat16", "bool_", "cat", "default_device", "empty", "empty_like", "errors",
    "eye", "float16", "float32", "float64", "from_dlpack", "from_numpy", "full", "full_like",
    "functional", "int8", "int32", "int64", "is_grad_enabled", "no_grad", "normal", "one_hot",
    "ones", "ones_like",
    "rand", "randint", "randn", "seed", "set_default_device", "stack", "tensor", "uint8",
    "uniform", "where", "zeros", "zeros_like",
]

