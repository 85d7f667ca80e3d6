"""The fusion suite's count of backend calls per training step."""

from __future__ import annotations

import numpy as np
import pytest

import burn
from burn_bench.fusion import cube_calls


def test_cube_calls_counts_the_ops_a_step_runs_and_removes_its_counters() -> None:
    if not any(b.name == "cpu" and b.available for b in burn.available_backends()):
        pytest.skip("the cpu backend is not available here")
    cube = burn.Device("cpu").backend
    x = burn.tensor(np.arange(6, dtype=np.float32).reshape(2, 3), device="cpu")
    fused = burn.tensor(np.arange(6, dtype=np.float32).reshape(2, 3), device="cpu+fusion")

    def step() -> None:
        ((x + x) * 2.0).swap_dims(0, 1).to_numpy()
        (fused + 1.0).matmul(fused.swap_dims(0, 1)).to_numpy()  # through the fusion layer

    calls = cube_calls(step, cube)
    assert calls["float_add"] == 1 and calls["float_mul_scalar"] == 1
    assert calls["float_swap_dims"] == 2 and calls["float_matmul"] == 1
    assert calls["float_into_data"] == 2
    assert not [name for name in vars(cube) if name.startswith("float_")]
    assert cube_calls(lambda: None, cube).total() == 0
