"""Comparisons (equal ... lower_equal, operators, any / all) against torch."""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch

import burn

from .reference import Case, T, check_forward, op_param, rand

#: op -> (method name, operator, torch)
COMPARISONS: dict[str, tuple[str, Callable[[Any, Any], Any], Callable[[Any, Any], Any]]] = {
    "equal": ("equal", operator.eq, torch.eq),
    "not_equal": ("not_equal", operator.ne, torch.ne),
    "greater": ("greater", operator.gt, torch.gt),
    "greater_equal": ("greater_equal", operator.ge, torch.ge),
    "lower": ("lower", operator.lt, torch.lt),
    "lower_equal": ("lower_equal", operator.le, torch.le),
}
CASES = [
    Case("float32", ((3, 4), (3, 4))),
    Case("float64", ((2, 3, 4), (4,)), "transposed"),
    Case("float16", ((2, 1, 4), (3, 1))),
    Case("bfloat16", ((5,), (5,)), "strided"),
    Case("int64", ((3, 4), (4,)), "transposed"),
    Case("int32", ((2, 3), (2, 3))),
    Case("int8", ((4,), ())),
    Case("uint8", ((2, 3), (3,))),
    Case("float32", ((), ())),
    Case("int64", ((0, 3), (1, 3))),
]


def _ties(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    """Small integral values (as floats for float dtypes) so that ties are frequent."""
    return rand(rng, shape, "int64", int_range=(0, 3)).astype(rand(rng, (), dtype).dtype)


@pytest.mark.parametrize("name,case", [op_param(n, c, id=f"{n}-{c.id}") for n in COMPARISONS
                                       for c in CASES])
def test_compare(name: str, case: Case, device: burn.Device, rng: np.random.Generator) -> None:
    method, op, ft = COMPARISONS[name]
    a = T(_ties(rng, case.shapes[0], case.dtype), case.dtype, case.layout)
    b = T(_ties(rng, case.shapes[1], case.dtype), case.dtype, case.layout)
    check_forward(lambda x, y: getattr(x, method)(y), ft, [a, b], device)
    check_forward(op, op, [a, b], device)
    scalar: int | float = 1 if "int" in case.dtype else 1.0
    check_forward(lambda x: getattr(x, method)(scalar), lambda x: ft(x, scalar), [a], device)
    check_forward(lambda x: op(x, scalar), lambda x: op(x, scalar), [a], device)


@pytest.mark.parametrize("name", [op_param(n) for n in ("equal", "not_equal")])
def test_compare_bool(name: str, device: burn.Device, rng: np.random.Generator) -> None:
    method, op, ft = COMPARISONS[name]
    a = T(rand(rng, (3, 4), "bool"), "bool", "transposed")
    b = T(rand(rng, (4,), "bool"), "bool")
    check_forward(lambda x, y: getattr(x, method)(y), ft, [a, b], device)
    check_forward(op, op, [a, b], device)


@pytest.mark.parametrize("name", [op_param(n) for n in ("equal", "greater")])
def test_compare_mixed_dtypes(name: str, device: burn.Device, rng: np.random.Generator) -> None:
    """Comparisons across dtypes promote first (int vs float compares as float)."""
    method, op, ft = COMPARISONS[name]
    a = T(_ties(rng, (3, 4), "int64"), "int64")
    b = T(_ties(rng, (3, 4), "float32") + 0.5 * (rng.random((3, 4)) < 0.5), "float32")
    check_forward(lambda x, y: getattr(x, method)(y), ft, [a, b], device)
    check_forward(lambda x: op(x, 1.5), lambda x: op(x, 1.5), [a], device)


@pytest.mark.parametrize("name", [op_param(n) for n in ("equal", "lower")])
def test_compare_nan(name: str, device: burn.Device) -> None:
    method, _, ft = COMPARISONS[name]
    a = T(np.array([np.nan, 1.0, np.inf, -np.inf]), "float32")
    b = T(np.array([np.nan, 1.0, np.inf, 0.0]), "float32")
    check_forward(lambda x, y: getattr(x, method)(y), ft, [a, b], device)


# ---------------------------------------------------------------------------------- any / all

ANY_ALL_DTYPES = [("bool", "contiguous"), ("bool", "transposed"), ("float32", "strided"),
                  ("int64", "contiguous"), ("float64", "transposed")]


def _sparse(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    """Mostly-true data with a few falses / zeros, so any / all differ between lines."""
    keep = rng.random(shape) < 0.8
    if dtype == "bool":
        return keep
    return (rand(rng, shape, dtype, int_range=(1, 4)) * keep)


@pytest.mark.parametrize("name,dtype,layout", [op_param(n, d, lay) for n in ("any", "all")
                                               for d, lay in ANY_ALL_DTYPES])
def test_any_all(name: str, dtype: str, layout: str, device: burn.Device,
                 rng: np.random.Generator) -> None:
    ft = getattr(torch, name)
    x = T(_sparse(rng, (3, 4, 5), dtype), dtype, layout)
    check_forward(lambda a: getattr(a, name)(), ft, [x], device)
    for dim in (0, 2, -1, (0, 2)):
        for keepdim in (False, True):
            check_forward(lambda a, d=dim, k=keepdim: getattr(a, name)(d, keepdim=k),
                          lambda a, d=dim, k=keepdim: ft(a, dim=d, keepdim=k), [x], device)
    check_forward(lambda a: getattr(a, name)(dim=1), lambda a: ft(a, dim=1), [x], device)
    for shape in ((0, 3), ()):
        y = T(_sparse(rng, shape, dtype), dtype)
        check_forward(lambda a: getattr(a, name)(), ft, [y], device)
    check_forward(lambda a: getattr(a, name)(0), lambda a: ft(a, 0),
                  [T(_sparse(rng, (0, 3), dtype), dtype)], device)


@pytest.mark.parametrize("name,dtype,layout", [op_param(n, d, lay) for n in ("any_dim", "all_dim")
                                               for d, lay in ANY_ALL_DTYPES])
def test_any_all_dim(name: str, dtype: str, layout: str, device: burn.Device,
                     rng: np.random.Generator) -> None:
    """any_dim / all_dim keep the reduced dim (Burn)."""
    ft = getattr(torch, name.removesuffix("_dim"))
    x = T(_sparse(rng, (3, 4, 5), dtype), dtype, layout)
    for dim in (0, 1, 2, -1):
        check_forward(lambda a, d=dim: getattr(a, name)(d),
                      lambda a, d=dim: ft(a, dim=d, keepdim=True), [x], device)
