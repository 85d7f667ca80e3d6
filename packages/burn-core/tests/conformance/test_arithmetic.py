"""Arithmetic (add ... square, matmul, cross, clamp, pow) against torch: dtypes, broadcasting,
scalars, dtype promotion, empty / 0-d / non-contiguous inputs, and backward."""

from __future__ import annotations

import operator
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

Bin = Callable[[Any, Any], Any]


def _quotient_pair(rng: np.random.Generator, sa: tuple[int, ...], sb: tuple[int, ...],
                   dtype: str) -> tuple[np.ndarray, np.ndarray]:
    """a, b with b away from 0 and a / b away from integers (floor / remainder are smooth)."""
    margin = 0.1 if dtype == "bfloat16" else 0.05
    for _ in range(1000):
        a = rand(rng, sa, dtype, Domain(-3, 3))
        b = rand(rng, sb, dtype, Domain(-2, 2, avoid="zero", margin=0.5))
        q = a.astype(np.float64) / b.astype(np.float64)
        if np.all(np.abs(q - np.round(q)) > margin):
            return a, b
    raise AssertionError(f"no quotient pair for {sa} / {sb}")


#: op -> (method, operator, torch); each op is also checked with a scalar on either side.
BINARY: dict[str, tuple[Bin, Bin | None, Bin]] = {
    "add": (lambda a, b: a.add(b), operator.add, torch.add),
    "sub": (lambda a, b: a.sub(b), operator.sub, torch.sub),
    "mul": (lambda a, b: a.mul(b), operator.mul, torch.mul),
    "div": (lambda a, b: a.div(b), operator.truediv, torch.true_divide),
    "floor_div": (lambda a, b: a.floor_div(b), operator.floordiv, torch.floor_divide),
    "remainder": (lambda a, b: a.remainder(b), operator.mod, torch.remainder),
    "powf": (lambda a, b: a.powf(b), operator.pow, torch.pow),
}
QUOTIENT_OPS = ("div", "floor_div", "remainder")

FLOAT_CASES = [
    Case("float32", ((3, 4), (3, 4))),
    Case("float64", ((2, 3, 4), (4,)), "transposed"),
    Case("float32", ((2, 1, 4), (3, 1)), "strided"),
    Case("float16", ((2, 5), (2, 5))),
    Case("bfloat16", ((4, 3), (3,))),
    Case("float32", ((), (2, 3))),
    Case("float64", ((), ())),
    Case("float32", ((0, 3), (1, 3))),
]
INT_CASES = [
    Case("int64", ((3, 4), (3, 4)), "transposed"),
    Case("int32", ((2, 1, 4), (3, 1))),
    Case("int8", ((5,), (5,))),
    Case("uint8", ((2, 3), (3,))),
    Case("int64", ((0, 2), (2,))),
]


def _operands(name: str, case: Case, rng: np.random.Generator) -> tuple[T, T]:
    sa, sb = case.shapes
    dt = case.dtype
    if name == "powf":
        if dt.startswith(("int", "uint")):
            a = rand(rng, sa, dt, int_range=(0, 4))
            b = rand(rng, sb, dt, int_range=(0, 4))
        else:
            a = rand(rng, sa, dt, Domain(0.5, 2))
            b = rand(rng, sb, dt, Domain(-2, 2))
    elif name in QUOTIENT_OPS:
        if dt.startswith(("int", "uint")):
            lo = 0 if dt == "uint8" else -9
            a = rand(rng, sa, dt, int_range=(lo, 10))
            b = rand(rng, sb, dt, int_range=(1, 5))
            if dt != "uint8":
                b = b * rng.choice(np.array([-1, 1], dtype=b.dtype), size=sb)
        else:
            a, b = _quotient_pair(rng, sa, sb, dt)
    else:
        int_range = (0, 10) if dt == "uint8" else (-6, 7)
        a = rand(rng, sa, dt, int_range=int_range)
        b = rand(rng, sb, dt, int_range=int_range)
    return T(a, dt, case.layout), T(b, dt, case.layout)


def _binary_params() -> list[Any]:
    out = []
    for name in BINARY:
        for case in FLOAT_CASES:
            out.append(op_param(name, case, id=f"{name}-{case.id}"))
        for case in INT_CASES:
            if name == "sub" and case.dtype == "uint8":
                continue  # wraps around: not a comparison of semantics
            out.append(op_param(name, case, id=f"{name}-{case.id}"))
    return out


