"""The cuda runtime's argument packing, checked without a GPU: stand-in storages (a device
pointer and a byte size) and a no-op kernel function record what a launch would pass."""

from __future__ import annotations

import contextlib
from typing import Any

import numpy as np
import pytest

from burn_cube import KernelBuilder, bf16, f32, u32
from burn_cube.codegen.cuda import param_layout
from burn_cube.runtime import cuda
from burn_cube.runtime.base import DeviceArray, meta_value


class _Storage:
    """A CuPy array's stand-in: `data.ptr` and `nbytes`."""

    def __init__(self, ptr: int, nbytes: int) -> None:
        self.data = type("Pointer", (), {"ptr": ptr})()
        self.nbytes = nbytes


class _Function:
    """Records each launch's grid, block and arguments."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def __call__(self, grid: Any, block: Any, args: tuple[Any, ...], stream: Any = None
                 ) -> None:
        self.calls.append((grid, block, args))


def _runtime() -> Any:
    rt = object.__new__(cuda.CudaRuntime)
    rt.device, rt.stream, rt._modules = contextlib.nullcontext(), None, {}
    return rt


def _kernel() -> Any:
    """A kernel with a rank-2 line tensor, a rank-1 tensor, a written rank-3 one and scalars
    of three dtypes (one bf16)."""
    b = KernelBuilder("packing", cube_dim=32)
    a = b.tensor("a", f32, rank=2, line_size=4, write=False)
    s = b.scalar("s", u32)
    c = b.tensor("c", f32, rank=1, write=False)
    h = b.scalar("h", bf16)
    out = b.tensor("out", f32, rank=3, write=True)
    g = b.scalar("g", f32)
    out[b.UNIT_POS] = c[b.UNIT_POS] * g + b.cast(h, f32) + b.cast(s, f32)
    _ = a
    return b.kernel().kernel


def _arrays(rt: Any, shared: bool = False) -> list[DeviceArray]:
    a_base = DeviceArray(rt, _Storage(1 << 20, 4 * 64 * 64), (64, 64), f32)
    a = a_base.view((8, 32), (64, 1), 64)  # strided rows of a larger storage
    c = DeviceArray(rt, _Storage(1 << 24, 4 * 7), (7,), f32)
    out_storage = a_base.handle if shared else _Storage(1 << 28, 4 * 60)
    out = DeviceArray(rt, out_storage, (3, 4, 5), f32)
    return [a, c, out]


def _expected(kernel: Any, args: list[Any]) -> list[Any]:
    """The launch arguments by `param_layout` and `meta_value` (the reference layout)."""
    by_name = dict(zip((p.name for p in kernel.params), args, strict=True))
    out: list[Any] = []
    for param, field, dim in param_layout(kernel):
        value = by_name[param]
        if field == "tensor":
            out.append(value.handle)
        elif field == "scalar":
            held = cuda._held(value.dtype)
            out.append(np.array(value).view(held)[()])
        else:
            lanes = kernel.buffers[param].dtype.lanes
            out.append(np.uint32(meta_value(value, field, dim, lanes)))
    return out


def _launch_args(rt: Any, kernel: Any, shared: bool = False) -> list[Any]:
    a, c, out = _arrays(rt, shared)
    return [a, np.uint32(7), c, np.array(1.5, dtype=bf16.numpy)[()], out, np.float32(2.5)]


def _same(got: tuple[Any, ...], want: list[Any]) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        if isinstance(w, _Storage):
            assert g is w
        else:
            assert type(g) is type(w) and g.dtype == w.dtype and g == w, (g, w)


def test_launch_packs_as_param_layout() -> None:
    rt, kernel = _runtime(), _kernel()
    fn = _Function()
    compiled = cuda.CompiledCuda(None, fn, "")
    args = _launch_args(rt, kernel)
    rt.launch(compiled, kernel, (3, 1, 1), args)
    rt.launch(compiled, kernel, (3, 1, 1), args)  # the packing kept on compiled
    assert [call[:2] for call in fn.calls] == [((3, 1, 1), kernel.cube_dim)] * 2
    for call in fn.calls:
        _same(call[2], _expected(kernel, args))


def test_plan_packs_as_launch() -> None:
    rt, kernel = _runtime(), _kernel()
    fn = _Function()
    compiled = cuda.CompiledCuda(None, fn, "")
    args = _launch_args(rt, kernel)
    launcher = rt.plan(compiled, kernel, (2, 1, 1), args)
    other = _arrays(rt)
    launcher([other[0], 9, other[1], 0.5, other[2], 1.0])
    want = _launch_args(rt, kernel)
    want[0], want[2], want[4] = other
    want[1], want[3], want[5] = (np.uint32(9), np.array(0.5, dtype=bf16.numpy)[()],
                                 np.float32(1.0))
    _same(fn.calls[0][2], _expected(kernel, want))


@pytest.mark.parametrize(("spans", "overlap"), [
    ([(0, 100, False), (100, 200, True)], False),  # adjacent
    ([(0, 100, False), (50, 150, True)], True),
    ([(0, 100, False), (50, 150, False)], False),  # read-only overlap
    ([(0, 1000, True), (300, 400, False), (600, 700, False)], True),  # inside a written one
    ([(0, 1000, False), (300, 400, False), (600, 700, True)], True),  # written inside another
    ([(600, 700, True), (0, 1000, False)], True),
    ([(0, 10, True), (20, 30, True), (40, 50, False)], False),
])
def test_overlap_sweep(spans: list[tuple[int, int, bool]], overlap: bool) -> None:
    """`_overlap` against every pair of ranges."""
    rt = _runtime()
    packer = type("P", (), {})()
    packer.spans = [(i, w) for i, (_, _, w) in enumerate(spans)]
    args = [DeviceArray(rt, _Storage(lo, hi - lo), (hi - lo,), f32) for lo, hi, _ in spans]
    assert cuda._overlap(packer, args) is overlap
    pairs = any(a0 < b1 and b0 < a1 and (wa or wb) for i, (a0, a1, wa) in enumerate(spans)
                for b0, b1, wb in spans[i + 1:])
    assert pairs is overlap


def test_overlapping_written_tensor_runs_the_aliased_variant(monkeypatch: pytest.MonkeyPatch
                                                             ) -> None:
    rt, kernel = _runtime(), _kernel()
    fn, aliased = _Function(), _Function()
    compiled = cuda.CompiledCuda(None, fn, "")
    monkeypatch.setattr(rt, "_load", lambda k, src: cuda.CompiledCuda(None, aliased, src))
    rt.launch(compiled, kernel, (1, 1, 1), _launch_args(rt, kernel, shared=True))
    assert not fn.calls and len(aliased.calls) == 1
