"""Signs of zero through every float unary op of the cube backends, against torch: +0.0 and
-0.0 in, the values torch gives out with their signs (odd functions keep -0.0; log gives -inf,
recip +-inf), on cpu and wgpu, plain and under fusion."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import burn

DEVICES = ["cpu", "wgpu", "cpu+fusion", "wgpu+fusion"]
#: every float unary op of the op table, by its tensor method (torch's name where it differs)
UNARY = {"exp": "exp", "log": "log", "log1p": "log1p", "sqrt": "sqrt", "sin": "sin",
         "cos": "cos", "tan": "tan", "sinh": "sinh", "cosh": "cosh", "tanh": "tanh",
         "asin": "asin", "acos": "acos", "atan": "atan", "erf": "erf", "round": "round",
         "floor": "floor", "ceil": "ceil", "trunc": "trunc", "abs": "abs", "sign": "sign",
         "asinh": "asinh", "acosh": "acosh", "atanh": "atanh", "neg": "neg",
         "recip": "reciprocal", "square": "square"}
VALUES = np.array([0.0, -0.0, 0.0, -0.0, -0.0], np.float32)


@pytest.fixture(params=DEVICES)
def device(request: pytest.FixtureRequest) -> str:
    spec = str(request.param)
    try:
        burn.tensor(np.zeros(1, np.float32), device=spec)
    except burn.errors.BurnError as exc:
        pytest.skip(f"{spec}: {exc}")
    return spec


@pytest.mark.parametrize("op", sorted(UNARY))
def test_unary_signs_of_zero(device: str, op: str) -> None:
    got = getattr(burn.tensor(VALUES, device=device), op)().numpy()
    want = getattr(torch.from_numpy(VALUES), UNARY[op])().numpy()
    assert got.shape == want.shape and got.dtype == want.dtype == np.float32
    np.testing.assert_array_equal(got, want, err_msg=f"{op} on {device}")
    signed = ~np.isnan(want)  # a NaN's sign bit means nothing
    np.testing.assert_array_equal(np.signbit(got[signed]), np.signbit(want[signed]),
                                  err_msg=f"{op} on {device}: signs of {VALUES}")