@pytest.mark.parametrize("name,case", _binary_params())
def test_binary_forward(name: str, case: Case, device: burn.Device,
                        rng: np.random.Generator) -> None:
    method, op, ft = BINARY[name]
    a, b = _operands(name, case, rng)
    if not (name == "powf" and "int" in case.dtype):  # powf is float power; ints: `**` only
        check_forward(method, ft, [a, b], device)
    if op is not None:
        check_forward(op, ft, [a, b], device)


@pytest.mark.parametrize("name,dtype", [op_param(n, d) for n in BINARY
                                        for d in ("float32", "float64", "int64", "int32")])
def test_binary_scalar(name: str, dtype: str, device: burn.Device,
                       rng: np.random.Generator) -> None:
    """tensor op scalar and scalar op tensor: the scalar never widens the tensor's dtype."""
    method, op, ft = BINARY[name]
    is_int = dtype.startswith("int")
    a, _ = _operands(name, Case(dtype, ((3, 4), (3, 4))), rng)
    scalar: float | int = 3 if is_int else 1.75
    if name == "powf" and is_int:
        scalar = 2
    else:  # powf is float power; int tensors are checked with `**`
        check_forward(lambda x: method(x, scalar), lambda x: ft(x, scalar), [a], device)
    assert op is not None
    check_forward(lambda x: op(x, scalar), lambda x: op(x, scalar), [a], device)
    if name in QUOTIENT_OPS or name == "powf":
        # scalar on the left: keep the tensor away from zero / negative bases
        a = T(rand(rng, (3, 4), dtype, Domain(0.5, 2, avoid="int"), int_range=(1, 4)), dtype)
    check_forward(lambda x: op(scalar, x), lambda x: op(scalar, x), [a], device)


@pytest.mark.parametrize("name,dtype", [op_param(n, d) for n in BINARY for d in GRAD_DTYPES])
def test_binary_backward(name: str, dtype: str, grad_device: burn.Device,
                         rng: np.random.Generator) -> None:
    method, _, ft = BINARY[name]
    if name == "floor_div":  # torch has no derivative for floor_divide: floor(a / b) is one
        ft = lambda a, b: torch.floor(torch.true_divide(a, b))  # noqa: E731
    a, b = _operands(name, Case(dtype, ((2, 3, 4), (3, 1)), "transposed"), rng)
    check_backward(method, ft, [a, b], grad_device, rng)
    a, _ = _operands(name, Case(dtype, ((3, 4), (3, 4))), rng)
    check_backward(lambda x: method(x, 1.5), lambda x: ft(x, 1.5), [a], grad_device, rng)



@pytest.mark.parametrize("dtype", GRAD_DTYPES)
@pytest.mark.op("remainder")
def test_remainder_backward_at_exact_quotients_and_infinities(
        dtype: str, grad_device: burn.Device, rng: np.random.Generator) -> None:
    """The divisor's gradient is -g q, q the quotient of the exact remainder (torch's floor
    division): where a / b rounds up to an integer (1 / 0.1), near multiples of b either
    side, over infinite divisors of either sign (-1 for a finite a of the other sign), for
    infinite dividends (NaN), zero dividends and zero divisors; broadcast. Against torch."""
    np_dtype = np.float32 if dtype == "float32" else np.float64
    inf = np.inf
    a = [1.0, 1.0, -1.0, 3.0, 0.3, -7.0, 7.0, -7.0, 7.0, 0.0, -0.0, inf, -inf, 5.0, -5.0]
    b = [0.1, -0.1, 0.1, 0.1, 0.1, inf, -inf, -inf, inf, inf, -inf, 1.5, -3.0, 0.0, 0.0]
    divisors = rng.uniform(0.05, 3.0, 24).astype(np_dtype) * rng.choice([-1, 1], 24)
    multiples = (divisors * rng.integers(-40, 40, 24)).astype(np_dtype)
    nudged = np.nextafter(multiples, rng.choice([-inf, inf], 24)).astype(np_dtype)
    lhs = np.concatenate([np.array(a, np_dtype), multiples, nudged])
    rhs = np.concatenate([np.array(b, np_dtype), divisors, divisors])
    check_backward(lambda x, y: x.remainder(y), torch.remainder,
                   [T(lhs, dtype), T(rhs, dtype)], grad_device, rng)
    column = rhs[:15].reshape(15, 1)  # (15, 1) against (1, 4): every pair broadcast
    row = np.array([[1.0, -7.0, inf, 0.3]], np_dtype)
    check_backward(lambda x, y: x.remainder(y), torch.remainder,
                   [T(row, dtype), T(column, dtype)], grad_device, rng)

