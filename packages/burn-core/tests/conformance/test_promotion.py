"""Result dtypes of binary ops against torch.result_type, over every pair of burn dtypes, for
tensors with dims, 0-d tensors and Python scalars."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

import burn

from .reference import BURN_TO_TORCH, DTYPES, TORCH_TO_BURN, T, check_forward

#: torch dtypes burn lacks, and what burn gives instead (documented in docs/differences.md).
NARROWER_IN_TORCH = {torch.int16: burn.int32}
PAIRS = list(itertools.product(DTYPES, DTYPES))
SCALARS = [True, 3, 2.5]


def _expected(a: torch.Tensor, b: torch.Tensor | bool | int | float) -> burn.DType:
    want = torch.result_type(a, b)
    return NARROWER_IN_TORCH.get(want, TORCH_TO_BURN.get(want))  # type: ignore[return-value]


@pytest.mark.op("add")
@pytest.mark.parametrize("shape_a,shape_b", [((2,), (2,)), ((2,), ()), ((), (2,)), ((), ())],
                         ids=["dims-dims", "dims-0d", "0d-dims", "0d-0d"])
def test_result_type_of_tensor_pairs(shape_a: tuple[int, ...], shape_b: tuple[int, ...],
                                     device: burn.Device) -> None:
    mismatches = []
    for da, db in PAIRS:
        if not (device.backend.supports(DTYPES[da]) and device.backend.supports(DTYPES[db])):
            continue  # a dtype the device cannot hold (its refusal is tested elsewhere)
        ta = torch.ones(shape_a, dtype=BURN_TO_TORCH[DTYPES[da]])
        tb = torch.ones(shape_b, dtype=BURN_TO_TORCH[DTYPES[db]])
        a = burn.ones(shape_a, dtype=DTYPES[da], device=device)
        b = burn.ones(shape_b, dtype=DTYPES[db], device=device)
        got = (a + b).dtype
        if got != _expected(ta, tb):
            mismatches.append((da, db, got, _expected(ta, tb)))
    assert not mismatches, f"(lhs, rhs, burn, torch): {mismatches}"


@pytest.mark.op("add")
@pytest.mark.parametrize("shape", [(2,), ()], ids=["dims", "0d"])
def test_result_type_with_python_scalars(shape: tuple[int, ...], device: burn.Device) -> None:
    mismatches = []
    for name, scalar in itertools.product(DTYPES, SCALARS):
        if not device.backend.supports(DTYPES[name]):
            continue  # a dtype the device cannot hold (its refusal is tested elsewhere)
        t = torch.ones(shape, dtype=BURN_TO_TORCH[DTYPES[name]])
        x = burn.ones(shape, dtype=DTYPES[name], device=device)
        for got in ((x + scalar).dtype, (scalar * x).dtype):
            if got != _expected(t, scalar):
                mismatches.append((name, scalar, got, _expected(t, scalar)))
    assert not mismatches, f"(tensor, scalar, burn, torch): {mismatches}"


@pytest.mark.op("add")
@pytest.mark.parametrize("lhs,rhs", [("float32", "float64"), ("int8", "float64"),
                                     ("uint8", "int64"), ("float16", "int64"),
                                     ("bool", "int32")])
def test_zero_dim_operand_values(lhs: str, rhs: str, device: burn.Device,
                                 rng: np.random.Generator) -> None:
    """A 0-d operand of a wider dtype of the same category does not widen the result."""
    a = T(rng.integers(0, 5, size=(3, 2)), lhs)
    b = T(np.array(3), rhs)
    check_forward(lambda x, y: x + y, lambda x, y: x + y, [a, b], device)
    check_forward(lambda x, y: y * x, lambda x, y: y * x, [a, b], device)
    check_forward(lambda x, y: burn.where(x > 1, x, y), lambda x, y: torch.where(x > 1, x, y),
                  [a, b], device)


@pytest.mark.op("add")
def test_bool_arithmetic_stays_bool(device: burn.Device) -> None:
    a = T(np.array([True, True, False, False]), "bool")
    b = T(np.array([True, False, True, False]), "bool")
    check_forward(lambda x, y: x + y, lambda x, y: x + y, [a, b], device)
    check_forward(lambda x, y: x * y, lambda x, y: x * y, [a, b], device)
    check_forward(lambda x, _: x + True, lambda x, _: x + True, [a, b], device)
    check_forward(lambda x, _: x * 2, lambda x, _: x * 2, [a, b], device)
    with pytest.raises(RuntimeError):
        a_t = torch.tensor([True]) - torch.tensor([False])  # noqa: F841
    x = burn.tensor([True, False], device=device)
    with pytest.raises(burn.errors.DTypeError, match="sub"):
        x - x
