"""The cube backends' elementwise launch path (`run_elementwise`): dense inputs as rank-1 views,
as `Line`s where dtypes, sizes and offsets allow, strided and broadcast inputs read in place,
empty and 0-d tensors; against torch on cpu and wgpu, every op on its kernel."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

import burn
from burn.backends.cube import elementwise
from burn.backends.cube.tensor import CubeTensor
from burn.dtype import DType

DEVICES = ["cpu", "wgpu"]
EDGES = np.array([-np.inf, -3.5, -1.0, -0.0, 0.0, 0.5, 2.0, np.inf, np.nan, 1e30], np.float32)


def prim(t: burn.Tensor) -> CubeTensor:
    return t._prim  # type: ignore[attr-defined,no-any-return]


def backend(name: str) -> Any:
    return burn.Device(name).backend


def spec_lanes(op: str) -> set[tuple[int, int, bool]]:
    """The (rank, lanes, rows) kernels built so far for `op`."""
    return {key for (name, *_), spec in elementwise._SPECS.items() if name == op
            for key, kern in spec.kernels.items() if kern is not None}


def check(got: burn.Tensor, ref: torch.Tensor) -> None:
    expected = ref.numpy()
    data = got.to_numpy()
    assert data.shape == expected.shape and data.dtype == expected.dtype
    np.testing.assert_allclose(data, expected, rtol=2e-6, atol=1e-6, equal_nan=True)


@pytest.mark.parametrize("name", DEVICES)
def test_dense_inputs_run_as_lines(name: str) -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 256)).astype(np.float32)
    y = rng.standard_normal((64, 256)).astype(np.float32)
    be = backend(name)
    be.fallbacks.clear()
    a, b = burn.tensor(x, device=name), burn.tensor(y, device=name)
    check(a + b, torch.from_numpy(x) + torch.from_numpy(y))
    check(a * 2.5 - b, torch.from_numpy(x) * 2.5 - torch.from_numpy(y))
    check((a * b).exp(), torch.exp(torch.from_numpy(x) * torch.from_numpy(y)))
    assert (1, 4, False) in spec_lanes("float_add") and (1, 4, False) in spec_lanes("float_exp")
    assert be.fallbacks["float_add"] == be.fallbacks["float_exp"] == 0


@pytest.mark.parametrize("name", DEVICES)
@pytest.mark.parametrize("size", [1, 3, 6, 8, 1027, 4096])
def test_sizes_and_offsets_that_do_not_fit_lines(name: str, size: int) -> None:
    """Any size; slices whose offset is not a multiple of the line width; edge values."""
    x = np.resize(EDGES, size + 3)
    be = backend(name)
    be.fallbacks.clear()
    t = burn.tensor(x, device=name)
    ref = torch.from_numpy(x)
    for lo in (0, 1, 3):
        part = t[lo:lo + size]
        check(part + part, ref[lo:lo + size] + ref[lo:lo + size])
        check(part.abs() * -1.5, ref[lo:lo + size].abs() * -1.5)
    assert be.fallbacks["float_add"] == be.fallbacks["float_mul_scalar"] == 0


@pytest.mark.parametrize("name", DEVICES)
def test_strided_broadcast_empty_and_zero_dim(name: str) -> None:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((8, 12)).astype(np.float32)
    row = rng.standard_normal((12,)).astype(np.float32)
    be = backend(name)
    be.fallbacks.clear()
    t, r = burn.tensor(x, device=name), burn.tensor(row, device=name)
    tx, tr = torch.from_numpy(x), torch.from_numpy(row)
    check(t.transpose(0, 1) + t.transpose(0, 1), tx.T + tx.T)
    check(t + r, tx + tr)
    check(t[:, ::3] * t[:, 1::3], tx[:, ::3] * tx[:, 1::3])
    empty = burn.tensor(np.zeros((0, 4), np.float32), device=name)
    check(empty + empty, torch.zeros((0, 4)) + torch.zeros((0, 4)))
    scalar = burn.tensor(np.array(1.5, np.float32), device=name)
    check(scalar * scalar, torch.tensor(1.5) * torch.tensor(1.5))
    check(scalar + t, torch.tensor(1.5) + tx)
    assert be.fallbacks["float_add"] == be.fallbacks["float_mul"] == 0


@pytest.mark.parametrize("name", DEVICES)
def test_broadcast_and_strided_rows(name: str) -> None:
    """Layouts that are not dense run by rows (2-d grid) where the last dimension is long:
    bias rows (in lines where every view reads as whole lines), column broadcasts (stride 0 on
    the last dimension), transposes, 3-d, a partial last cube, views off a line boundary, and
    a row count past the 2-d path's limit."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((6, 40, 300)).astype(np.float32)
    bias = rng.standard_normal(300).astype(np.float32)
    col = rng.standard_normal((40, 1)).astype(np.float32)
    be = backend(name)
    be.fallbacks.clear()
    t, b, c = (burn.tensor(v, device=name) for v in (x, bias, col))
    tx, tb, tc = (torch.from_numpy(v) for v in (x, bias, col))
    check(t + b, tx + tb)
    check(t * c, tx * tc)
    check(t.transpose(1, 2) - b.reshape([300, 1]), tx.transpose(1, 2) - tb.reshape(300, 1))
    check(t[:, ::2, 5:] * 2.0, tx[:, ::2, 5:] * 2.0)
    check(t[:, :, 1:] + b[1:], tx[:, :, 1:] + tb[1:])  # rows off a line boundary
    assert (3, 4, True) in spec_lanes("float_add") and (3, 1, True) in spec_lanes("float_add")
    assert (3, 1, True) in spec_lanes("float_mul")  # the column: not lines along the row
    tall = rng.standard_normal((70000, 33)).astype(np.float32)
    check(burn.tensor(tall, device=name) + b[:33], torch.from_numpy(tall) + tb[:33])
    assert be.fallbacks["float_add"] == be.fallbacks["float_mul"] == 0
    assert be.fallbacks["float_sub"] == be.fallbacks["float_mul_scalar"] == 0