PROMOTIONS = [
    ("int64", "float32"), ("float32", "float64"), ("int32", "int64"), ("float16", "float32"),
    ("bfloat16", "float64"), ("int8", "int32"), ("uint8", "int64"), ("bool", "int32"),
    ("int32", "float16"), ("bool", "float32"),
]


@pytest.mark.parametrize("name,lhs,rhs", [op_param(n, a, b) for n in ("add", "mul", "div")
                                          for a, b in PROMOTIONS])
def test_dtype_promotion(name: str, lhs: str, rhs: str, device: burn.Device,
                         rng: np.random.Generator) -> None:
    """Mixed dtypes promote as torch; int tensors with float scalars become float32."""
    method, op, ft = BINARY[name]
    a = T(rand(rng, (2, 3), lhs, Domain(0.5, 2), int_range=(1, 5)), lhs)
    b = T(rand(rng, (2, 3), rhs, Domain(0.5, 2), int_range=(1, 5)), rhs)
    check_forward(method, ft, [a, b], device)
    check_forward(method, ft, [b, a], device)
    if not lhs.startswith("float") and lhs != "bfloat16":
        check_forward(lambda x: op(x, 2.5), lambda x: op(x, 2.5), [a], device)


@pytest.mark.op("div")
def test_int_true_division(device: burn.Device, rng: np.random.Generator) -> None:
    """div of two int tensors is true division into float32 (as torch)."""
    a = T(rand(rng, (3, 4), "int64"), "int64")
    b = T(rand(rng, (3, 4), "int64", int_range=(1, 5)), "int64")
    check_forward(lambda x, y: x / y, torch.true_divide, [a, b], device)


# ------------------------------------------------------------------------------------- unary

UNARY: dict[str, tuple[Callable[[Any], Any], Callable[[Any], Any], Domain]] = {
    "neg": (lambda x: x.neg(), torch.neg, Domain(-3, 3)),
    "recip": (lambda x: x.recip(), torch.reciprocal, Domain(-3, 3, avoid="zero", margin=0.3)),
    "square": (lambda x: x.square(), torch.square, Domain(-3, 3)),
}


@pytest.mark.parametrize("name,case", [op_param(n, c, id=f"{n}-{c.id}") for n in UNARY
                                       for c in FLOAT_CASES if len(set(c.shapes)) == 1
                                       or c.shapes[0] == ()])
def test_unary_forward(name: str, case: Case, device: burn.Device,
                       rng: np.random.Generator) -> None:
    fb, ft, dom = UNARY[name]
    check_forward(fb, ft, [T(rand(rng, case.shapes[1], case.dtype, dom), case.dtype,
                             case.layout)], device)


@pytest.mark.parametrize("name,dtype", [op_param(n, d) for n in ("neg", "square")
                                        for d in ("int64", "int32", "int8")])
def test_unary_int(name: str, dtype: str, device: burn.Device, rng: np.random.Generator) -> None:
    fb, ft, _ = UNARY[name]
    check_forward(fb, ft, [T(rand(rng, (3, 4), dtype), dtype, "transposed")], device)
    if name == "neg":
        check_forward(operator.neg, torch.neg, [T(rand(rng, (3,), dtype), dtype)], device)


@pytest.mark.parametrize("name,dtype", [op_param(n, d) for n in UNARY for d in GRAD_DTYPES])
def test_unary_backward(name: str, dtype: str, grad_device: burn.Device,
                        rng: np.random.Generator) -> None:
    fb, ft, dom = UNARY[name]
    check_backward(fb, ft, [T(rand(rng, (3, 4), dtype, dom), dtype, "transposed")],
                   grad_device, rng)
    if name == "neg":
        check_backward(operator.neg, torch.neg, [T(rand(rng, (3,), dtype), dtype)],
                       grad_device, rng)


# -------------------------------------------------------------------------------- pow family


@pytest.mark.parametrize("name,dtype", [op_param(n, d) for n in ("powi", "pow")
                                        for d in ("float32", "float64", "float16", "int64",
                                                  "int32")])
def test_powi_pow(name: str, dtype: str, device: burn.Device, rng: np.random.Generator) -> None:
    base = T(rand(rng, (3, 4), dtype, Domain(-2, 2), int_range=(-3, 4)), dtype, "transposed")
    exps = T(rand(rng, (4,), "int64", int_range=(0, 4)), "int64")
    method = getattr
    for n in (0, 1, 2, 3):
        check_forward(lambda x, n=n: method(x, name)(n), lambda x, n=n: torch.pow(x, n), [base],
                      device)
    check_forward(lambda x, e: method(x, name)(e), torch.pow, [base, exps], device)
    if name == "pow" and dtype.startswith("float"):
        e = T(rand(rng, (4,), dtype, Domain(-1, 2)), dtype)
        pos = T(rand(rng, (3, 4), dtype, Domain(0.5, 2)), dtype)
        check_forward(lambda x, y: x.pow(y), torch.pow, [pos, e], device)


