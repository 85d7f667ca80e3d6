"""Elementwise math of float tensors (exp ... is_inf) against torch, forward and backward."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch

import burn

from .reference import (
    GRAD_DTYPES,
    Case,
    Domain,
    T,
    check_backward,
    check_forward,
    op_param,
    rand,
)

Fn = Callable[[Any], Any]

#: op -> (burn, torch, domain of the inputs). Domains avoid kinks, poles and domain edges.
UNARY: dict[str, tuple[Fn, Fn, Domain]] = {
    "exp": (lambda x: x.exp(), torch.exp, Domain(-3, 3)),
    "log": (lambda x: x.log(), torch.log, Domain(0.1, 5)),
    "log1p": (lambda x: x.log1p(), torch.log1p, Domain(-0.8, 5)),
    "sqrt": (lambda x: x.sqrt(), torch.sqrt, Domain(0.1, 5)),
    "abs": (lambda x: x.abs(), torch.abs, Domain(-3, 3, avoid="zero")),
    "sign": (lambda x: x.sign(), torch.sign, Domain(-3, 3, avoid="zero")),
    "sin": (lambda x: x.sin(), torch.sin, Domain(-3, 3)),
    "cos": (lambda x: x.cos(), torch.cos, Domain(-3, 3)),
    "tan": (lambda x: x.tan(), torch.tan, Domain(-1.2, 1.2)),
    "sinh": (lambda x: x.sinh(), torch.sinh, Domain(-3, 3)),
    "cosh": (lambda x: x.cosh(), torch.cosh, Domain(-3, 3)),
    "tanh": (lambda x: x.tanh(), torch.tanh, Domain(-3, 3)),
    "asin": (lambda x: x.asin(), torch.asin, Domain(-0.9, 0.9)),
    "acos": (lambda x: x.acos(), torch.acos, Domain(-0.9, 0.9)),
    "atan": (lambda x: x.atan(), torch.atan, Domain(-3, 3)),
    "asinh": (lambda x: x.asinh(), torch.asinh, Domain(-3, 3)),
    "acosh": (lambda x: x.acosh(), torch.acosh, Domain(1.1, 4)),
    "atanh": (lambda x: x.atanh(), torch.atanh, Domain(-0.9, 0.9)),
    "erf": (lambda x: x.erf(), torch.erf, Domain(-2, 2)),
    "round": (lambda x: x.round(), torch.round, Domain(-4, 4, avoid="half")),
    "floor": (lambda x: x.floor(), torch.floor, Domain(-4, 4, avoid="int")),
    "ceil": (lambda x: x.ceil(), torch.ceil, Domain(-4, 4, avoid="int")),
    "trunc": (lambda x: x.trunc(), torch.trunc, Domain(-4, 4, avoid="int")),
}

FORWARD_CASES = [
    Case("float32", ((3, 4),)),
    Case("float64", ((2, 3, 4),), "transposed"),
    Case("float16", ((7,),)),
    Case("bfloat16", ((2, 5),), "strided"),
    Case("float32", ((),)),
    Case("float32", ((0, 3),)),
]
BACKWARD_CASES = [Case("float64", ((3, 4),), "transposed"), Case("float32", ((2, 3),))]


@pytest.mark.parametrize(
    "name,case", [op_param(n, c, id=f"{n}-{c.id}") for n in UNARY for c in FORWARD_CASES])
def test_unary_forward(name: str, case: Case, device: burn.Device,
                       rng: np.random.Generator) -> None:
    fb, ft, dom = UNARY[name]
    x = T(rand(rng, case.shapes[0], case.dtype, dom), case.dtype, case.layout)
    check_forward(fb, ft, [x], device)


@pytest.mark.parametrize(
    "name,case", [op_param(n, c, id=f"{n}-{c.id}") for n in UNARY for c in BACKWARD_CASES])
def test_unary_backward(name: str, case: Case, grad_device: burn.Device,
                        rng: np.random.Generator) -> None:
    fb, ft, dom = UNARY[name]
    x = T(rand(rng, case.shapes[0], case.dtype, dom), case.dtype, case.layout)
    check_backward(fb, ft, [x], grad_device, rng)


@pytest.mark.parametrize("name,dtype", [op_param(n, d) for n in ("abs", "sign")
                                        for d in ("int64", "int32", "int8")])
def test_int_abs_sign(name: str, dtype: str, device: burn.Device,
                      rng: np.random.Generator) -> None:
    fb, ft, _ = UNARY[name]
    check_forward(fb, ft, [T(rand(rng, (3, 4), dtype), dtype, "transposed")], device)


@pytest.mark.op("abs")
def test_abs_operator_and_zero(device: burn.Device) -> None:
    """`abs(t)` (builtin) and sign(0) == 0."""
    x = T(np.array([-1.5, 0.0, 2.0, -0.0]), "float32")
    check_forward(lambda t: abs(t), torch.abs, [x], device)
    check_forward(lambda t: t.sign(), torch.sign, [x], device)


# ------------------------------------------------------------------------------ binary math

BINARY: dict[str, tuple[Callable[[Any, Any], Any], Callable[[Any, Any], Any], Domain, Domain]] = {
    "atan2": (lambda a, b: a.atan2(b), torch.atan2, Domain(-2, 2, avoid="zero"),
              Domain(-2, 2, avoid="zero")),
    "hypot": (lambda a, b: a.hypot(b), torch.hypot, Domain(-2, 2, avoid="zero"),
              Domain(-2, 2, avoid="zero")),
}
BINARY_CASES = [
    Case("float32", ((3, 4), (3, 4))),
    Case("float64", ((2, 3, 4), (4,)), "transposed"),
    Case("float32", ((2, 1, 4), (3, 1))),
    Case("float16", ((5,), (5,))),
    Case("bfloat16", ((2, 3), (2, 3)), "strided"),
    Case("float32", ((), (2, 3))),
    Case("float32", ((0, 3), (1, 3))),
]


@pytest.mark.parametrize(
    "name,case", [op_param(n, c, id=f"{n}-{c.id}") for n in BINARY for c in BINARY_CASES])
def test_binary_math_forward(name: str, case: Case, device: burn.Device,
                             rng: np.random.Generator) -> None:
    fb, ft, da, db = BINARY[name]
    a = T(rand(rng, case.shapes[0], case.dtype, da), case.dtype, case.layout)
    b = T(rand(rng, case.shapes[1], case.dtype, db), case.dtype, case.layout)
    check_forward(fb, ft, [a, b], device)


@pytest.mark.parametrize("name,dtype", [op_param(n, d) for n in BINARY for d in GRAD_DTYPES])
def test_binary_math_backward(name: str, dtype: str, grad_device: burn.Device,
                              rng: np.random.Generator) -> None:
    fb, ft, da, db = BINARY[name]
    a = T(rand(rng, (2, 3, 4), dtype, da), dtype, "transposed")
    b = T(rand(rng, (3, 1), dtype, db), dtype)
    check_backward(fb, ft, [a, b], grad_device, rng)


# --------------------------------------------------------------------------- is_nan / is_inf

SPECIAL = np.array([[0.0, np.nan, 1.5, -np.inf], [np.inf, -2.0, np.nan, 3.0e3]])


@pytest.mark.parametrize("name,dtype", [op_param(n, d) for n in ("is_nan", "is_inf")
                                        for d in ("float32", "float64", "float16", "bfloat16")])
def test_is_nan_is_inf(name: str, dtype: str, device: burn.Device) -> None:
    alias = {"is_nan": "isnan", "is_inf": "isinf"}[name]
    ft = getattr(torch, alias)
    x = T(SPECIAL, dtype, "transposed")
    check_forward(lambda t: getattr(t, name)(), ft, [x], device)
    check_forward(lambda t: getattr(t, alias)(), ft, [x], device)
    check_forward(lambda t: getattr(t, name)(), ft, [T(np.zeros((0, 2)), dtype)], device)


@pytest.mark.op("log")
def test_nan_propagates(device: burn.Device) -> None:
    """exp / sqrt / log of nan and out-of-domain values give nan / inf as torch."""
    x = T(np.array([np.nan, -1.0, 0.0, np.inf]), "float32")
    for fb, ft in ((lambda t: t.sqrt(), torch.sqrt), (lambda t: t.log(), torch.log),
                   (lambda t: t.exp(), torch.exp)):
        check_forward(fb, ft, [x], device)