@pytest.mark.parametrize("name", DEVICES)
def test_ops_without_a_line_form_and_other_dtypes(name: str) -> None:
    """Comparisons, selects (relu), casts and ints keep the scalar kernel on dense inputs."""
    rng = np.random.default_rng(2)
    x = rng.standard_normal(64).astype(np.float32)
    k = rng.integers(-50, 50, 64).astype(np.int32)
    be = backend(name)
    be.fallbacks.clear()
    t, tk = burn.tensor(x, device=name), burn.tensor(k, device=name)
    tx = torch.from_numpy(x)
    check(t > 0.25, tx > 0.25)
    check(burn.functional.relu(t), torch.relu(tx))
    check(t.int(), tx.to(torch.int64))
    check(tk * 3 + tk, torch.from_numpy(k) * 3 + torch.from_numpy(k))
    assert be.fallbacks["float_greater_elem"] == be.fallbacks["int_mul_scalar"] == 0


def test_float64_lines_on_cpu() -> None:
    x = np.linspace(-3, 3, 1024)
    t = burn.tensor(x, device="cpu")
    got = (t * t + 1.0).log()
    assert got.dtype == DType.float64
    np.testing.assert_allclose(got.to_numpy(), np.log(x * x + 1.0), rtol=1e-14)


def test_line_and_row_kernels_generate_cuda() -> None:
    spec = elementwise._spec(burn.ir.OPS["float_add"], [prim(burn.tensor(np.zeros(4, np.float32),
                                                                    device="cpu"))] * 2, ())
    x = np.zeros(64, np.float32)
    assert "float4" in spec.kernel(1, 4).source("cuda", 256, x, x, x)
    rows = spec.kernel(2, 1, rows=True).source("cuda", 256, *[x.reshape(8, 8)] * 3)
    assert "blockIdx" in rows
