"""int8 / uint8 on the cube backends: the cpu holds them with torch's wraparound (kernels, no
host fallback), wgpu refuses them with the typed error (WGSL has no 8-bit scalars)."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

import burn
from burn.dtype import DType
from burn.errors import UnsupportedDTypeError
from burn.ir import OPS as OP_TABLE

Op = Callable[[Any, Any], Any]
TORCH = {"int8": torch.int8, "uint8": torch.uint8}

#: name -> (burn, torch) on two tensors of one 8-bit dtype.
OPS: dict[str, tuple[Op, Op]] = {
    "add": (lambda a, b: a + b, lambda a, b: a + b),
    "sub": (lambda a, b: a - b, lambda a, b: a - b),
    "mul": (lambda a, b: a * b, lambda a, b: a * b),
    "neg": (lambda a, b: -a, lambda a, b: -a),
    "add_300": (lambda a, b: a + 300, lambda a, b: a + 300),
    "mul_-3": (lambda a, b: a * -3, lambda a, b: a * -3),
    "mask_fill_-1": (lambda a, b: a.mask_fill(a > b, -1), lambda a, b: a.masked_fill(a > b, -1)),
    "floor_div": (lambda a, b: a // b.clamp(1, 50), lambda a, b: a // b.clamp(1, 50)),
    "remainder": (lambda a, b: a % b.clamp(1, 50), lambda a, b: a % b.clamp(1, 50)),
    "abs": (lambda a, b: a.abs(), lambda a, b: a.abs()),
    "invert": (lambda a, b: ~a, lambda a, b: ~a),
    "shift": (lambda a, b: (a << 3) >> 1, lambda a, b: (a << 3) >> 1),
    "max_pair": (lambda a, b: a.max_pair(b), torch.maximum),
    "greater": (lambda a, b: a > b, lambda a, b: a > b),
    "sum": (lambda a, b: a.sum(), lambda a, b: a.sum()),
    "sum_dim": (lambda a, b: a.sum(1), lambda a, b: a.sum(1)),
    "max_dim": (lambda a, b: a.max(0), lambda a, b: a.max(0).values),
    "argmax": (lambda a, b: a.argmax(1), lambda a, b: a.argmax(1)),
    "cumsum": (lambda a, b: a.cumsum(1), lambda a, b: a.cumsum(1)),
    "sort": (lambda a, b: a.sort(1), lambda a, b: a.sort(1).values),
    "matmul": (lambda a, b: a @ b.transpose(0, 1), lambda a, b: a @ b.t()),
    "to_float": (lambda a, b: a.float(), lambda a, b: a.float()),
    "to_int64": (lambda a, b: a.cast(burn.int64), lambda a, b: a.to(torch.int64)),
}


def _operands(dtype: str, layout: str) -> tuple[np.ndarray, np.ndarray]:
    info = np.iinfo(dtype)
    rng = np.random.default_rng(len(dtype) + len(layout))
    a, b = (rng.integers(info.min, info.max + 1, (4, 6)).astype(dtype) for _ in range(2))
    a[0, :2], b[0, :2] = (200, 100) if dtype == "uint8" else (100, -128), (100, 50)
    return a, b


def _on(device: str, x: np.ndarray, layout: str) -> burn.Tensor:
    if layout == "transposed":
        return burn.tensor(np.ascontiguousarray(x.T), device=device).transpose(0, 1)
    return burn.tensor(x, device=device)


@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
@pytest.mark.parametrize("dtype", ["int8", "uint8"])
@pytest.mark.parametrize("name", OPS)
def test_cpu_8bit_ops_wrap_as_torch(name: str, dtype: str, layout: str) -> None:
    """Each op on the cpu against torch (shape, dtype, values), on kernels only."""
    burn_op, torch_op = OPS[name]
    backend: Any = burn.Device("cpu").backend
    backend.fallbacks.clear()
    a, b = _operands(dtype, layout)
    got = burn_op(_on("cpu", a, layout), _on("cpu", b, layout))
    got = got[0] if isinstance(got, tuple) else got
    want = torch_op(torch.from_numpy(a), torch.from_numpy(b))
    out = got.to_numpy()
    assert out.shape == tuple(want.shape)
    assert out.dtype == want.numpy().dtype
    np.testing.assert_array_equal(out, want.numpy())
    assert not backend.fallbacks


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
def test_cpu_8bit_zero_dim_empty_and_casts(dtype: str) -> None:
    """0-d and empty tensors, and float -> 8-bit casts of out-of-range values, NaN and inf."""
    for shape in ((), (0,), (2, 0)):
        data = np.full(shape, 120, dtype)
        got = (burn.tensor(data, device="cpu") * 3).to_numpy()
        want = (torch.from_numpy(data) * 3).numpy()
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    floats = np.array([300.0, -1.0, -129.0, 255.5, np.nan, np.inf, -np.inf, 3e9, 2.7, -2.7],
                      np.float32)
    got = burn.tensor(floats, device="cpu").cast(dtype).to_numpy()
    want = torch.from_numpy(floats).to(TORCH[dtype]).numpy()
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", [burn.int8, burn.uint8])
def test_wgpu_refuses_8bit_ints_with_the_typed_error(dtype: burn.DType) -> None:
    """Creation and casts name the dtype and the device."""
    with pytest.raises(UnsupportedDTypeError, match="wgpu") as info:
        burn.zeros((2,), dtype=dtype, device="wgpu")
    assert info.value.details["dtype"] == dtype.value
    with pytest.raises(UnsupportedDTypeError, match=dtype.value):
        burn.ones((2,), device="wgpu").to(dtype)
    with pytest.raises(UnsupportedDTypeError, match=dtype.value):
        burn.tensor(np.zeros(3, dtype.value), device="wgpu")


def _int_kernels(dtype: DType) -> list[Any]:
    """The IR of every int op-table row's elementwise kernel for `dtype` (rank 2; clamp with
    both bounds, casts to int64 and float32)."""
    from burn.ir.cube import elementwise_kernel

    kernels = []
    for name, op in OP_TABLE.items():
        if op.cube is None or not name.startswith("int_"):
            continue
        tensors = {p.name: DType.bool if p.type == "B" else dtype for p in op.params
                   if p.is_tensor}
        fixed = tuple((p.name, DType.float32 if name == "int_into_float" else DType.int64)
                      for p in op.params if p.type == "dtype")
        out = op.result_dtypes(tensors, dict(fixed))[0]
        kernel = elementwise_kernel(op, (*tensors.values(), out), 2, fixed)
        kernels.append(kernel.kernel)
    return kernels


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_8bit_int_kernels_compile_for_cuda(tmp_path: Path) -> None:
    """Every int elementwise kernel for int8 and uint8 as CUDA C, compiled by nvcc in one
    translation unit (the cuda runtime compiles the same text with NVRTC)."""
    from burn_cube.codegen import generate
    from burn_cube.codegen.cuda import entry_point
    from burn_cube.codegen.table_cuda import PRELUDE

    parts = []
    for k, ir in enumerate(_int_kernels(DType.int8) + _int_kernels(DType.uint8)):
        entry = entry_point(ir)
        src = generate(ir, "cuda").replace(f"{entry}(", f"{entry}_{k}(")
        assert src.count(PRELUDE) == 1, ir.name
        parts.append(src if k == 0 else src.replace(PRELUDE, ""))
    path = tmp_path / "int8.cu"
    path.write_text("\n".join(parts))
    proc = subprocess.run(["nvcc", "-c", "-arch=sm_90", "-std=c++17", "-o",
                           str(tmp_path / "int8.o"), str(path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[:4000]
