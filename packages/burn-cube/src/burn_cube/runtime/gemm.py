"""Matrix products on the cpu runtime: the register-blocked kernel of ``gemm.c``, built by the
runtime's compiler with the kernels' flags (cached on disk) on the first call, for float32 and
float64 matrices at any element strides, on the runtime's OpenMP threads from about 2M
multiply-adds."""

from __future__ import annotations

import ctypes
import functools
import hashlib
import math
from importlib import resources
from typing import Any

from burn_cube.errors import LaunchError
from burn_cube.runtime.base import DeviceArray, batch_offsets
from burn_cube.runtime.cpu import element_address

#: element dtype name -> the library's type name (its functions bc_gemm_<name> and
#: bc_gemm_batched_<name>).
_FUNCTIONS: dict[str, str] = {"f32": "float", "f64": "double"}
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
def _functions(runtime: Any) -> dict[str, tuple[Any, Any]]:
    """The library's entry points per element dtype name (one product, a batch), built and
    loaded once per runtime."""
    library = runtime.compile_source(_source(), "gemm", "bc_gemm_float", contract=True).library
    functions: dict[str, tuple[Any, Any]] = {}
    for dtype, name in _FUNCTIONS.items():
        one = getattr(library, f"bc_gemm_{name}")
        batched = getattr(library, f"bc_gemm_batched_{name}")
        one.argtypes, one.restype = _ARGS, ctypes.c_int
        batched.argtypes, batched.restype = _BATCHED_ARGS, ctypes.c_int
        functions[dtype] = one, batched
    return functions


def gemm(runtime: Any, a: DeviceArray, b: DeviceArray, out: DeviceArray) -> None:
    """``out[...] = a @ b`` for cpu-runtime arrays `a` [m, k] and `b` [k, n] at any element
    strides (views read in place), into `out` [m, n], contiguous along its rows (m, n, k > 0;
    float32 or float64). The arrays' addresses are the runtime's (no numpy views made:
    a ``.ctypes`` pointer costs about 0.8 us, a third of a small product).

    Args:
        runtime: the cpu runtime holding the arrays; its compiler builds the kernel.
        a: [m, k].
        b: [k, n].
        out: [m, n], element stride 1 along rows, not overlapping a or b.
    Raises:
        LaunchError: the kernel's packing buffer for `a`, or the scratch of a product run
            transposed, could not be allocated.
    """
    (m, k), n = a.shape, b.shape[1]
    sa, sb = a.strides, b.strides
    _check(_functions(runtime)[a.dtype.name][0](
        m, n, k, element_address(a), sa[0], sa[1], element_address(b), sb[0], sb[1],
        element_address(out), out.strides[0]))


def gemm_batched(runtime: Any, a: DeviceArray, b: DeviceArray, out: DeviceArray) -> None:
    """``out[...] = a @ b`` for cpu-runtime arrays `a` [..., m, k] and `b` [..., k, n] of
    `out`'s batch shape (a broadcast operand has stride 0 there) at any element strides, into
    the C-contiguous `out` [..., m, n] (m, n, k > 0; float32 or float64): small products
    on the runtime's threads across the batch.

    Args:
        runtime: the cpu runtime holding the arrays; its compiler builds the kernel.
        a: [..., m, k].
        b: [..., k, n], the batch dims of `a`.
        out: [..., m, n], C-contiguous, not overlapping a or b.
    Raises:
        LaunchError: as `gemm`.
    """
    (m, k), n = a.shape[-2:], b.shape[-1]
    batch = out.shape[:-2]
    sa, sb = a.strides, b.strides
    offsets = batch_offsets(batch, (sa[:-2], sb[:-2]))  # (held: the kernel reads them)
    _check(_functions(runtime)[a.dtype.name][1](
        math.prod(batch), offsets[0].ctypes.data, offsets[1].ctypes.data, m, n, k,
        element_address(a), sa[-2], sa[-1], element_address(b), sb[-2], sb[-1],
        element_address(out), n))


def _check(status: int) -> None:
    """Raise the kernel's failure status (1: a packing or scratch buffer not allocated)."""
    if status:
        raise LaunchError("out of host memory for the product's packing or scratch buffer", "gemm")
