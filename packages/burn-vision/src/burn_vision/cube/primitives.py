"""Between burn tensors on a cube backend (cpu, wgpu, cuda) and burn-cube kernel arguments:
the backend and device array of a tensor, new device tensors, and 1- to 3-d launches."""

from __future__ import annotations

import math
from typing import Any

from burn import Tensor
from burn.dtype import DType


def backend(x: Tensor) -> Any:
    """The cube backend (`burn.backends.cube.CubeBackend`) running `x`'s undecorated device."""
    return x.device.backend


def array(x: Tensor) -> Any:
    """The burn-cube device array of `x` (a strided view kernels read in place)."""
    return x._prim.array


def empty(like: Tensor, shape: tuple[int, ...], dtype: DType) -> Tensor:
    """A new dense tensor (contents undefined) on `like`'s device."""
    return like._wrap(backend(like).empty(shape, dtype), dtype)


def launch(like: Tensor, kernel: Any, cubes: tuple[int, ...], cube_dim: int, *args: Any
           ) -> None:
    """Launch `kernel` on `like`'s runtime over `cubes` (1-3 counts, each at least 1) of
    `cube_dim` units; tensors among `args` pass as their device arrays."""
    counts = tuple(max(1, c) for c in (*cubes, 1, 1)[:3])
    values = [array(a) if isinstance(a, Tensor) else a for a in args]
    kernel.launch(backend(like).runtime, counts, cube_dim, *values)


def cube_count(units: int, cube_dim: int) -> int:
    """Cubes of `cube_dim` units covering `units`."""
    return max(1, math.ceil(units / cube_dim))
