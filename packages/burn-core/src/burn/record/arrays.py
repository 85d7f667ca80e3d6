"""Bridging burn tensors and numpy arrays without copies where the backend allows it."""

from __future__ import annotations

import numpy as np

from burn.backends.numpy import NumpyBackend
from burn.device import Device
from burn.dtype import DType
from burn.frontend.base import make
from burn.frontend.creation import tensor as tensor_from
from burn.frontend.tensor import Tensor


def host_array(tensor: Tensor) -> np.ndarray:
    """The values as a C-contiguous numpy array (the primitive itself on the NumPy backend).

    Args:
        tensor: any tensor.
    Returns:
        An array to read from, never to write to.
    """
    inner = tensor.inner()
    if isinstance(inner._bk, NumpyBackend):
        return np.asarray(inner._prim, order="C")
    return tensor.to_numpy()


def adopt(array: np.ndarray, dtype: DType, device: Device) -> Tensor:
    """A tensor of `dtype` on `device` with `array`'s values.

    On the NumPy backend (plain or under Autodiff) a C-contiguous `array` of that dtype becomes
    the primitive itself, so pass only arrays nobody writes to: fresh ones, or read-only maps.
    NumPy backend ops never write into their inputs.

    Args:
        array: the values.
        dtype: the tensor dtype (`array` is cast when it differs).
        device: the target device.
    Returns:
        The tensor.
    """
    inner = device.inner()
    if not isinstance(inner.backend, NumpyBackend):
        return tensor_from(array, dtype=dtype, device=device)
    out = make(np.asarray(array, dtype=dtype.numpy, order="C"), inner, dtype)
    return Tensor.from_inner(out, device) if device.is_autodiff else out
