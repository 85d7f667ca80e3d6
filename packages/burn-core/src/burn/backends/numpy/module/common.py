"""Helpers shared by the module kernels: compute dtype and separable axis transforms."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def work_dtype(dtype: np.dtype) -> np.dtype:
    """Dtype to compute in: float32/float64 as is, narrower floats (float16, ...) as float32.

    Args:
        dtype: dtype of the input.

    Returns:
        The dtype the kernel computes in.
    """
    dtype = np.dtype(dtype)
    return dtype if dtype in (np.float32, np.float64) else np.dtype(np.float32)


def apply_axis_matrices(x: np.ndarray, matrices: Sequence[np.ndarray]) -> np.ndarray:
    """Applies one linear map per trailing axis: matrix i ([out_i, in_i]) maps axis -len+i.

    Args:
        x: array [..., in_0, ..., in_{k-1}].
        matrices: k matrices [out_i, in_i].

    Returns:
        Array [..., out_0, ..., out_{k-1}].
    """
    for i, m in enumerate(matrices):
        axis = x.ndim - len(matrices) + i
        x = np.moveaxis(np.tensordot(x, m, axes=([axis], [1])), -1, axis)
    return x
