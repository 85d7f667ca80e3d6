"""Fused kernels keep NaN, infinities and signed zeros where algebraic identities would drop
them: WGSL lets drivers assume finite math, and Mesa's compiler (llvmpipe) rewrote fused
``x - x`` to 0 and ``exp(log(x))`` to ``x`` (`burn.fusion.emit.Opaque`). Each expression runs
fused and is compared with PyTorch bit for bit in its special values."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
from fusion_testing import DEVICES, reference

import burn

pytestmark = [pytest.mark.usefixtures("empty_stream", "fuse_small_blocks")]

X = np.array([1.5, np.inf, -np.inf, np.nan, -0.0, 0.0, -2.0, 3e38, 1.5e-38], np.float32)
Y = np.array([np.inf, 2.0, -np.inf, 1.0, 0.0, -0.0, 3.0, 3e38, 2e-38], np.float32)

#: name -> f(x, y), the same code on burn and torch tensors
IDENTITIES: dict[str, Callable[[Any, Any], Any]] = {
    "x - x": lambda x, y: x - x,
    "x + (-x)": lambda x, y: x + (-x),
    "(-x) + x": lambda x, y: (-x) + x,
    "(x - x) + -0.0": lambda x, y: (x - x) + (-0.0),
    "exp(log(x))": lambda x, y: x.log().exp(),
    "1 / (1 / x)": lambda x, y: 1.0 / (1.0 / x),
    "sqrt(x) ** 2": lambda x, y: x.sqrt().square(),
    "(x + y) - y": lambda x, y: (x + y) - y,
    "(x * y) / y": lambda x, y: (x * y) / y,
    "x * y - x * y": lambda x, y: x * y - x * y,
    "exp(x) - exp(x)": lambda x, y: x.exp() - x.exp(),
    "x - (x + y)": lambda x, y: x - (x + y),
}


def assert_same_specials(got: burn.Tensor, want: torch.Tensor) -> None:
    """Shape and dtype, NaN and infinities where torch has them, zeros' signs, and finite
    values within float32 rounding (a math function's error grows with exp(log(3e38)))."""
    values, expected = got.to_numpy(), want.numpy()
    assert values.shape == expected.shape and values.dtype == expected.dtype
    np.testing.assert_array_equal(np.isnan(values), np.isnan(expected))
    np.testing.assert_allclose(values, expected, rtol=1e-4, atol=0, equal_nan=True)
    zero = expected == 0
    np.testing.assert_array_equal(np.signbit(values[zero]), np.signbit(expected[zero]))


@pytest.mark.parametrize("base", DEVICES)
@pytest.mark.parametrize("name", IDENTITIES)
def test_elementwise_blocks_keep_special_values(base: str, name: str) -> None:
    fn = IDENTITIES[name]
    device = f"{base}+fusion"
    x = burn.tensor(X, device=device) * 1.0  # pending: the block starts here
    got = fn(x, burn.tensor(Y, device=device))
    assert_same_specials(got, reference(base, lambda: fn(torch.from_numpy(X) * 1.0,
                                                         torch.from_numpy(Y))))


@pytest.mark.parametrize("base", DEVICES)
def test_reduce_blocks_keep_special_values(base: str) -> None:
    device = f"{base}+fusion"
    data = X.reshape(1, -1).repeat(3, 0)
    x, t = burn.tensor(data, device=device) * 1.0, torch.from_numpy(data) * 1.0
    assert_same_specials((x - x).sum(1), (t - t).sum(1))
    x = burn.tensor(data, device=device) * 1.0
    assert_same_specials(x.log().exp().sum(1), t.log().exp().sum(1))
    x = burn.tensor(data, device=device) * 1.0
    s, r = x.sum(1, keepdim=True), t.sum(1, keepdim=True)
    assert_same_specials((s - s) + (-0.0), (r - r) + (-0.0))


@pytest.mark.parametrize("base", DEVICES)
def test_matmul_epilogues_keep_special_values(base: str) -> None:
    device = f"{base}+fusion"
    eye = np.eye(2, dtype=np.float32)
    w = np.array([[-2.0, 3.0], [1.0, 1.5]], np.float32)
    want = (torch.from_numpy(eye) @ torch.from_numpy(w)).log().exp()
    for _ in range(3):  # the epilogue is fused once the product's kernel is chosen
        got = (burn.tensor(eye, device=device) @ burn.tensor(w, device=device)).log().exp()
        assert_same_specials(got, want)
