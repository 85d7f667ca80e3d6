"""Differential fuzzing: random chains of ops against torch, values and gradients.

Hypothesis draws an input (shape with 0-d, size-0 and size-1 dims; contiguous, transposed or
strided layout), a second operand whose shape broadcasts against the running value, and a chain
of 1-5 steps: unary math, binary ops with broadcasting, reductions (over a dim or all, keepdim
or not) and layout ops. The same chain runs in burn (on $BURN_DEVICE, autodiff form for the
gradients) and in torch, in float64; `check_backward` compares the output (shape, dtype, values)
and the gradients of both inputs. Derandomized: every run checks the same examples.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import burn
import burn.functional as F

from .reference import T, check_backward, held

Step = tuple[str, int, bool]  # (op name, dim seed, keepdim)

#: name -> (burn fn(x), torch fn(x)); smooth everywhere on the drawn values
UNARY: dict[str, tuple[Callable[[Any], Any], Callable[[Any], Any]]] = {
    "tanh": (lambda x: x.tanh(), torch.tanh),
    "sin": (lambda x: x.sin(), torch.sin),
    "exp": (lambda x: (x * 0.5).exp(), lambda x: (x * 0.5).exp()),
    "sigmoid": (F.sigmoid, torch.sigmoid),
    "square": (lambda x: x.square(), torch.square),
    "neg_affine": (lambda x: 1.5 - x * 2.0, lambda x: 1.5 - x * 2.0),
    "softplus": (F.softplus, torch.nn.functional.softplus),
}
#: name -> (burn fn(x, y), torch fn(x, y)); y broadcasts against x
BINARY: dict[str, tuple[Callable[[Any, Any], Any], Callable[[Any, Any], Any]]] = {
    "add": (lambda x, y: x + y, lambda x, y: x + y),
    "sub": (lambda x, y: y - x, lambda x, y: y - x),
    "mul": (lambda x, y: x * y, lambda x, y: x * y),
    "div": (lambda x, y: x / (y.square() + 1.0), lambda x, y: x / (y.square() + 1.0)),
    "hypot": (lambda x, y: x.hypot(y + 3.0), lambda x, y: torch.hypot(x, y + 3.0)),
}
REDUCTIONS = ("sum", "mean", "logsumexp", "sum_all", "softmax")
LAYOUT = ("transpose", "flip", "flatten", "unsqueeze", "slice", "expand")
OPS = (*UNARY, *[f"bin_{n}" for n in BINARY], *REDUCTIONS, *LAYOUT)


def _dim(seed: int, ndim: int) -> int:
    """A dim valid for `ndim` (0-d tensors take 0 / -1), negative half of the time."""
    n = max(ndim, 1)
    d = seed % n
    return d - n if seed % 2 else d


def _broadcast_shape(shape: tuple[int, ...], mask: int, drop: int) -> tuple[int, ...]:
    """A shape broadcasting against `shape`: some dims set to 1, some leading dims dropped."""
    out = tuple(1 if mask >> i & 1 else s for i, s in enumerate(shape))
    return out[min(drop, len(out)):]


def _run(steps: list[Step], x: Any, y: Any, lib: str) -> Any:
    """Apply the chain to x (y is the second operand of binary steps); lib is burn or torch."""
    is_burn = lib == "burn"
    for name, seed, keepdim in steps:
        ndim = x.ndim
        d = _dim(seed, ndim)
        if name in UNARY:
            x = UNARY[name][0 if is_burn else 1](x)
        elif name.startswith("bin_"):
            shape = tuple(x.shape)
            other = y.expand(_broadcast_shape(shape, seed, seed % 3)) if shape else y
            x = BINARY[name[4:]][0 if is_burn else 1](x, other)
        elif name == "sum":
            x = x.sum(d, keepdim=keepdim) if is_burn else x.sum(d, keepdim=keepdim)
        elif name == "mean":
            x = x.mean(d, keepdim=keepdim)
        elif name == "logsumexp":
            x = x.logsumexp(d, keepdim=keepdim) if is_burn else torch.logsumexp(x, d, keepdim)
        elif name == "sum_all":
            x = x.sum()
        elif name == "softmax":
            x = F.softmax(x, d) if is_burn else torch.softmax(x, d)
        elif name == "transpose" and ndim >= 2:
            x = x.swap_dims(0, ndim - 1) if is_burn else x.transpose(0, ndim - 1)
        elif name == "flip":
            x = x.flip(d) if is_burn else x.flip(d)
        elif name == "flatten":
            x = x.reshape((-1,))
        elif name == "unsqueeze":
            x = x.unsqueeze(seed % (ndim + 1))
        elif name == "slice" and ndim >= 1:
            x = x[..., ::2]
        elif name == "expand" and ndim >= 1 and x.shape[0] == 1:
            x = x.expand((3, *x.shape[1:]))
    return x + y * 0.0  # y always takes part, so both frameworks give it a gradient


@st.composite
def _cases(draw: st.DrawFn) -> tuple[tuple[int, ...], str, list[Step], int]:
    ndim = draw(st.integers(0, 3))
    shape = tuple(draw(st.lists(st.sampled_from([0, 1, 2, 3]), min_size=ndim, max_size=ndim)))
    layout = draw(st.sampled_from(["contiguous", "transposed", "strided"]))
    steps = draw(st.lists(st.tuples(st.sampled_from(OPS), st.integers(0, 7), st.booleans()),
                          min_size=1, max_size=5))
    return shape, layout, steps, draw(st.integers(0, 2**32 - 1))


@pytest.mark.op("fuzz_chains", family="fuzz")
@settings(max_examples=80, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(case=_cases())
def test_random_op_chains_match_torch(case: tuple[tuple[int, ...], str, list[Step], int],
                                      grad_device: burn.Device) -> None:
    shape, layout, steps, seed = case
    rng = np.random.default_rng(seed)
    dtype = held("float64", grad_device)
    x = T(rng.uniform(-2, 2, size=shape), dtype, layout)
    y = T(rng.uniform(-2, 2, size=()), dtype)
    check_backward(lambda a, b: _run(steps, a, b, "burn"), lambda a, b: _run(steps, a, b, "torch"),
                   [x, y], grad_device, rng)
