"""Differential fuzzing of float32 / int32 / bool programs against torch, for the fusion decorator.

Hypothesis draws a program: an input (0-d, empty, size-1 and longer dims; contiguous, transposed
or strided) whose values hold NaN, infinities, signed zeros, float32's largest and smallest
normal magnitudes or int32's limits, and 1-7 steps applied to a running value: elementwise math,
binary ops against a scalar or a broadcast tensor operand drawn for the step (its dtype promoting
or not), comparisons, `where` / `mask_fill`, casts between float32, int32 and bool, reductions
over a dim or all of them, a matmul (its epilogue is the steps after it, its prologue the
elementwise steps before it), holding the running value as a second result, and reading it in
the middle of the program. Burn (on $BURN_DEVICE;
on a fusion device the program is recorded and run as fused blocks) and torch run it step by
step; shape and dtype are compared after each step, values at a read and at the end. The same
program then runs again with other sizes (the fusion plan and kernel caches are keyed by
structure, so this reuses them with new shapes).

Float32 results differ by rounding (summation order, FMA contraction, math libraries): the torch
side carries a bound on each element's rounding error (`Ref.err`, 0 where every op was exact)
and the elements whose value depends on rounding (`Ref.unknown`: a floor, comparison or cast of
a value within its error of a boundary; a NaN or infinity reached from an inexact value). Exact
elements must be equal (NaN, infinities and zeros' signs included); others within their bound.
The gradient test runs float programs on plain values under autodiff. Derandomized: every run
checks the same examples.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import burn
import burn.functional as F
from burn.errors import BurnError

from .reference import (
    BURN_TO_TORCH,
    TORCH_TO_BURN,
    Domain,
    T,
    assert_same,
    assert_within,
    build,
    burn_tensor,
    flushes_subnormals,
    rand,
    torch_tensor,
    with_specials,
)
from .test_fuzz_chains import _broadcast_shape, _dim

EPS32 = 2.0**-24
ROUND = 4 * EPS32  # one correctly rounded op, FMA contraction included
MATH = 64 * EPS32  # a math library function (llvmpipe's are a few ulps off)
F32_MAX = float(np.finfo(np.float32).max)
F32_TINY = float(np.finfo(np.float32).tiny)
UNDERFLOW = 2.0**-148  # the rounding of a result in the subnormal range (2 ulps there)
#: On a device that flushes subnormals (NVIDIA's Vulkan driver: docs/differences.md), results
#: below this magnitude may have lost subnormal terms or intermediates (sums, products).
FLUSHED = 2.0**-100

Step = tuple[str, int]  # (op name, seed: operand data, dims, scalars)


# ------------------------------------------------------------------ torch values with error bounds


@dataclass
class Ref:
    """Torch's value of a step, with a float64 bound on each element's rounding error (0: exact)
    and the elements whose value depends on rounding (not compared)."""

    t: torch.Tensor
    err: torch.Tensor
    unknown: torch.Tensor

    @staticmethod
    def exact(t: torch.Tensor) -> Ref:
        return Ref(t, torch.zeros(t.shape, dtype=torch.float64),
                   torch.zeros(t.shape, dtype=torch.bool))

    def f64(self) -> torch.Tensor:
        return self.t.detach().double()

    def inexact(self) -> torch.Tensor:
        """Finite elements carrying rounding error (a NaN or inf reached from them is unknown)."""
        return (self.err > 0) & torch.isfinite(self.f64())


def _mul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a * b with 0 * inf = 0 (an exact operand contributes no error)."""
    return torch.where((a == 0) | (b == 0), torch.zeros((), dtype=torch.float64), a * b)


