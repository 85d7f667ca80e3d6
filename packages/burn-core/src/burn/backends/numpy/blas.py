"""BLAS threads per call size: small matrix products run on one OpenBLAS thread.

Splitting a small product over several OpenBLAS threads costs more in synchronisation than it
saves (on a loaded 2-core machine a [64, 784] x [784, 256] product takes 30x longer on two
threads than on one). Products below `SMALL_MATMUL` multiply-adds drop numpy's OpenBLAS to one
thread for the call and restore the count after; larger ones use the configured count.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

#: multiply-adds below which a product runs on one BLAS thread.
SMALL_MATMUL = 1 << 24

_libs: list[Any] | None = None


def _openblas() -> list[Any]:
    """threadpoolctl's controllers of the OpenBLAS libraries loaded (numpy's), found once."""
    global _libs
    if _libs is None:
        from threadpoolctl import ThreadpoolController

        _libs = list(ThreadpoolController().select(internal_api="openblas").lib_controllers)
    return _libs


def matmul(lhs: np.ndarray, rhs: np.ndarray, small: int = SMALL_MATMUL) -> np.ndarray:
    """np.matmul, on one BLAS thread when the product is small; a contiguous batched lhs
    times a matrix runs as one 2-d product (numpy would call BLAS once per batch entry); a
    batched rhs whose rows are not contiguous is copied first.

    Args:
        lhs: [..., m, k].
        rhs: [..., k, n].
        small: multiply-adds below which the product runs on one BLAS thread.
    Returns:
        The product, as np.matmul.
    """
    if lhs.ndim < 2 or rhs.ndim < 2:
        return np.asarray(np.matmul(lhs, rhs))
    if lhs.ndim > 2 and rhs.ndim == 2 and lhs.flags.c_contiguous:
        # [..., m, k] @ [k, n] as one [prod(...) * m, k] @ [k, n] product, not one per batch
        rows = matmul(lhs.reshape(math.prod(lhs.shape[:-1]), lhs.shape[-1]), rhs, small)
        return rows.reshape(*lhs.shape[:-1], rhs.shape[-1])
    if rhs.ndim > 2 and rhs.strides[-1] != rhs.itemsize:
        # a batched transposed rhs (attention's k^T): numpy's stacked loop is ~1.3x slower on
        # it than a copy and a product of contiguous matrices
        rhs = np.ascontiguousarray(rhs)
    work = max(lhs.size * rhs.shape[-1], rhs.size * lhs.shape[-2])
    if work >= small:
        return np.asarray(np.matmul(lhs, rhs))
    libs = [lib for lib in _openblas() if lib.get_num_threads() > 1]
    if not libs:
        return np.asarray(np.matmul(lhs, rhs))
    threads = [lib.get_num_threads() for lib in libs]
    for lib in libs:
        lib.set_num_threads(1)
    try:
        return np.asarray(np.matmul(lhs, rhs))
    finally:
        for lib, count in zip(libs, threads, strict=True):
            lib.set_num_threads(count)
