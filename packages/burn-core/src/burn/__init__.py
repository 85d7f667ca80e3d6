"""Burn for Python: tensors, backends and autodiff (burn-core)."""

from burn import errors
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

__version__ = "0.1.0"
__all__ = [
    "DType", "Device", "Kind", "available_backends", "bfloat16", "bool_", "default_device",
    "errors", "float16", "float32", "float64", "int8", "int32", "int64", "set_default_device",
    "uint8",
]