def _div(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a / b with 0 / 0 = 0."""
    return torch.where(a == 0, torch.zeros((), dtype=torch.float64), a / b)


def _finish(out: torch.Tensor, err: torch.Tensor, unknown: torch.Tensor,
            inexact: torch.Tensor | None = None) -> Ref:
    """A step's Ref: NaN / inf results are exact unless reached from `inexact` elements;
    results whose bound reaches float32's largest value or is not finite are unknown."""
    shape = out.shape
    err = err.double().expand(shape)
    unknown = unknown.expand(shape)
    if out.is_floating_point():
        o = out.detach().double()
        special = ~torch.isfinite(o)
        if inexact is not None:
            unknown = unknown | (special & inexact.expand(shape))
        err = torch.where(special, torch.zeros((), dtype=torch.float64), err)
        unknown = unknown | (o.abs() + err >= F32_MAX) & ~special
    unknown = unknown | ~torch.isfinite(err)
    err = torch.where(unknown, torch.zeros((), dtype=torch.float64), err)
    return Ref(out, err.contiguous(), unknown.contiguous())


def _union(*refs: Ref) -> tuple[torch.Tensor, torch.Tensor]:
    """(unknown, inexact) of elementwise operands, broadcast together."""
    unknown = torch.zeros((), dtype=torch.bool)
    inexact = torch.zeros((), dtype=torch.bool)
    for r in refs:
        unknown = unknown | r.unknown
        inexact = inexact | r.inexact()
    return unknown, inexact


def _rounding(u: float, out: torch.Tensor, exact_zero: torch.Tensor) -> torch.Tensor:
    """The rounding error of one op whose result is `out`: `u` relative, or an absolute one in
    and near the subnormal range, zeros included (an underflow) but for `exact_zero`."""
    o = out.abs()
    return u * o + torch.where((o < 2.0**-120) & ~(exact_zero & (o == 0)), UNDERFLOW, 0.0)


def _subnormal(x: torch.Tensor) -> torch.Tensor:
    return (x.abs() < F32_TINY) & (x != 0)


# ------------------------------------------------------------------------------------- the ops

Burn = Any  # burn.Tensor
Unary = tuple[Callable[[Burn], Burn], Callable[[torch.Tensor], torch.Tensor],
              Callable[[torch.Tensor, torch.Tensor], torch.Tensor] | None, float]

#: name -> (burn fn, torch fn, |f'| bound from (x, out) in float64 or None (a kink-free step
#: function: floor, sign...), rounding of the result)
FLOAT_UNARY: dict[str, Unary] = {
    "neg": (lambda x: -x, lambda x: -x, lambda x, o: torch.ones_like(x), 0.0),
    "abs": (lambda x: x.abs(), torch.abs, lambda x, o: torch.ones_like(x), 0.0),
    "relu": (F.relu, torch.relu, lambda x, o: torch.ones_like(x), 0.0),
    "clamp": (lambda x: x.clamp(-1.5, 2.0), lambda x: x.clamp(-1.5, 2.0),
              lambda x, o: torch.ones_like(x), 0.0),
    "exp": (lambda x: x.exp(), torch.exp, lambda x, o: o.abs(), MATH),
    "log": (lambda x: x.log(), torch.log, lambda x, o: 1 / x.abs(), MATH),
    "sqrt": (lambda x: x.sqrt(), torch.sqrt, lambda x, o: 0.5 / x.abs().sqrt(), ROUND),
    "tanh": (lambda x: x.tanh(), torch.tanh, lambda x, o: torch.ones_like(x), MATH),
    "sigmoid": (F.sigmoid, torch.sigmoid, lambda x, o: torch.full_like(x, 0.25), MATH),
    "sin": (lambda x: x.sin(), torch.sin, lambda x, o: torch.ones_like(x), MATH),
    "erf": (lambda x: x.erf(), torch.erf, lambda x, o: torch.full_like(x, 1.13), MATH),
    "atan": (lambda x: x.atan(), torch.atan, lambda x, o: torch.ones_like(x), MATH),
    "softplus": (F.softplus, torch.nn.functional.softplus, lambda x, o: torch.ones_like(x), MATH),
    "recip": (lambda x: x.recip(), torch.reciprocal, lambda x, o: 1 / x.square(), ROUND),
    "square": (lambda x: x.square(), torch.square, lambda x, o: 2 * x.abs(), ROUND),
    "pow_half": (lambda x: x**0.5, lambda x: x**0.5, lambda x, o: 0.5 / x.abs().sqrt(), MATH),
    "pow_cube": (lambda x: x**3.0, lambda x: x**3.0, lambda x, o: 3 * x.square(), MATH),
    "pow_m2": (lambda x: x**-2.0, lambda x: x**-2.0, lambda x, o: 2 / x.abs() ** 3, MATH),
    "pow_1_5": (lambda x: x**1.5, lambda x: x**1.5, lambda x, o: 1.5 * x.abs().sqrt(), MATH),
    "floor": (lambda x: x.floor(), torch.floor, None, 0.0),
    "ceil": (lambda x: x.ceil(), torch.ceil, None, 0.0),
    "round": (lambda x: x.round(), torch.round, None, 0.0),
    "trunc": (lambda x: x.trunc(), torch.trunc, None, 0.0),
    "sign": (lambda x: x.sign(), torch.sign, None, 0.0),
}
#: Ops computed by math libraries: sin of huge arguments, and subnormal values through them on
#: drivers that flush subnormals, follow the driver (docs/differences.md).
TRANSCENDENTAL = {n for n, (_, _, d, u) in FLOAT_UNARY.items() if u == MATH}
#: Relative errors of wgpu's math functions past `MATH` (llvmpipe's atan, docs/differences.md).
WGPU_MATH = {"atan": 3e-5}
#: Absolute errors of wgpu's math functions by x, where WGSL bounds them absolutely (sin: 2^-11
#: on [-pi, pi]; log: 2^-21 on [0.5, 2]) and drivers use that: NVIDIA's Vulkan driver on an
#: H200 was 3.3e-7 off for sin of |x| <= 1, 9.9e-6 for |x| <= 100, 5.4e-4 at 8103, and 4.8e-8
#: for log near 1 (docs/differences.md).
WGPU_ABSOLUTE: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "sin": lambda x: 2.0**-20 * x.abs().clamp(min=1.0),
    "log": lambda x: torch.where((x >= 0.5) & (x <= 2.0), 2.0**-21, 0.0),
}
#: Ops computed as products, which a fused kernel may contract with a later add into an FMA.
PRODUCTS = ("square", "pow_cube", "pow_m2", "pow_1_5")
#: Scalars of binary steps.
SCALARS = (2.0, -0.5, 0.0, -0.0, 3.0, 0.1, 1e30, math.inf, math.nan)
INT_SCALARS = (3, -4, 0, 7)
COMPARISONS: dict[str, Callable[[Any, Any], Any]] = {
    "gt": lambda a, b: a > b, "lt": lambda a, b: a < b, "ge": lambda a, b: a >= b,
    "le": lambda a, b: a <= b, "eq": lambda a, b: a == b, "ne": lambda a, b: a != b,
}
ARITH: dict[str, Callable[[Any, Any], Any]] = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
}
REDUCTIONS = ("sum", "mean", "max", "min", "argmax", "prod", "logsumexp", "softmax", "var")
INT_REDUCTIONS = ("sum", "max", "min", "argmax", "prod")  # int mean is Burn's floor
BOOL_OPS = ("not", "and", "or", "xor", "any", "all")
CASTS = ("to_float", "to_int", "to_bool")
#: name -> layout change, the same call in burn and torch (applied to values and bounds alike)
LAYOUT: dict[str, Callable[[Any], Any]] = {
    "transpose": lambda x: x.transpose(0, x.ndim - 1),
    "slice": lambda x: x[..., 1::2],
    "flip": lambda x: x.flip(0),
    "flatten": lambda x: x.reshape(-1),
    "unsqueeze": lambda x: x.unsqueeze(0),
    "expand": lambda x: x.expand(2, *x.shape),
}
OTHER = ("where", "mask_fill", "max_pair", "min_pair", "floor_div", "remainder", "matmul",
         "hold", "read", "reuse")
