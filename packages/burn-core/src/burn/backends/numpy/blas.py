"""BLAS threads per call size: small matrix products run on one OpenBLAS thread.

Splitting a small product over several OpenBLAS threads costs more in synchronisation than it
saves (on a loaded 2-core machine a [64, 784] x [784, 256] product takes 30x longer on two
threads than on one). Products below `SMALL_MATMUL` multiply-adds drop numpy's OpenBLAS to one
thread for the call and restore the count after; larger ones use the configured count. Products
OpenBLAS runs on one thread by itself (`one_thread`) skip the pin and restore (threadpoolctl's
get / set costs ~3-6 us a call).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ._common import quiet

#: multiply-adds below which a product runs on one BLAS thread.
SMALL_MATMUL = 1 << 24
#: multiply-adds of a matrix-matrix product (gemm) up to which OpenBLAS runs one thread by itself
#: (`SMP_THRESHOLD_MIN * GEMM_MULTITHREAD_THRESHOLD` in its gemm interface: 65536 * 4).
GEMM_ONE_THREAD = 1 << 18
#: multiply-adds of a matrix-vector product (gemv: numpy's call where m or n is 1) below which
#: OpenBLAS runs one thread by itself (`2304 * GEMM_MULTITHREAD_THRESHOLD` in its gemv interface).
GEMV_ONE_THREAD = 2304 * 4
#: side of a square product from which numpy may call syrk (`a @ a.T` on one buffer), which
#: OpenBLAS threads from 100 (float64; 200 for float32) whatever its depth.
SYRK_MAY_THREAD = 100

_libs: list[Any] | None = None


def _openblas() -> list[Any]:
    """threadpoolctl's controllers of the OpenBLAS libraries loaded (numpy's), found once."""
    global _libs
    if _libs is None:
        from threadpoolctl import ThreadpoolController

        _libs = list(ThreadpoolController().select(internal_api="openblas").lib_controllers)
    return _libs


def multiply_adds(lhs: np.ndarray, rhs: np.ndarray) -> int:
    """The multiply-adds of np.matmul(lhs, rhs) on [..., m, k] and [..., k, n], batches (either
    operand's, broadcast) included."""
    return max(lhs.size * rhs.shape[-1], rhs.size * lhs.shape[-2])  # type: ignore[no-any-return]


def one_thread(lhs: np.ndarray, rhs: np.ndarray) -> bool:
    """Whether OpenBLAS runs np.matmul(lhs, rhs) on one thread without being told to: products
    of at most `GEMM_ONE_THREAD` multiply-adds in all (batches included), below
    `GEMV_ONE_THREAD` where numpy calls gemv, and not square from `SYRK_MAY_THREAD` on.

    Args:
        lhs: [..., m, k].
        rhs: [..., k, n].
    Returns:
        True when the product needs no thread pin.
    """
    m, n = lhs.shape[-2], rhs.shape[-1]
    work = multiply_adds(lhs, rhs)
    if m == 1 or n == 1:
        return work < GEMV_ONE_THREAD
    return work <= GEMM_ONE_THREAD and (m != n or m < SYRK_MAY_THREAD)


#: np.matmul with numpy's floating-point warnings off (NaN and inf propagate silently), for
#: products that `one_thread` lets run as they are (~0.1 us against np.errstate's ~0.7).
quiet_matmul = quiet(np.matmul)


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
    if one_thread(lhs, rhs) or multiply_adds(lhs, rhs) >= small:
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
