"""Every elementwise row of the op table, lowered to a burn-cube kernel with the IR builder and
run on burn-cube's runtimes (cpu; wgpu through llvmpipe), equals the NumPy backend; inputs are
read in place as broadcast (stride 0) and transposed views."""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pytest

import burn
import burn_cube
from burn.backends.numpy import NumpyBackend
from burn.dtype import DType, Kind
from burn.ir import OPS
from burn.ir.cube import CUBE_DTYPES, elementwise_kernel

RUNTIMES = [r for r in os.environ.get("BURN_CUBE_RUNTIMES", "cpu").split(",") if r]
SHAPE = (3, 5)
# Functions whose burn-cube form is a different algorithm than numpy's (tolerance per op).
LOOSE = {"float_erf", "float_asinh", "float_acosh", "float_atanh", "float_tan", "float_powf",
         "float_powf_scalar", "float_remainder", "float_remainder_scalar"}
# Vulkan leaves the precision of asin / acos to the driver: llvmpipe's are off by ~4e-4.
LOOSE_WGPU = {"float_asin", "float_acos"}
LOWERED = sorted(n for n, row in OPS.items() if row.cube is not None and
                 not n.endswith(("_into_int", "_into_float")))


def _values(row: Any, kind: Kind, rng: np.random.Generator, name: str) -> np.ndarray:
    """A [5] row vector (broadcast along dim 0) for `rhs`-like inputs, else [5, 3] transposed:
    both are views, not contiguous [3, 5] arrays."""
    broadcast = name in ("rhs", "mask", "weight")
    shape = (SHAPE[1],) if broadcast else (SHAPE[1], SHAPE[0])
    if kind is Kind.BOOL:
        v = rng.random(shape) < 0.5
    elif kind is Kind.INT:
        v = rng.integers(-20, 21, shape)
        v = np.where(v == 0, 3, v) if name == "rhs" else v
        v = np.abs(v) % 8 if "shift" in row.name and name == "rhs" else v
    else:
        positive = row.name in ("float_log", "float_sqrt", "float_powf", "float_powf_scalar")
        v = rng.uniform(0.1 if positive else -0.9, 0.9, shape) + (
            1.5 if row.name == "float_acosh" else 0.0)
    return v


def _case(name: str) -> tuple[list[Any], dict[str, Any], np.ndarray, DType]:
    row = OPS[name]
    rng = np.random.default_rng(abs(hash(name)) % 2**32)
    dtype = {Kind.FLOAT: DType.float32, Kind.INT: DType.int32, Kind.BOOL: DType.bool}
    tensors: dict[str, np.ndarray] = {}
    host: dict[str, Any] = {}
    for p in row.params:
        if p.kind is not None:
            arr = _values(row, p.kind, rng, p.name).astype(dtype[p.kind].numpy)
            tensors[p.name] = arr if arr.ndim == 1 else arr.T  # a transposed view
        elif p.type == "dtype":
            host[p.name] = DType.float64 if row.kind is Kind.FLOAT else DType.int64
        elif p.type in ("scalar", "scalar?", "float"):
            host[p.name] = (0.25 if row.kind is Kind.FLOAT or p.type == "float" else
                            (2 if "shift" in name else 3))
            if p.name == "min":  # clamp: an open lower bound
                host[p.name] = None
    backend, device = NumpyBackend(), burn.Device("numpy")
    call = [getattr(backend, f"{p.kind.value}_from_data")(
        np.ascontiguousarray(tensors[p.name]), device) if p.kind is not None else host[p.name]
        for p in row.params]
    expected = np.asarray(getattr(backend, name)(*call))
    out_dtype = backend.dtype(getattr(backend, name)(*call))
    return [tensors[p.name] for p in row.params if p.kind is not None], host, expected, out_dtype


def _view(rt: Any, arr: np.ndarray) -> Any:
    """`arr` on the device as a view of the [3, 5] output shape, read in place."""
    base = np.ascontiguousarray(arr.T if arr.ndim == 2 else arr)
    storage = rt.upload(base)
    if arr.ndim == 1:  # broadcast along dim 0: stride 0
        return storage.view(SHAPE, (0, 1))
    return storage.view(SHAPE, (1, SHAPE[0]))  # the transpose of a [5, 3] array


@pytest.mark.parametrize("runtime", RUNTIMES)
@pytest.mark.parametrize("name", LOWERED)
def test_lowered_kernel_equals_the_numpy_backend(runtime, name):
    row = OPS[name]
    inputs, host, expected, out_dtype = _case(name)
    in_dtypes = tuple(DType(str(a.dtype)) if a.dtype != np.bool_ else DType.bool
                      for a in inputs)
    fixed = tuple((k, v) for k, v in host.items() if k == "dtype" or v is None)
    kernel = elementwise_kernel(row, (*in_dtypes, out_dtype), rank=2, args=fixed)
    rt = burn_cube.runtime(runtime)
    out = rt.upload(np.zeros(SHAPE, out_dtype.numpy))
    scalars = [v for k, v in host.items() if k != "dtype" and v is not None]
    kernel.launch(rt, 1, 256, *[_view(rt, a) for a in inputs], *scalars, out)
    got = rt.download(out)
    assert got.shape == expected.shape == SHAPE and got.dtype == expected.dtype
    if out_dtype.is_float:
        tol = (1e-3 if runtime == "wgpu" and name in LOOSE_WGPU else
               2e-4 if name in LOOSE else 2e-6)
        np.testing.assert_allclose(got, expected, rtol=tol, atol=tol, err_msg=name)
    else:
        np.testing.assert_array_equal(got, expected, err_msg=name)


def test_kernels_are_cached_per_op_and_dtypes():
    row = OPS["float_add"]
    k1 = elementwise_kernel(row, (DType.float32,) * 3, rank=2)
    assert elementwise_kernel(row, (DType.float32,) * 3, rank=2) is k1
    assert elementwise_kernel(row, (DType.float64,) * 3, rank=2) is not k1


def test_a_row_without_lowering_is_refused():
    with pytest.raises(burn.errors.DTypeError, match="float_matmul: no burn-cube lowering"):
        elementwise_kernel(OPS["float_matmul"], (DType.float32,) * 3, rank=2)


def test_every_burn_dtype_has_a_cube_form():
    """int8 and uint8 included (burn-cube's i8 / u8): no dtype is refused for want of one."""
    assert set(CUBE_DTYPES) == set(DType)
