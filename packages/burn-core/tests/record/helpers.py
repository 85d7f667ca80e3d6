"""Small modules and checks shared by the record tests."""

from __future__ import annotations

import mmap

import numpy as np

import burn
from burn.nn import Buffer, Module, Param

DEVICES = [burn.Device("numpy"), burn.Device("numpy").autodiff()]


class Block(Module):
    """Params of every saved dtype, a Buffer, and a nested list of submodules."""

    def __init__(self, device: burn.Device, seed: int = 0) -> None:
        rng = np.random.default_rng(seed)
        self.w32 = Param(burn.tensor(rng.standard_normal((3, 4)), burn.float32, device))
        self.w16 = Param(burn.tensor(rng.standard_normal((5,)), burn.float16, device))
        self.wbf = Param(burn.tensor(rng.standard_normal((2, 3)), burn.bfloat16, device))
        self.steps = Buffer(burn.tensor(rng.integers(0, 99, (4,)), burn.int64, device))
        self.scalar = Buffer(burn.tensor(float(seed), burn.float32, device))
        self.layers = [Leaf(device, rng), Leaf(device, rng)]


class Leaf(Module):
    def __init__(self, device: burn.Device, rng: np.random.Generator) -> None:
        self.weight = Param(burn.tensor(rng.standard_normal((2, 2)), burn.float32, device))


def values(module: Module) -> dict[str, tuple[str, np.ndarray]]:
    """dtype name and values of every tensor."""
    return {k: (p.dtype.value, p.to_numpy()) for k, p in module.named_tensors()}


def assert_same(a: Module, b: Module) -> None:
    va, vb = values(a), values(b)
    assert va.keys() == vb.keys()
    for key, (dtype, arr) in va.items():
        assert vb[key][0] == dtype, key
        assert vb[key][1].shape == arr.shape, key
        np.testing.assert_array_equal(vb[key][1], arr, err_msg=key)


def mapped(array: object) -> bool:
    """Whether `array`'s memory comes from an mmap (following the .base / memoryview chain)."""
    seen = 0
    while array is not None and seen < 16:
        if isinstance(array, (mmap.mmap, np.memmap)):
            return True
        array = array.obj if isinstance(array, memoryview) else getattr(array, "base", None)
        seen += 1
    return False
