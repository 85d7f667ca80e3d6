"""Python scalars a tensor op cannot take, against torch: a Python int outside [-2**63, 2**64)
(torch: OverflowError, whatever the tensor's dtype), nan / inf written into an int tensor, a float
outside that range written into one, two bool
operands of `//` and `%` (torch: NotImplementedError) and an int `fmod` by a host 0. Each case
torch refuses raises burn's typed error naming the op at the call (not at a later read), and
the device reads afterwards; the neighbouring cases torch takes give torch's values."""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch

import burn
from burn.errors import BurnError, DivisionByZeroError, DTypeError, ValueRangeError

NAN, INF = float("nan"), float("inf")
BIG = 2**64

Operands = dict[str, Any]


class _Level(enum.IntEnum):
    HIGH = 3


def _setitem(t: Any, value: object) -> None:
    t[0] = value


#: name -> (the call on operands of either library, burn's error, the op its message names)
REFUSED: dict[str, tuple[Callable[[Operands], object], type[BurnError], str]] = {
    "int + 2**64": (lambda o: o["i64"] + BIG, ValueRangeError, "add"),
    "2**64 - int": (lambda o: BIG - o["i64"], ValueRangeError, "sub"),
    "int + (-2**63 - 1)": (lambda o: o["i64"] + (-(2**63) - 1), ValueRangeError, "add"),
    "float * 2**64": (lambda o: o["f32"] * BIG, ValueRangeError, "mul"),
    "bool + 2**64": (lambda o: o["b"] + BIG, ValueRangeError, "add"),
    "int == 2**64": (lambda o: o["i64"] == BIG, ValueRangeError, "equal"),
    "int32 ** 2**64": (lambda o: o["i32"] ** BIG, ValueRangeError, "pow"),
    "masked_fill 2**64": (lambda o: o["i64"].masked_fill(o["i64"] > 0, BIG), ValueRangeError,
                          "mask_fill"),
    "setitem 2**64": (lambda o: _setitem(o["i64"], BIG), ValueRangeError, "setitem"),
    "where 2**64": (lambda o: o["lib"].where(o["i64"] > 0, o["i64"], BIG), ValueRangeError,
                    "where"),
    "full 2**64": (lambda o: o["lib"].full((2,), BIG), ValueRangeError, "full"),
    "setitem nan into int32": (lambda o: _setitem(o["i32"], NAN), ValueRangeError, "setitem"),
    "setitem inf into int64": (lambda o: _setitem(o["i64"], INF), ValueRangeError, "setitem"),
    "masked_fill -inf into int32": (lambda o: o["i32"].masked_fill(o["i32"] > 0, -INF),
                                    ValueRangeError, "mask_fill"),
    "masked_fill 1e40 into int32": (lambda o: o["i32"].masked_fill(o["i32"] > 0, 1e40),
                                    ValueRangeError, "mask_fill"),
    "setitem -1e40 into int64": (lambda o: _setitem(o["i64"], -1e40), ValueRangeError,
                                 "setitem"),
    "full 1e40 as int32": (lambda o: o["lib"].full((2,), 1e40, dtype=o["lib"].int32),
                           ValueRangeError, "full"),
    "full nan as int64": (lambda o: o["lib"].full((2,), NAN, dtype=o["lib"].int64),
                          ValueRangeError, "full"),
    "bool // bool": (lambda o: o["b"] // o["b"], DTypeError, "floor_div"),
    "bool % bool": (lambda o: o["b"] % o["b"], DTypeError, "remainder"),
    "bool // True": (lambda o: o["b"] // True, DTypeError, "floor_div"),
    "True % bool": (lambda o: True % o["b"], DTypeError, "remainder"),
    "int32 fmod 0": (lambda o: o["i32"].fmod(0), DivisionByZeroError, "fmod"),
}

#: the neighbouring cases torch takes: burn gives its values and dtype
TAKEN: dict[str, Callable[[Operands], Any]] = {
    "int + (2**63 - 1)": lambda o: o["i64"] + (2**63 - 1),
    "int + 2**63 (wraps)": lambda o: o["i64"] + 2**63,
    "int * (2**64 - 1) (wraps)": lambda o: o["i64"] * (BIG - 1),
    "float < 2**63": lambda o: o["f32"] < 2**63,
    "float * (2**64 - 1)": lambda o: o["f32"] * (BIG - 1),
    "full of a 0-d tensor": lambda o: o["lib"].full((2,), o["lib"].tensor(3.5)),
    "full of an IntEnum": lambda o: o["lib"].full((2,), _Level.HIGH),
    "int32 + 2**40 (wraps)": lambda o: o["i32"] + 2**40,
    "bool // 2": lambda o: o["b"] // 2,
    "int // bool": lambda o: o["i64"] // (o["b"] | True),
    "masked_fill nan into float": lambda o: o["f32"].masked_fill(o["f32"] > 1, NAN),
    "masked_fill 2.5 into int32": lambda o: o["i32"].masked_fill(o["i32"] > 0, 2.5),
    "full 2.5 as int32 (truncates)": lambda o: o["lib"].full((2,), 2.5, dtype=o["lib"].int32),
    "full -2.5 as int64 (truncates)": lambda o: o["lib"].full((2,), -2.5, dtype=o["lib"].int64),
    "full 1e40 as bool": lambda o: o["lib"].full((2,), 1e40, dtype=o["lib"].bool),
    "int32 fmod -3": lambda o: o["i32"].fmod(-3),
}


def _operands(lib: Any, device: burn.Device | None) -> Operands:
    """Fresh operands in torch (`device` None) or burn on `device`."""
    arrays = {"i64": np.array([5, -3, 4]), "i32": np.array([5, -3, 4], np.int32),
              "f32": np.array([0.5, 2.0, -1.0], np.float32), "b": np.array([True, False, True])}
    if lib is torch:
        out: Operands = {k: torch.from_numpy(a.copy()) for k, a in arrays.items()}
    else:
        out = {k: burn.tensor(a, device=device) for k, a in arrays.items()}
    out["lib"] = lib
    return out


@pytest.mark.op("add")
@pytest.mark.parametrize("name", sorted(REFUSED))
def test_a_scalar_torch_refuses_raises_at_the_call(name: str, device: burn.Device) -> None:
    call, error, op = REFUSED[name]
    with pytest.raises((OverflowError, RuntimeError, NotImplementedError, ValueError)):
        call(_operands(torch, None))
    operands = _operands(burn, device)  # (`full` takes the default device: the one tested)
    with pytest.raises(error, match=f"^{op}: "):
        call(operands)
    # nothing deferred: the device and the operands read at once
    assert burn.tensor(np.array([1.5], np.float32), device=device).numpy().tolist() == [1.5]
    assert operands["i32"].numpy().tolist() == [5, -3, 4]


@pytest.mark.op("add")
@pytest.mark.parametrize("name", sorted(TAKEN))
def test_the_neighbouring_scalars_torch_takes_give_its_values(name: str,
                                                               device: burn.Device) -> None:
    expected = TAKEN[name](_operands(torch, None))
    got = TAKEN[name](_operands(burn, device))
    assert got.shape == tuple(expected.shape)
    assert got.dtype.value == str(expected.dtype).removeprefix("torch.")
    np.testing.assert_array_equal(got.numpy(), expected.numpy())