BINARY = (*ARITH, *(f"{n}_s" for n in ARITH), *COMPARISONS, *(f"{n}_s" for n in COMPARISONS))
OPS = (*FLOAT_UNARY, *BINARY, *REDUCTIONS, *BOOL_OPS, *CASTS, *LAYOUT, *OTHER, "refused")
#: Steps whose gradient both frameworks define the same way on finite values.
GRAD_OPS = (*(n for n in FLOAT_UNARY if n not in ("log", "sqrt", "recip", "pow_half", "pow_m2",
                                                  "pow_1_5")),
            "add", "sub", "mul", "add_s", "sub_s", "mul_s", "div_s", "sum", "mean", "max", "min",
            "prod", "logsumexp", "softmax", "var", "where", "mask_fill", "max_pair", "min_pair",
            "matmul", "hold", "read", "reuse", *LAYOUT)
#: Steps a matmul program's epilogue draws from.
EPILOGUE = ("add", "add_s", "mul_s", "relu", "tanh", "sigmoid", "clamp", "exp", "sum", "max",
            "softmax", "to_int", "hold", "read", "gt_s")
#: Steps before a matmul (its prologue on GPU runtimes: held or read results run first).
PROLOGUE = ("add", "add_s", "mul_s", "relu", "tanh", "sigmoid", "clamp", "exp", "hold", "read")


# ----------------------------------------------------------------------------- the interpreter