@pytest.mark.parametrize("name,dtype", [op_param(n, d) for n in ("powi", "pow")
                                        for d in GRAD_DTYPES])
def test_powi_pow_backward(name: str, dtype: str, grad_device: burn.Device,
                           rng: np.random.Generator) -> None:
    base = T(rand(rng, (3, 4), dtype, Domain(-2, 2, avoid="zero")), dtype, "transposed")
    check_backward(lambda x: getattr(x, name)(3), lambda x: torch.pow(x, 3), [base],
                   grad_device, rng)
    exps = T(rand(rng, (4,), "int64", int_range=(1, 4)), "int64")
    check_backward(lambda x, e: getattr(x, name)(e), torch.pow, [base, exps], grad_device, rng)


# ------------------------------------------------------------------------------------ matmul

MATMUL_SHAPES = [
    ((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)), ((2, 2, 3), (3, 4)),
    ((2, 1, 2, 3), (3, 3, 4)), ((0, 3), (3, 2)), ((2, 0), (0, 3)),
]
MATMUL_CASES = [Case("float32", s) for s in MATMUL_SHAPES] + [
    Case("float64", ((2, 4, 3), (2, 3, 5)), "transposed"),
    Case("float16", ((3, 4), (4, 2))),
    Case("bfloat16", ((2, 3, 4), (4, 2)), "strided"),
    Case("int64", ((2, 3), (3, 4))),
    Case("int32", ((2, 2, 3), (3, 2)), "transposed"),
]


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in MATMUL_CASES])
@pytest.mark.op("matmul")
def test_matmul_forward(case: Case, device: burn.Device, rng: np.random.Generator) -> None:
    sa, sb = case.shapes
    a = T(rand(rng, sa, case.dtype, int_range=(-4, 5)), case.dtype, case.layout)
    b = T(rand(rng, sb, case.dtype, int_range=(-4, 5)), case.dtype, case.layout)
    check_forward(lambda x, y: x.matmul(y), torch.matmul, [a, b], device)
    check_forward(operator.matmul, torch.matmul, [a, b], device)


@pytest.mark.parametrize("dtype", GRAD_DTYPES)
@pytest.mark.parametrize("shapes", [((2, 3), (3, 4)), ((3,), (3, 2)), ((2, 1, 2, 3), (3, 3, 4)),
                                    ((2, 3), (3,))], ids=str)
@pytest.mark.op("matmul")
def test_matmul_backward(dtype: str, shapes: tuple[tuple[int, ...], ...],
                         grad_device: burn.Device, rng: np.random.Generator) -> None:
    a = T(rand(rng, shapes[0], dtype), dtype, "transposed")
    b = T(rand(rng, shapes[1], dtype), dtype)
    check_backward(operator.matmul, torch.matmul, [a, b], grad_device, rng)


# ------------------------------------------------------------------------------------- cross


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
@pytest.mark.op("cross")
def test_cross(dtype: str, device: burn.Device, rng: np.random.Generator) -> None:
    a = T(rand(rng, (4, 3), dtype), dtype)
    b = T(rand(rng, (4, 3), dtype), dtype, "transposed")
    check_forward(lambda x, y: x.cross(y), lambda x, y: torch.linalg.cross(x, y), [a, b], device)
    c = T(rand(rng, (2, 1, 3), dtype), dtype)
    a3 = T(rand(rng, (1, 4, 3), dtype), dtype, "transposed")
    check_forward(lambda x, y: x.cross(y, dim=-1), lambda x, y: torch.linalg.cross(x, y, dim=-1),
                  [c, a3], device)
    d = T(rand(rng, (3, 5), dtype), dtype)
    e = T(rand(rng, (3, 5), dtype), dtype, "strided")
    check_forward(lambda x, y: x.cross(y, dim=0), lambda x, y: torch.linalg.cross(x, y, dim=0),
                  [d, e], device)


@pytest.mark.parametrize("dtype", GRAD_DTYPES)
@pytest.mark.op("cross")
def test_cross_backward(dtype: str, grad_device: burn.Device, rng: np.random.Generator) -> None:
    a = T(rand(rng, (2, 1, 3), dtype), dtype)
    b = T(rand(rng, (1, 4, 3), dtype), dtype, "transposed")
    check_backward(lambda x, y: x.cross(y), lambda x, y: torch.linalg.cross(x, y), [a, b],
                   grad_device, rng)


