"""Which runtimes ran, and the shared Runtime interface."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import RUNTIMES

import burn_cube as bc


def test_cpu_is_under_test() -> None:
    print(f"burn-cube runtimes under test: {RUNTIMES}")
    assert "cpu" in RUNTIMES


def test_round_trip_and_stats(rt: bc.Runtime) -> None:
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    dev = rt.upload(x)
    assert dev.shape == (3, 4) and dev.strides == (4, 1) and dev.dtype is bc.f32
    np.testing.assert_array_equal(rt.download(dev), x)
    zeros = rt.allocate((5,), bc.i32)
    np.testing.assert_array_equal(zeros.numpy(), np.zeros(5, np.int32))
    rt.sync()
    assert isinstance(rt.memory_stats(), dict)
    props = rt.properties
    assert props.name == rt.name and "f32" in props.dtypes and props.max_cube_dim >= 64


def test_unknown_runtime() -> None:
    with pytest.raises(bc.errors.RuntimeUnavailableError):
        bc.runtime("tpu")
