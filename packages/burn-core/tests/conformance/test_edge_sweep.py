"""Edge inputs the family tests do not try, against torch: ties of signed zeros, NaN and
overflow through the math functions and reductions, non-contiguous views. Each case here was a
difference from torch on some backend once; values are compared bit for bit where the sign of
a zero or a NaN matters."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import burn

from .reference import T, check_forward, held


def assert_signs(actual: burn.Tensor, expected: torch.Tensor) -> None:
    """The signs of `actual`'s zeros and NaN positions equal `expected`'s (values are compared
    by `check_forward`, which takes -0.0 == 0.0)."""
    got = np.asarray(actual.to_numpy(), dtype=np.float64)
    want = expected.detach().to(torch.float64).numpy()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg="NaN positions")
    zeros = (got == 0) & (want == 0)
    np.testing.assert_array_equal(np.signbit(got[zeros]), np.signbit(want[zeros]),
                                  err_msg="signs of zeros")


@pytest.mark.op("cummax")
@pytest.mark.parametrize("op", ["cummax", "cummin"])
@pytest.mark.parametrize("n", [4, 5000])
def test_running_extreme_value_follows_its_index(op: str, n: int, device: burn.Device) -> None:
    """At a tie of -0.0 and 0.0 the running extreme takes the later index and its value, as
    torch (one line per unit, and a long line scanned in chunks on the cube backends)."""
    rng = np.random.default_rng(n)
    data = np.where(rng.random((2, n)) < 0.5, -0.0, 0.0)
    data[1, ::3] = np.nan if n > 4 else data[1, ::3]
    x = T(data, held("float64", device), "transposed" if n == 4 else "contiguous")
    dim = 0 if n == 4 else 1
    values, _ = check_forward(lambda a: getattr(a, op)(dim), lambda a: tuple(getattr(a, op)(dim)),
                              [x], device)
    assert_signs(values, getattr(torch.from_numpy(data), op)(dim).values)