# ------------------------------------------------------------------------------------- clamp

CLAMPS: dict[str, tuple[Callable[[Any], Any], Callable[[Any], Any]]] = {
    "clamp": (lambda x: x.clamp(-0.5, 0.75), lambda x: torch.clamp(x, -0.5, 0.75)),
    "clamp_min": (lambda x: x.clamp_min(-0.5), lambda x: torch.clamp_min(x, -0.5)),
    "clamp_max": (lambda x: x.clamp_max(0.75), lambda x: torch.clamp_max(x, 0.75)),
}
INT_CLAMPS: dict[str, tuple[Callable[[Any], Any], Callable[[Any], Any]]] = {
    "clamp": (lambda x: x.clamp(-2, 3), lambda x: torch.clamp(x, -2, 3)),
    "clamp_min": (lambda x: x.clamp_min(-2), lambda x: torch.clamp_min(x, -2)),
    "clamp_max": (lambda x: x.clamp_max(3), lambda x: torch.clamp_max(x, 3)),
}
CLAMP_CASES = [Case("float32", ((3, 4),)), Case("float64", ((2, 3, 4),), "transposed"),
               Case("float16", ((6,),)), Case("bfloat16", ((2, 3),), "strided"),
               Case("float32", ((),)), Case("float32", ((0, 2),)), Case("int64", ((3, 4),)),
               Case("int32", ((2, 3),), "transposed"), Case("int8", ((5,),))]


@pytest.mark.parametrize("name,case", [op_param(n, c, id=f"{n}-{c.id}") for n in CLAMPS
                                       for c in CLAMP_CASES])
def test_clamp_forward(name: str, case: Case, device: burn.Device,
                       rng: np.random.Generator) -> None:
    table = INT_CLAMPS if case.dtype.startswith("int") else CLAMPS
    fb, ft = table[name]
    x = T(rand(rng, case.shapes[0], case.dtype), case.dtype, case.layout)
    check_forward(fb, ft, [x], device)


@pytest.mark.op("clamp")
def test_clamp_keyword_and_nan(device: burn.Device) -> None:
    x = T(np.array([-2.0, np.nan, 0.3, 5.0]), "float32")
    check_forward(lambda t: t.clamp(min=0.0), lambda t: torch.clamp(t, min=0.0), [x], device)
    check_forward(lambda t: t.clamp(max=1.0), lambda t: torch.clamp(t, max=1.0), [x], device)


ZERO_AND_NAN_BOUNDS = [{"min": 0.0}, {"max": 0.0}, {"max": -0.0}, {"min": -0.0, "max": 0.0},
                       {"min": 1.0, "max": 0.0}, {"min": 0.0, "max": np.nan},
                       {"min": np.nan}, {"max": np.nan}]


@pytest.mark.op("clamp")
@pytest.mark.parametrize("bounds", ZERO_AND_NAN_BOUNDS, ids=str)
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_clamp_signed_zero_and_nan_bounds(bounds: dict[str, float], dtype: str,
                                          device: burn.Device) -> None:
    """A zero bound keeps a zero input's sign (relu(-0.0) is -0.0); a NaN bound makes every
    element NaN (torch 2.13; torch 2.11 kept x for a NaN bound alone, so that case is spelled
    out rather than asked of whichever torch is installed)."""
    data = np.array([-0.0, 0.0, -1.0, np.nan, 2.0, -np.inf, np.inf], dtype=dtype)
    out = burn.tensor(data, device=device).clamp(**bounds)
    nan_bound = any(np.isnan(b) for b in bounds.values())
    want = np.full_like(data, np.nan) if nan_bound \
        else torch.clamp(torch.from_numpy(data), **bounds).numpy()
    got = np.asarray(out)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    numbers = ~np.isnan(want)
    assert np.array_equal(np.signbit(got[numbers]), np.signbit(want[numbers])), (got, want)


@pytest.mark.parametrize("name,dtype", [op_param(n, d) for n in CLAMPS for d in GRAD_DTYPES])
def test_clamp_backward(name: str, dtype: str, grad_device: burn.Device,
                        rng: np.random.Generator) -> None:
    fb, ft = CLAMPS[name]
    # keep values away from the bounds -0.5 and 0.75 (kinks)
    data = rand(rng, (3, 4), dtype, Domain(-2, 2))
    data = np.where(np.abs(data + 0.5) < 0.05, data + 0.1, data)
    data = np.where(np.abs(data - 0.75) < 0.05, data + 0.1, data)
    check_backward(fb, ft, [T(data, dtype, "transposed")], grad_device, rng)
