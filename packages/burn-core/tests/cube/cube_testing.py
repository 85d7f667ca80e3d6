"""Helpers shared by the cube backends' tests (conv, pool, resize, sample, rows kernels): device
views of host arrays in each layout, a recorder of the kernels a block launches, and the loops
of a cpu kernel gcc leaves scalar."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import burn
from burn.backends.cube import CubeTensor

#: kernel id -> (kernel, launch arguments) of each kernel launched while recording.
Launched = dict[int, tuple[Any, tuple[Any, ...]]]


def scalar_loops(source: str, tmp_path: Path) -> tuple[list[int], list[int]]:
    """The in-bounds loops (those whose bounds checks were hoisted out) of a kernel's C, and
    those of them gcc, with the cpu runtime's compiler and flags, leaves scalar.

    Returns:
        (loops, scalar loops), as 1-based line numbers of `source`.
    """
    from burn_cube.runtime.cpu import vectorized_lines

    lines = source.splitlines()
    fast = [i + 1 for i, line in enumerate(lines[:-1])
            if "for (v__" in line and "bc_oob" not in lines[i + 1]]
    done = vectorized_lines(source, tmp_path)
    return fast, [n for n in fast if n not in done]


def backend(name: str) -> Any:
    """The backend of device `name`."""
    return burn.Device(name).backend


def upload_view(bk: Any, a: np.ndarray, layout: str = "contiguous") -> CubeTensor:
    """`a` on the device as a view laid out as `layout`: contiguous, transposed (all dims
    reversed), strided (every other element of the last dim, from an offset) or broadcast (batch
    0 repeated with stride 0; `a`'s other batches are overwritten with it)."""
    if layout == "contiguous":
        return bk.upload(a)
    if layout == "transposed":
        t = bk.upload(np.ascontiguousarray(a.T))
        return t.view(a.shape, tuple(reversed(t.strides)))
    if layout == "strided":
        big = np.zeros((*a.shape[:-1], 2 * a.shape[-1] + 1), a.dtype)
        big[..., 1::2] = a
        t = bk.upload(big)
        return t.view(a.shape, (*t.strides[:-1], 2), t.offset + 1)
    assert layout == "broadcast", layout
    a[1:] = a[:1]
    t = bk.upload(np.ascontiguousarray(a[:1]))
    return t.view(a.shape, (0, *t.strides[1:]))


def record_launches(monkeypatch: pytest.MonkeyPatch, bk: Any) -> Launched:
    """Record every kernel `bk`'s backend class launches from now on, planned or not, by
    units or by cubes (the launches still run); the kernel's arguments after the launch
    geometry."""
    launched: Launched = {}
    for method, geometry in (("launch", 1), ("launch_planned", 1), ("launch_cubes_planned", 2)):
        real = getattr(type(bk), method)

        def record(self: Any, kernel: Any, *args: Any, real: Any = real,
                   geometry: int = geometry) -> None:
            launched[id(kernel)] = (kernel, args[geometry:])
            real(self, kernel, *args)

        monkeypatch.setattr(type(bk), method, record)
    return launched
