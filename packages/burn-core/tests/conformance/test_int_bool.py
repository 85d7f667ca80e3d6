"""Bitwise ops of int tensors and logical ops of bool tensors against torch."""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch

import burn

from .reference import INTS, Case, T, check_forward, op_param, rand

Bin = Callable[[Any, Any], Any]

#: op -> (method name, operator or None, torch)
BITWISE: dict[str, tuple[str, Bin | None, Bin]] = {
    "bitwise_and": ("bitwise_and", operator.and_, torch.bitwise_and),
    "bitwise_or": ("bitwise_or", operator.or_, torch.bitwise_or),
    "bitwise_xor": ("bitwise_xor", operator.xor, torch.bitwise_xor),
    "bitwise_left_shift": ("bitwise_left_shift", operator.lshift, torch.bitwise_left_shift),
    "bitwise_right_shift": ("bitwise_right_shift", operator.rshift, torch.bitwise_right_shift),
}
SHIFTS = ("bitwise_left_shift", "bitwise_right_shift")
CASES = [Case(d, ((3, 4), (3, 4))) for d in INTS] + [
    Case("int64", ((2, 3, 4), (4,)), "transposed"),
    Case("int32", ((2, 1, 4), (3, 1)), "strided"),
    Case("int64", ((), ())),
    Case("int8", ((0, 2), (2,))),
]


def _operands(name: str, case: Case, rng: np.random.Generator) -> tuple[T, T]:
    dt = case.dtype
    if name in SHIFTS:  # no overflow: small values, shift amounts 0..3
        lo = 0 if dt == "uint8" else -8
        a = rand(rng, case.shapes[0], dt, int_range=(lo, 9))
        b = rand(rng, case.shapes[1], dt, int_range=(0, 4))
    else:
        full = (0, 256) if dt == "uint8" else (-128, 128)
        a = rand(rng, case.shapes[0], dt, int_range=full)
        b = rand(rng, case.shapes[1], dt, int_range=full)
    return T(a, dt, case.layout), T(b, dt, case.layout)


@pytest.mark.parametrize("name,case", [op_param(n, c, id=f"{n}-{c.id}") for n in BITWISE
                                       for c in CASES])
def test_bitwise(name: str, case: Case, device: burn.Device, rng: np.random.Generator) -> None:
    method, op, ft = BITWISE[name]
    a, b = _operands(name, case, rng)
    check_forward(lambda x, y: getattr(x, method)(y), ft, [a, b], device)
    if op is not None:
        check_forward(op, op, [a, b], device)
    scalar = 2
    check_forward(lambda x: getattr(x, method)(scalar), lambda x: ft(x, scalar), [a], device)


#: Bit width of each int dtype (shift amounts at and past it shift everything out).
WIDTHS = {"int64": 64, "int32": 32, "int8": 8, "uint8": 8}


@pytest.mark.parametrize("name,dt", [op_param(n, d) for n in SHIFTS for d in INTS])
def test_shift_amounts_out_of_range(name: str, dt: str, device: burn.Device) -> None:
    """Amounts 0, width - 1, width, width + 8 and negative ones (as torch and numpy: a left
    shift gives 0, a right shift 0 or -1 by the sign; never the amount taken modulo the width),
    on a broadcast grid, a transposed view, 0-d and empty tensors, and as a scalar."""
    method, op, ft = BITWISE[name]
    w = WIDTHS[dt]
    top = 2 ** w - 1 if dt == "uint8" else 2 ** (w - 1) - 1
    values = [0, 1, 5, top, top - 1] if dt == "uint8" else [0, 1, -1, -5, 7, top, -top - 1]
    amounts = [0, 1, w - 1, w, w + 8] + ([200, 255] if dt == "uint8" else [-1, -w, -w - 8])
    a = T(np.array(values), dt)
    b = T(np.array(amounts)[:, None], dt)
    check_forward(lambda x, y: getattr(x, method)(y), ft, [a, b], device)
    grid = T(np.repeat(np.array(values)[None, :], len(amounts), 0), dt, "transposed")
    by = T(np.repeat(np.array(amounts)[:, None], len(values), 1), dt, "transposed")
    check_forward(op, op, [grid, by], device)
    for shape in ((), (0,)):
        x = T(np.full(shape, values[-1]), dt)
        check_forward(op, op, [x, T(np.full(shape, w), dt)], device)
    for scalar in (w - 1, w):
        check_forward(lambda x, s=scalar: getattr(x, method)(s), lambda x, s=scalar: ft(x, s),
                      [a], device)


@pytest.mark.parametrize("name,dt", [op_param("bitwise_not", d) for d in INTS])
def test_bitwise_not(name: str, dt: str, device: burn.Device, rng: np.random.Generator) -> None:
    full = (0, 256) if dt == "uint8" else (-128, 128)
    for shape, layout in (((3, 4), "transposed"), ((), "contiguous"), ((0,), "contiguous")):
        x = T(rand(rng, shape, dt, int_range=full), dt, layout)
        check_forward(lambda t: t.bitwise_not(), torch.bitwise_not, [x], device)
        check_forward(operator.invert, torch.bitwise_not, [x], device)


# ------------------------------------------------------------------------------------- bool

LOGICAL: dict[str, tuple[Bin, Bin, Bin]] = {
    "bool_and": (lambda a, b: a.bool_and(b), operator.and_, torch.logical_and),
    "bool_or": (lambda a, b: a.bool_or(b), operator.or_, torch.logical_or),
    "bool_xor": (lambda a, b: a.bool_xor(b), operator.xor, torch.logical_xor),
}
BOOL_SHAPES = [((3, 4), (3, 4), "contiguous"), ((2, 3, 4), (4,), "transposed"),
               ((2, 1, 4), (3, 1), "strided"), ((), ()), ((0, 3), (1, 3))]


@pytest.mark.parametrize("name", [op_param(n) for n in LOGICAL])
def test_logical(name: str, device: burn.Device, rng: np.random.Generator) -> None:
    method, op, ft = LOGICAL[name]
    for sa, sb, *layout in BOOL_SHAPES:
        lay = layout[0] if layout else "contiguous"
        a = T(rand(rng, sa, "bool"), "bool", lay)
        b = T(rand(rng, sb, "bool"), "bool", lay)
        check_forward(method, ft, [a, b], device)
        check_forward(op, ft, [a, b], device)


@pytest.mark.parametrize("name", [op_param(n) for n in ("bool_not", "logical_not")])
def test_bool_not(name: str, device: burn.Device, rng: np.random.Generator) -> None:
    for shape, layout in (((3, 4), "transposed"), ((), "contiguous"), ((0, 2), "contiguous"),
                          ((2, 6), "strided")):
        x = T(rand(rng, shape, "bool"), "bool", layout)
        check_forward(lambda t: getattr(t, name)(), torch.logical_not, [x], device)
        check_forward(operator.invert, torch.logical_not, [x], device)
