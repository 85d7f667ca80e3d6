"""A kernel for the cache tests; each comptime value is a distinct cache entry."""

from __future__ import annotations

import numpy as np

import burn_cube as bc
from burn_cube import ABSOLUTE_POS, Comptime, Tensor, f32
from burn_cube.runtime.cpu import CpuRuntime


@bc.kernel
def add_const(x: Tensor[f32], value: Comptime[float]):
    i = ABSOLUTE_POS
    if i < len(x):
        x[i] = x[i] + value


def run(value: float) -> float:
    """Launch on a fresh CPU runtime (no in-memory hit), return the result."""
    x = np.zeros(100, np.float32)
    add_const.launch(CpuRuntime(), 1, 128, x, value)
    return float(x[0])