class Program:
    """Runs steps on a burn value and its torch Ref side by side.

    Args:
        device: where burn runs.
        specials: whether drawn operands hold special values.
        grad: whether the torch side tracks gradients (its errors are still computed detached).
    """

    def __init__(self, device: burn.Device, specials: bool, grad: bool = False) -> None:
        self.device = device
        self.specials = specials
        self.grad = grad
        #: wgpu math functions: llvmpipe flushes subnormals there, its atan is looser
        self.wgpu_math = device.name == "wgpu"
        #: whether the device flushes every subnormal result (`flushed`)
        self.flushes = flushes_subnormals(device)
        self.held: list[tuple[Burn, Ref, str]] = []
        #: whether a `prod` took a non-finite value, where torch's gradient differs from
        #: Burn's by design (docs/differences.md: torch divides the product by the element)
        self.grad_differs = False
        #: the input and every step's value, for steps that read an earlier one again
        self.history: list[tuple[Burn, Ref]] = []

    # --- operands

    def draw(self, rng: np.random.Generator, shape: tuple[int, ...], dtype: burn.DType,
             layout: str = "contiguous") -> tuple[Burn, Ref]:
        """A fresh operand of `shape` and `dtype` (with special values where the program has
        them), the same data in both frameworks."""
        data = (with_specials(rng, shape, dtype, 0.2) if self.specials
                else rand(rng, shape, dtype, Domain(-2.0, 2.0, "zero", 0.2)))
        b, t, _, _ = build(T(data, dtype, layout), self.device)  # type: ignore[arg-type]
        return b, Ref.exact(t)

    def operand(self, rng: np.random.Generator, shape: tuple[int, ...], seed: int,
                dtype: burn.DType) -> tuple[Burn, Ref]:
        """A tensor operand broadcasting against `shape` (some dims 1, some leading dims gone)."""
        return self.draw(rng, _broadcast_shape(shape, seed >> 3, seed % 3), dtype,
                         ("contiguous", "transposed", "strided")[seed % 3])

    def flushed(self, r: Ref) -> Ref:
        """`r` on a device that flushes subnormals: its nonzero or inexact values below
        `FLUSHED` unknown (and so every value computed from them); `r` elsewhere."""
        if not self.flushes or not r.t.is_floating_point():
            return r
        o = r.f64()
        tiny = (o.abs() < FLUSHED) & ((o != 0) | (r.err > 0))
        return Ref(r.t, torch.where(tiny, torch.zeros((), dtype=torch.float64), r.err),
                   r.unknown | tiny)

    # --- one step

    def step(self, name: str, seed: int, b: Burn, r: Ref) -> tuple[Burn, Ref]:
        """Apply step `name` to (b, r); a step that does not apply to the value's kind or shape
        leaves it as is."""
        rng = np.random.default_rng(seed)
        kind = "bool" if r.t.dtype == torch.bool else "float" if r.t.is_floating_point() else "int"
        if name in FLOAT_UNARY and kind != "float":  # float math of an int / bool value: cast
            b, r = self.cast("to_float", b, r, kind)
            kind = "float"
        if name in (*BINARY, "floor_div", "remainder", "max_pair", "min_pair") and kind == "bool" \
                or name in ("floor_div", "remainder") and kind == "float":
            b, r = self.cast("to_int", b, r, kind)
            kind = "int"
        if name in BOOL_OPS and kind != "bool":
            b, r = self.cast("to_bool", b, r, kind)
            kind = "bool"
        shape = tuple(r.t.shape)
        if name in FLOAT_UNARY and kind == "float":
            return self.unary(name, b, r)
        if name.removesuffix("_s") in ARITH and kind != "bool":
            return self.arith(name, seed, rng, b, r, kind)
        if name.removesuffix("_s") in COMPARISONS and kind != "bool":
            return self.compare(name, seed, rng, b, r, kind)
        if name in REDUCTIONS and (kind == "float" or name == "sum"
                                   or kind == "int" and name in INT_REDUCTIONS):
            return self.reduce(name, seed, b, r)
        if name in BOOL_OPS and kind == "bool":
            return self.boolean(name, seed, rng, b, r)
        if name in CASTS:
            return self.cast(name, b, r, kind)
        if name == "where":
            mask_b, mask_r = self.operand(rng, shape, seed, burn.bool_)
            other_b, other_r = self.operand(rng, shape, seed // 5, TORCH_TO_BURN[r.t.dtype])
            out = torch.where(mask_r.t, r.t, other_r.t)
            unknown, inexact = _union(r, mask_r, other_r)
            err = torch.where(mask_r.t, r.err, other_r.err)
            return burn.where(mask_b, b, other_b), _finish(out, err, unknown, inexact)
        if name == "mask_fill" and kind != "bool":
            mask_b, mask_r = self.operand(rng, shape, seed, burn.bool_)
            value = SCALARS[seed % len(SCALARS)] if kind == "float" else INT_SCALARS[seed % 4]
            out = r.t.masked_fill(mask_r.t, value)
            err = torch.where(mask_r.t, torch.zeros((), dtype=torch.float64), r.err)
            unknown, inexact = _union(r, mask_r)
            return b.mask_fill(mask_b, value), _finish(out, err, unknown, inexact & ~mask_r.t)
        if name in ("max_pair", "min_pair") and kind != "bool":
            other_b, other_r = self.operand(rng, shape, seed, TORCH_TO_BURN[r.t.dtype])
            # Burn's max_pair / min_pair: a NaN in `other` keeps self (docs/differences.md)
            take = other_r.t > r.t if name == "max_pair" else other_r.t < r.t
            out = torch.where(take, other_r.t, r.t)
            unknown, inexact = _union(r, other_r)
            err = torch.maximum(r.err, other_r.err)
            got = b.max_pair(other_b) if name == "max_pair" else b.min_pair(other_b)
            return got, _finish(out, err, unknown, inexact)
        if name in ("floor_div", "remainder") and kind == "int":
            divisor = (3, -4, 7)[seed % 3]
            fn = (lambda a: a // divisor) if name == "floor_div" else (lambda a: a % divisor)
            return fn(b), _finish(fn(r.t), r.err, r.unknown)
        if name in LAYOUT and (shape or name in ("flatten", "unsqueeze", "expand")):
            fn = LAYOUT[name]
            return fn(b), Ref(fn(r.t), fn(r.err), fn(r.unknown))
        if name == "refused" and shape and shape[-1] > 1:  # shapes that do not broadcast
            other_b, other = self.draw(rng, (shape[-1] + 1,), TORCH_TO_BURN[r.t.dtype])
            with pytest.raises(RuntimeError):
                _ = r.t + other.t
            with pytest.raises(BurnError):  # at the call, not when the stream runs
                _ = b + other_b
            return b, r
        if name == "matmul" and kind == "float" and shape:
            return self.matmul(seed, rng, b, r)
        if name == "reuse" and kind != "bool":  # an earlier value again: the program is a DAG
            earlier = [(hb, hr) for hb, hr in self.history if hr.t.dtype != torch.bool
                       and _broadcasts_to(tuple(hr.t.shape), shape)]
            if earlier:
                op = ("add", "sub", "mul")[seed % 3]
                return self.arith(op, seed, rng, b, r, kind, earlier[(seed >> 2) % len(earlier)])
        if name == "hold":
            self.held.append((b, r, f"held after {len(self.held)} holds"))
        if name == "read":
            self.check(b, r, "value read in the middle of the program")
            if r.t.numel() == 1 and not bool(r.unknown.any()):
                got = b.item()
                want = r.t.detach().reshape(()).item()
                assert (got == want or (got != got and want != want)
                        or abs(got - want) <= 2 * float(r.err.max())), f"item(): {got} != {want}"
        return b, r

    def unary(self, name: str, b: Burn, r: Ref) -> tuple[Burn, Ref]:
        burn_fn, torch_fn, slope, rounding = FLOAT_UNARY[name]
        out = torch_fn(r.t)
        x, o = r.f64(), out.detach().double()
        unknown = r.unknown
        if slope is None:  # a step function: unknown where x +- err fall on two steps
            low, high = torch_fn(x - r.err), torch_fn(x + r.err)
            unknown = unknown | ((r.err > 0) & ((low != high)
                                                | (torch.signbit(low) != torch.signbit(high))))
            err = torch.zeros_like(x)
        else:
            err = _mul(slope(x, o), r.err)
            if self.wgpu_math:
                rounding = max(rounding, WGPU_MATH.get(name, 0.0))
                if name in WGPU_ABSOLUTE:
                    err = err + WGPU_ABSOLUTE[name](x)
            if rounding:  # a zero of a math function is exact (tanh(-0.0), exp(-inf))
                err = err + _rounding(rounding, o, o == 0)
        if name in TRANSCENDENTAL and self.wgpu_math:
            unknown = unknown | _subnormal(x) | _subnormal(o)
        if name in PRODUCTS:  # an overflow an FMA with the next op's addend may not have
            unknown = unknown | (torch.isinf(o) & torch.isfinite(x))
        if name == "sin":  # llvmpipe's sin loses its argument reduction past about 1e8
            unknown = unknown | (x.abs() > 1e4)
        return burn_fn(b), _finish(out, err, unknown, r.inexact())

    def arith(self, name: str, seed: int, rng: np.random.Generator, b: Burn, r: Ref,
              kind: str, given: tuple[Burn, Ref] | None = None) -> tuple[Burn, Ref]:
        op = name.removesuffix("_s")
        fn = ARITH[op]
        if given is not None:
            other_b, other = given
            other_t = other.t
        elif name.endswith("_s"):
            scalars = SCALARS if kind == "float" or seed % 4 == 0 else INT_SCALARS
            value = scalars[(seed >> 2) % len(scalars)]
            other_b, other_t = value, value
            other = Ref.exact(torch.tensor(value, dtype=torch.float64))
        else:
            dtype = TORCH_TO_BURN[r.t.dtype] if seed % 4 else burn.float32
            other_b, other = self.operand(rng, tuple(r.t.shape), seed, dtype)
            other_t = other.t
        out = fn(r.t, other_t)
        x, y, o = r.f64(), other.f64(), out.detach().double()
        unknown, inexact = _union(r, other)
        rounding = torch.zeros_like(o)
        if out.is_floating_point():  # exact operands, one zero, give an exact (signed) zero
            exact = (r.err == 0) & (other.err == 0)
            exact_zero = exact & ((x == 0) | (y == 0 if op == "mul" else torch.isinf(y)))
            rounding = _rounding(ROUND, o, exact_zero)
            if op in ("add", "sub"):
                rounding = ROUND * o.abs()
        if op in ("add", "sub"):
            err = r.err + other.err + rounding
        elif op == "mul":
            unknown = unknown | (torch.isinf(o) & torch.isfinite(x) & torch.isfinite(y))  # FMA
            err = (_mul(y.abs(), r.err) + _mul(x.abs(), other.err) + _mul(r.err, other.err)
                   + rounding)
        else:
            err = (_div(r.err, y.abs()) + _div(_mul(x.abs(), other.err), y.square())
                   + rounding)
            unknown = unknown | ((other.err > 0) & (other.err * 2 >= y.abs()))
        return fn(b, other_b), _finish(out, err, unknown, inexact)

    def compare(self, name: str, seed: int, rng: np.random.Generator, b: Burn, r: Ref,
                kind: str) -> tuple[Burn, Ref]:
        fn = COMPARISONS[name.removesuffix("_s")]
        if name.endswith("_s"):
            value = (SCALARS if kind == "float" else INT_SCALARS)[seed % 4]
            other_b, other = value, Ref.exact(torch.tensor(value))
        else:
            other_b, other = self.operand(rng, tuple(r.t.shape), seed, TORCH_TO_BURN[r.t.dtype])
        out = fn(r.t, other.t if not name.endswith("_s") else other_b)
        x, y = r.f64(), other.f64()
        bound = r.err + other.err
        unknown, _ = _union(r, other)
        unknown = unknown | ((bound > 0) & ((x - y).abs() <= bound))
        return fn(b, other_b), _finish(out, torch.zeros(()), unknown)

    def reduce(self, name: str, seed: int, b: Burn, r: Ref) -> tuple[Burn, Ref]:
        ndim = r.t.dim()
        everything = seed % 5 == 0 and name not in ("softmax", "logsumexp")
        d = _dim(seed >> 4, ndim)
        kw: dict[str, Any] = {} if everything else {"dim": d, "keepdim": bool(seed & 8)}
        dims = tuple(range(ndim)) if everything else (d % ndim,) if ndim else ()
        keep = name == "softmax" or bool(kw.get("keepdim"))
        n = math.prod(r.t.shape[i] for i in dims)

        def over(t: torch.Tensor, how: str = "sum") -> torch.Tensor:
            """`t` reduced over the step's dims, shaped as the result (softmax: kept dims)."""
            for i in sorted(dims, reverse=True):
                if how == "amax" and t.shape[i] == 0:
                    how = "sum"  # an empty line: no error to take the largest of
                t = getattr(t, how)(i, keepdim=keep)
            return t

        try:
            out = self._torch_reduction(name, r.t, kw, everything)
        except (RuntimeError, IndexError) as error:  # torch refuses: burn must too, at once
            with pytest.raises(BurnError):
                self._burn_reduction(name, b, kw, everything)
            raise _Refused(f"{name} {kw}: torch: {error}") from None
        got = self._burn_reduction(name, b, kw, everything)
        x, o = r.f64(), out.detach().double()
        unknown, inexact = over(r.unknown, "any"), over(r.inexact(), "any")
        sum_err, max_err = over(r.err), over(r.err, "amax")
        finite = torch.where(torch.isfinite(x), x.abs(), 0.0)
        if name in ("sum", "mean", "var"):  # partial sums may overflow in some order
            unknown = unknown | (over(finite) > F32_MAX)
        if name == "var":
            unknown = unknown | (over(finite.square()) > F32_MAX)
        if name == "prod":  # partial products too (3e38 * 3e38 * 0 is NaN or 0), and they may
            # underflow to 0 beside an inf (1e-30 * 1e-30 * inf is inf or NaN): order dependent
            unknown = unknown | (over(finite.clamp(min=1.0), "prod") > F32_MAX)
            small = torch.where(finite > 0, finite.clamp(max=1.0), 1.0)
            unknown = unknown | (over(torch.isinf(x), "any") & (over(small, "prod") < F32_TINY))
            # (the gradients are the other elements' products, PyTorch's the product over the
            # element: inf where it overflows; docs/differences.md)
            self.grad_differs |= self.grad and not (bool(torch.isfinite(x).all())
                                                    and bool((over(finite, "prod")
                                                              <= F32_MAX).all()))
        if name in ("sum", "mean"):
            err = sum_err + n * ROUND * over(x.abs())
            err = err / max(n, 1) if name == "mean" else err
        elif name == "var":
            err = (4 * over(x.abs(), "amax") * sum_err
                   + 4 * n * ROUND * over(x.square())) / max(n - 1, 1)
        elif name == "prod":
            big = over(x.abs().clamp(min=1.0), "prod")
            has_zero = over(x == 0, "any")  # then 0 is exact, else it may be an underflow
            err = (_mul(sum_err, big) + n * ROUND * o.abs()
                   + torch.where(has_zero & (o == 0), 0.0, n * UNDERFLOW * big))
        elif name in ("max", "min"):
            err = max_err
        elif name == "argmax":
            return got, _finish(out, torch.zeros(()), unknown | (sum_err > 0))
        elif name == "logsumexp":
            err = max_err + MATH * (o.abs() + n)
            # (the gradient is the softmax, PyTorch's exp(x - result) with the result rounded:
            # off by its rounding relative to 1; docs/differences.md)
            self.grad_differs |= self.grad and bool((o.abs() * EPS32 > 1e-5).any())
        else:  # softmax
            err = o * (2 * max_err + (n + 2) * MATH) + (n + 2) * MATH * F32_TINY
        return got, _finish(out, err, unknown, inexact)

    @staticmethod
    def _torch_reduction(name: str, t: torch.Tensor, kw: dict[str, Any],
                         everything: bool) -> torch.Tensor:
        if name == "softmax":
            return torch.softmax(t, kw["dim"])
        if name == "var":
            return t.var(correction=1, **kw)
        if name in ("max", "min"):
            if everything:
                return getattr(t, name)()
            return getattr(torch, name)(t, kw["dim"], keepdim=kw["keepdim"]).values
        if name == "logsumexp":
            return torch.logsumexp(t, kw["dim"], keepdim=kw["keepdim"])
        return getattr(t, name)(**kw)

    @staticmethod
    def _burn_reduction(name: str, b: Burn, kw: dict[str, Any], everything: bool) -> Burn:
        if name == "softmax":
            return F.softmax(b, kw["dim"])
        if name == "var":
            return b.var(correction=1, **kw)
        if name == "logsumexp":
            return b.logsumexp(kw["dim"], keepdim=kw["keepdim"])
        return getattr(b, name)(**kw)

    def boolean(self, name: str, seed: int, rng: np.random.Generator, b: Burn,
                r: Ref) -> tuple[Burn, Ref]:
        if name == "not":
            return ~b, _finish(~r.t, r.err, r.unknown)
        if name in ("any", "all"):
            if seed % 3 == 0 or not r.t.dim():
                out, got = getattr(r.t, name)(), getattr(b, name)()
                unknown = r.unknown.any()
            else:
                d, keepdim = _dim(seed, r.t.dim()), bool(seed & 4)
                out = getattr(r.t, name)(d, keepdim=keepdim)
                got = getattr(b, name)(d, keepdim=keepdim)
                unknown = r.unknown.any(d, keepdim=keepdim)
            return got, _finish(out, torch.zeros(()), unknown)
        other_b, other = self.operand(rng, tuple(r.t.shape), seed, burn.bool_)
        fn: Callable[[Any, Any], Any] = {"and": lambda a, c: a & c, "or": lambda a, c: a | c,
                                         "xor": lambda a, c: a ^ c}[name]
        return fn(b, other_b), _finish(fn(r.t, other.t), torch.zeros(()),
                                       r.unknown | other.unknown)

    def cast(self, name: str, b: Burn, r: Ref, kind: str) -> tuple[Burn, Ref]:
        target = {"to_float": burn.float32, "to_int": burn.int32, "to_bool": burn.bool_}[name]
        out = r.t.to(BURN_TO_TORCH[target])
        x = r.f64()
        unknown = r.unknown
        if kind == "float" and name == "to_int":
            unknown = unknown | ((r.err > 0) & (torch.trunc(x - r.err) != torch.trunc(x + r.err)))
        if kind == "float" and name == "to_bool":
            unknown = unknown | ((r.err > 0) & (x.abs() <= r.err))
        err = r.err if name == "to_float" and kind == "float" else torch.zeros(())
        return b.cast(target), _finish(out, err, unknown, r.inexact())

    def matmul(self, seed: int, rng: np.random.Generator, b: Burn, r: Ref) -> tuple[Burn, Ref]:
        k, n = r.t.shape[-1], (1, 2, 3, 5)[seed % 4]
        layout = ("contiguous", "transposed")[(seed >> 2) % 2]
        other_b, other = self.draw(rng, (k, n), burn.float32, layout)
        out = r.t @ other.t
        x, y = r.f64(), other.f64()
        ax, ay = x.abs(), y.abs()
        err = (_mm(ax, other.err) + _mm(r.err, ay) + k * ROUND * _mm(ax, ay)
               + k * UNDERFLOW)  # products in the subnormal range; the sign of a zero sum
        reach = _mm(r.unknown.double(), torch.ones(k, n, dtype=torch.float64)) \
            + _mm(torch.ones_like(x), other.unknown.double())
        inexact = _mm(r.inexact().double(), torch.ones(k, n, dtype=torch.float64)) \
            + _mm(torch.ones_like(x), other.inexact().double())
        # a product past float32's range is inf, or is not inside an FMA (BLAS, burn's kernels),
        # and partial sums of finite products may overflow in some order
        products = ax.unsqueeze(-1) * ay  # [..., m, k, n] (m absent for a vector)
        finite = torch.where(torch.isfinite(products), products, 0.0)
        overflow = (finite > F32_MAX).any(-2) | (finite.sum(-2) > F32_MAX)
        return b @ other_b, _finish(out, err, (reach > 0) | overflow, inexact > 0)

    # --- comparing

    def check(self, b: Burn, r: Ref, what: str) -> None:
        assert_within(b, r.t.detach(), r.err, r.unknown, what=what)


def _broadcasts_to(shape: tuple[int, ...], target: tuple[int, ...]) -> bool:
    return len(shape) <= len(target) and all(
        s in (1, t) for s, t in zip(reversed(shape), reversed(target), strict=False))


def _mm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a @ b of float64 bounds (inf * 0 counted as 0)."""
    a = torch.where(torch.isnan(a), torch.inf, a)
    return torch.nan_to_num(a @ b, nan=math.inf)


class _Refused(Exception):
    """Torch refused a step and burn raised a burn.errors type for it: the program ends there."""


def run(program: Program, steps: list[Step], b: Burn, r: Ref) -> tuple[Burn, Ref]:
    """Run `steps`, checking shape and dtype after each one and values of every held result.
    Earlier values are kept for `reuse` steps only: otherwise nothing holds an intermediate,
    so the fusers may leave it unwritten (a matmul's prologue runs in its kernel)."""
    keep = any(name == "reuse" for name, _ in steps)
    program.history.append((b, r))
    for i, (name, seed) in enumerate(steps):
        b, r = program.step(name, seed, b, r)
        r = program.flushed(r)
        if keep:
            program.history.append((b, r))
        assert tuple(b.shape) == tuple(r.t.shape), (
            f"step {i} ({name}): shape {tuple(b.shape)} != torch {tuple(r.t.shape)}")
        assert b.dtype == TORCH_TO_BURN[r.t.dtype], (
            f"step {i} ({name}): dtype {b.dtype} != torch {r.t.dtype}")
    return b, r


def check_program(device: burn.Device, steps: list[Step], shapes: list[tuple[int, ...]],
                  dtype: burn.DType, layout: str, seed: int) -> None:
    """Run the program on inputs of each shape in turn and compare every result with torch."""
    for run_index, shape in enumerate(shapes):
        program = Program(device, specials=True)
        rng = np.random.default_rng(seed + run_index)
        b, r = program.draw(rng, shape, dtype, layout)
        try:
            b, r = run(program, steps, b, r)
        except _Refused:
            continue
        for held_b, held_r, what in program.held:
            program.check(held_b, held_r, f"run {run_index}: {what}")
        program.check(b, r, f"run {run_index} {shape}: result")


@pytest.fixture(autouse=True)
def _fuse_small_blocks(device: burn.Device, monkeypatch: pytest.MonkeyPatch) -> None:
    """On a fusion device, fuse blocks of any size: the fused kernels are under test, and the
    size from which a block of fewer than `FUSE_OPS` ops pays (`CPU_FUSE_WORK` on the cpu,
    `GPU_FUSE_WORK` on GPU runtimes) is beyond these programs'."""
    if "fusion" in device.decorators:
        from burn.fusion import stream

        monkeypatch.setattr(stream, "CPU_FUSE_WORK", 0)
        monkeypatch.setattr(stream, "GPU_FUSE_WORK", 0)


# ------------------------------------------------------------------------------ the strategies

SIZES = (0, 1, 2, 3, 5, 2, 3, 37)


@st.composite
def _shapes(draw: st.DrawFn, min_ndim: int = 0) -> list[tuple[int, ...]]:
    """Two shapes of one rank (the program's first and second run)."""
    ndim = draw(st.integers(min_ndim, 3))
    return [tuple(draw(st.lists(st.sampled_from(SIZES), min_size=ndim, max_size=ndim)))
            for _ in range(2)]


def _steps(ops: tuple[str, ...], max_size: int) -> st.SearchStrategy[list[Step]]:
    return st.lists(st.tuples(st.sampled_from(ops), st.integers(0, 2**16)),
                    min_size=1, max_size=max_size)


#: $BURN_FUZZ_SCALE: runs that many times each test's examples, drawn at random (the suite
#: draws a fixed set; pytest's ``--hypothesis-seed=N`` repeats a random run). Deep runs of this
#: kind found the fused sign and overflow bugs the hostile tests now pin.
SCALE = int(os.environ.get("BURN_FUZZ_SCALE", "1"))
SETTINGS = settings(max_examples=150 * SCALE, deadline=None, derandomize=SCALE == 1,
                    database=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                          HealthCheck.too_slow])


@pytest.mark.op("fuzz_fusion", family="fuzz")
@SETTINGS
@given(shapes=_shapes(), dtype=st.sampled_from(["float32", "float32", "int32", "bool"]),
       layout=st.sampled_from(["contiguous", "transposed", "strided"]),
       steps=_steps(OPS, 7), seed=st.integers(0, 2**32 - 1))
def test_random_programs_match_torch(shapes: list[tuple[int, ...]], dtype: str, layout: str,
                                     steps: list[Step], seed: int, device: burn.Device) -> None:
    check_program(device, steps, shapes, burn.DType(dtype), layout, seed)


@pytest.mark.op("fuzz_fusion", family="fuzz")
@settings(SETTINGS, max_examples=60 * SCALE)
@given(shapes=_shapes(min_ndim=1), layout=st.sampled_from(["contiguous", "transposed", "strided"]),
       epilogue=_steps(EPILOGUE, 4), seed=st.integers(0, 2**32 - 1),
       matmul_seed=st.integers(0, 2**16))
def test_matmul_epilogues_match_torch(shapes: list[tuple[int, ...]], layout: str,
                                      epilogue: list[Step], seed: int, matmul_seed: int,
                                      device: burn.Device) -> None:
    check_program(device, [("matmul", matmul_seed), *epilogue], shapes, burn.float32, layout,
                  seed)


@pytest.mark.op("fuzz_fusion", family="fuzz")
@settings(SETTINGS, max_examples=40 * SCALE)
@given(shapes=_shapes(min_ndim=2), layout=st.sampled_from(["contiguous", "transposed", "strided"]),
       prologue=_steps(PROLOGUE, 4), epilogue=st.lists(
           st.tuples(st.sampled_from(EPILOGUE), st.integers(0, 2**16)), max_size=2),
       seed=st.integers(0, 2**32 - 1), matmul_seed=st.integers(0, 2**16))
def test_matmul_prologues_match_torch(shapes: list[tuple[int, ...]], layout: str,
                                      prologue: list[Step], epilogue: list[Step], seed: int,
                                      matmul_seed: int, device: burn.Device) -> None:
    check_program(device, [*prologue, ("matmul", matmul_seed), *epilogue], shapes,
                  burn.float32, layout, seed)


@pytest.mark.op("fuzz_fusion", family="fuzz")
@settings(SETTINGS, max_examples=40 * SCALE)
@given(shapes=_shapes(), layout=st.sampled_from(["contiguous", "transposed", "strided"]),
       steps=_steps(GRAD_OPS, 5), seed=st.integers(0, 2**32 - 1))
def test_random_program_gradients_match_torch(shapes: list[tuple[int, ...]], layout: str,
                                              steps: list[Step], seed: int,
                                              grad_device: burn.Device) -> None:
    rng = np.random.default_rng(seed)
    for run_index, shape in enumerate(shapes):
        program = Program(grad_device, specials=False, grad=True)
        data = rand(rng, shape, burn.float32, Domain(-2.0, 2.0, "zero", 0.2))
        b, t, leaf_b, leaf_t = build(T(data, burn.float32, layout), grad_device, grad=True)
        try:
            b, r = run(program, steps, b, Ref.exact(t))
        except _Refused:
            continue
        program.check(b, r, f"run {run_index}: result")
        outputs = [(b, r), *((hb, hr) for hb, hr, _ in program.held)]
        loss_b, loss_t = None, torch.zeros((), dtype=torch.float64)
        for out_b, out_r in outputs:
            g = rng.standard_normal(tuple(out_r.t.shape)).astype(np.float32)
            term = (out_b * burn_tensor(g, burn.float32, grad_device)).sum()
            loss_b = term if loss_b is None else loss_b + term
            loss_t = loss_t + (out_r.t * torch_tensor(g, burn.float32)).sum()
        if not loss_t.requires_grad or bool(torch.isnan(loss_t)) or program.grad_differs:
            continue
        loss_t.backward()
        grads = loss_b.backward()
        want = leaf_t.grad if leaf_t.grad is not None else torch.zeros_like(leaf_t)
        got = leaf_b.grad(grads)
        finite = torch.isfinite(want)
        if not bool(finite.all()):  # an overflowed gradient: inf in torch, inf or NaN in Burn
            got, want = _finite_part(got, want, finite, f"run {run_index}: grad")
        scale = 1.0 + float(want.abs().max()) if want.numel() else 1.0
        assert_same(got, want, phase="backward", what=f"run {run_index}: grad", scale=scale)


def _finite_part(got: burn.Tensor, want: torch.Tensor, finite: torch.Tensor,
                 what: str) -> tuple[burn.Tensor, torch.Tensor]:
    """`got` and `want` with 0 where torch's gradient is not finite, after checking that Burn's
    is not finite there either: where an infinite gradient reaches `var`, its gradient through
    the mean makes inf - inf = NaN, where torch's formula gives inf (docs/differences.md)."""
    values, overflowed = got.to_numpy(), ~finite.numpy()
    assert values.shape == overflowed.shape, f"{what}: shape {values.shape}"
    assert not np.isfinite(values[overflowed]).any(), (
        f"{what}: finite where torch's gradient overflowed: {values[overflowed]}")
    kept = burn.tensor(np.where(overflowed, 0, values).astype(values.dtype), device=got.device)
    return kept, torch.where(finite, want, torch.zeros_like(want))
