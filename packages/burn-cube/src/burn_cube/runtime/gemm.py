"""Matrix products on the cpu runtime: the register-blocked kernel of ``gemm.c``, built by the
runtime's compiler with the kernels' flags (cached on disk) on the first call, for float32 and
float64 matrices at any element strides, on the runtime's OpenMP threads from about 2M
multiply-adds."""

from __future__ import annotations

import ctypes
import functools
import hashlib
from importlib import resources
from typing import Any

import numpy as np

from burn_cube.errors import LaunchError

#: numpy dtype -> the library's type name (its functions bc_gemm_<name> and
#: bc_gemm_batched_<name>).
_FUNCTIONS: dict[np.dtype, str] = {np.dtype(np.float32): "float", np.dtype(np.float64): "double"}
#: (m, n, k, a, its row and column strides, b and its strides, c, its row stride)
_ARGS = [ctypes.c_int64] * 3 + [ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64] * 2 + [
    ctypes.c_void_p, ctypes.c_int64]
#: (batch, a's offsets, b's offsets, then `_ARGS`)
_BATCHED_ARGS = [ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p, *_ARGS]


@functools.cache
def _source() -> str:
    """gemm.c, read from the package once."""
    return resources.files("burn_cube.runtime").joinpath("gemm.c").read_text()


@functools.cache
def identity() -> str:
    """A short hash of the kernel's source: tuned choices between it and others are kept per
    version of it."""
    return hashlib.sha256(_source().encode()).hexdigest()[:12]


@functools.cache
def _functions(runtime: Any) -> dict[np.dtype, tuple[Any, Any]]:
    """The library's entry points per dtype (one product, a batch), built and loaded once per
    runtime."""
    library = runtime.compile_source(_source(), "gemm", "bc_gemm_float").library
    functions: dict[np.dtype, tuple[Any, Any]] = {}
    for dtype, name in _FUNCTIONS.items():
        one = getattr(library, f"bc_gemm_{name}")
        batched = getattr(library, f"bc_gemm_batched_{name}")
        one.argtypes, one.restype = _ARGS, ctypes.c_int
        batched.argtypes, batched.restype = _BATCHED_ARGS, ctypes.c_int
        functions[dtype] = one, batched
    return functions


def supports(dtype: np.dtype) -> bool:
    """Whether `gemm` multiplies matrices of `dtype` (float32, float64)."""
    return dtype in _FUNCTIONS


def gemm(runtime: Any, a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    """``out[...] = a @ b`` for 2-d `a` [m, k] and `b` [k, n] at any strides (element-aligned),
    into the C-contiguous `out` [m, n] (m, n, k > 0; one dtype of `supports`).

    Args:
        runtime: the cpu runtime whose compiler builds the kernel.
        a: [m, k].
        b: [k, n].
        out: [m, n], C-contiguous, not overlapping a or b.
    Raises:
        LaunchError: the kernel's packing buffer for `a`, or the scratch of a product run
            transposed, could not be allocated.
    """
    item = a.itemsize
    (m, k), n = a.shape, b.shape[1]
    status = _functions(runtime)[a.dtype][0](
        m, n, k, a.ctypes.data, a.strides[0] // item, a.strides[1] // item,
        b.ctypes.data, b.strides[0] // item, b.strides[1] // item, out.ctypes.data, n)
    _check(status)


def gemm_batched(runtime: Any, a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    """``out[...] = a @ b`` for `a` [..., m, k] and `b` [..., k, n] of one batch shape (a
    broadcast operand has stride 0 there) at any element-aligned strides, into the
    C-contiguous `out` [..., m, n] (m, n, k > 0; one dtype of `supports`): small products on
    the runtime's threads across the batch.

    Args:
        runtime: the cpu runtime whose compiler builds the kernel.
        a: [..., m, k].
        b: [..., k, n], the batch dims of `a`.
        out: [..., m, n], C-contiguous, not overlapping a or b.
    Raises:
        LaunchError: as `gemm`.
    """
    item = a.itemsize
    (m, k), n = a.shape[-2:], b.shape[-1]
    batch = out.size // (m * n)
    a_offsets, b_offsets = _offsets(a), _offsets(b)  # (held: the kernel reads them)
    status = _functions(runtime)[a.dtype][1](
        batch, a_offsets.ctypes.data, b_offsets.ctypes.data, m, n, k, a.ctypes.data,
        a.strides[-2] // item, a.strides[-1] // item, b.ctypes.data, b.strides[-2] // item,
        b.strides[-1] // item, out.ctypes.data, n)
    _check(status)


def _offsets(x: np.ndarray) -> np.ndarray:
    """The element offset of each matrix of `x` [..., r, c] from its first element's, in
    C order of the batch dims (int64)."""
    offsets = np.zeros(x.shape[:-2], np.int64)
    for dim, (size, stride) in enumerate(zip(x.shape[:-2], x.strides[:-2], strict=True)):
        step = np.arange(size, dtype=np.int64) * (stride // x.itemsize)
        offsets += step.reshape((size,) + (1,) * (x.ndim - 3 - dim))
    return offsets.reshape(-1)


def _check(status: int) -> None:
    """Raise the kernel's failure status (1: a packing or scratch buffer not allocated)."""
    if status:
        raise LaunchError("out of host memory for the product's packing or scratch buffer", "gemm")
