"""Fixtures: each op runs on the NumPy backend twice, through its host fast path and through
the default burn-ops path (the one every backend runs)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

import burn
import burn_vision
from burn_vision.extension import VisionOps, register_vision_ops, vision_ops


def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> None:
    """A skipped test is a failure here: every reference this suite needs is installed."""
    if call.excinfo is not None and call.excinfo.errisinstance(pytest.skip.Exception):
        call.excinfo = None
        raise AssertionError(f"{item.nodeid} was skipped")


@pytest.fixture(params=["fast", "default"])
def path(request: pytest.FixtureRequest) -> Iterator[str]:
    """Run the test with the NumPy fast paths ("fast") or the default ops ("default")."""
    fast = vision_ops(burn.Device("numpy"))
    if request.param == "default":
        register_vision_ops("numpy", VisionOps())
    try:
        yield request.param
    finally:
        register_vision_ops("numpy", fast)


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(0)


def check(actual: burn.Tensor, expected: np.ndarray, dtype: burn.DType, atol: float = 0.0
          ) -> None:
    """Shape, dtype, then values."""
    assert actual.shape == expected.shape
    assert actual.dtype == dtype
    np.testing.assert_allclose(actual.to_numpy(), expected, atol=atol, rtol=0)


assert burn_vision.__version__ == "0.1.0"
