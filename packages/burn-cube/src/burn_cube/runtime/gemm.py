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

#: numpy dtype -> the library's function for it.
_FUNCTIONS: dict[np.dtype, str] = {np.dtype(np.float32): "bc_gemm_float",
                                  np.dtype(np.float64): "bc_gemm_double"}
_ARGS = [ctypes.c_int64] * 3 + [ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64] * 2 + [
    ctypes.c_void_p, ctypes.c_int64]


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
def _functions(runtime: Any) -> dict[np.dtype, Any]:
    """The library's entry points, built and loaded once per runtime."""
    library = runtime.compile_source(_source(), "gemm", "bc_gemm_float").library
    functions: dict[np.dtype, Any] = {}
    for dtype, symbol in _FUNCTIONS.items():
        function = getattr(library, symbol)
        function.argtypes, function.restype = _ARGS, ctypes.c_int
        functions[dtype] = function
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
    status = _functions(runtime)[a.dtype](
        m, n, k, a.ctypes.data, a.strides[0] // item, a.strides[1] // item,
        b.ctypes.data, b.strides[0] // item, b.strides[1] // item, out.ctypes.data, n)
    if status:
        raise LaunchError("out of host memory for the product's packing or scratch buffer", "gemm")
