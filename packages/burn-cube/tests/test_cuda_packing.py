"""The cuda runtime's argument packing, checked without a GPU: stand-in storages (a device
pointer and a byte size) and a recording `cuLaunchKernel` read back the bytes a launch would
pass."""

from __future__ import annotations

import contextlib
import ctypes
import threading
from typing import Any

import numpy as np
import pytest

from burn_cube import KernelBuilder, bf16, f32, u32
from burn_cube.codegen.cuda import param_layout
from burn_cube.errors import LaunchError
from burn_cube.runtime import cuda
from burn_cube.runtime.base import DeviceArray, meta_value


class _Storage:
    """A CuPy array's stand-in: `data.ptr` and `nbytes`."""

    def __init__(self, ptr: int, nbytes: int) -> None:
        self.data = type("Pointer", (), {"ptr": ptr})()
        self.nbytes = nbytes


class _Launches:
    """Records each launch's function, grid, block and the bytes of every argument (as
    `param_layout` orders them)."""

    def __init__(self, kernel: Any) -> None:
        self.sizes = _sizes(kernel)
        self.calls: list[tuple[Any, ...]] = []

    def __call__(self, function: int, grid: Any, block: Any, stream: int, params: int) -> None:
        addresses = (ctypes.c_uint64 * len(self.sizes)).from_address(params)
        args = [ctypes.string_at(at, size) for at, size in zip(addresses, self.sizes,
                                                               strict=True)]
        self.calls.append((function, grid, block, args))


def _sizes(kernel: Any) -> list[int]:
    """Each argument's byte size, in `param_layout`'s order."""
    scalars = {p.name: p.dtype.numpy.itemsize for p in kernel.scalars}
    return [8 if field == "tensor" else scalars[name] if field == "scalar" else 4
            for name, field, _ in param_layout(kernel)]


@pytest.fixture(autouse=True)
def _current_device(monkeypatch: pytest.MonkeyPatch) -> None:
    """Device 0 is current (no CUDA call)."""
    monkeypatch.setattr(cuda, "getDevice", lambda: 0)


def _runtime() -> Any:
    rt = object.__new__(cuda.CudaRuntime)
    rt.device, rt._modules, rt.index = contextlib.nullcontext(), {}, 0
    rt.stream = type("Stream", (), {"ptr": 0})()
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


def _expected(kernel: Any, args: list[Any]) -> list[bytes]:
    """The launch arguments' bytes by `param_layout` and `meta_value` (the reference
    layout)."""
    by_name = dict(zip((p.name for p in kernel.params), args, strict=True))
    out: list[bytes] = []
    for param, field, dim in param_layout(kernel):
        value = by_name[param]
        if field == "tensor":
            out.append(np.uint64(value.handle.data.ptr).tobytes())
        elif field == "scalar":
            out.append(np.array(value).tobytes())
        else:
            lanes = kernel.buffers[param].dtype.lanes
            out.append(np.uint32(meta_value(value, field, dim, lanes)).tobytes())
    return out


def _launch_args(rt: Any, kernel: Any, shared: bool = False) -> list[Any]:
    a, c, out = _arrays(rt, shared)
    return [a, np.uint32(7), c, np.array(1.5, dtype=bf16.numpy)[()], out, np.float32(2.5)]


def test_launch_packs_as_param_layout(monkeypatch: pytest.MonkeyPatch) -> None:
    rt, kernel = _runtime(), _kernel()
    launches = _Launches(kernel)
    monkeypatch.setattr(cuda, "_launch", launches)
    compiled = cuda.CompiledCuda(None, None, "", 77)
    args = _launch_args(rt, kernel)
    rt.launch(compiled, kernel, (3, 1, 1), args)
    rt.launch(compiled, kernel, (3, 1, 1), args)  # the packing kept on compiled
    assert [call[:3] for call in launches.calls] == [(77, (3, 1, 1), kernel.cube_dim)] * 2
    for call in launches.calls:
        assert call[3] == _expected(kernel, args)


def test_plan_packs_as_launch(monkeypatch: pytest.MonkeyPatch) -> None:
    rt, kernel = _runtime(), _kernel()
    launches = _Launches(kernel)
    monkeypatch.setattr(cuda, "_launch", launches)
    compiled = cuda.CompiledCuda(None, None, "", 5)
    args = _launch_args(rt, kernel)
    launcher = rt.plan(compiled, kernel, (2, 1, 1), args)
    other = _arrays(rt)
    launcher([other[0], 9, other[1], 0.5, other[2], 1.0])
    want = _launch_args(rt, kernel)
    want[0], want[2], want[4] = other
    want[1], want[3], want[5] = (np.uint32(9), np.array(0.5, dtype=bf16.numpy)[()],
                                 np.float32(1.0))
    assert launches.calls[0][3] == _expected(kernel, want)


def test_plans_of_one_kernel_keep_their_own_metadata(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two plans of one kernel over different layouts, launched in turn and from another
    thread, each pass their own metadata (packed once per plan and thread) with the arrays
    and numbers of that launch."""
    rt, kernel = _runtime(), _kernel()
    launches = _Launches(kernel)
    monkeypatch.setattr(cuda, "_launch", launches)
    compiled = cuda.CompiledCuda(None, None, "", 5)
    first = _launch_args(rt, kernel)
    second = _launch_args(rt, kernel)
    second[0] = DeviceArray(rt, _Storage(1 << 30, 4 * 16 * 8), (16, 8), f32)
    second[4] = DeviceArray(rt, _Storage(1 << 31, 4 * 24), (2, 3, 4), f32)
    plans = [rt.plan(compiled, kernel, (2, 1, 1), args) for args in (first, second)]
    plans[0](first)
    plans[1](second)
    thread = threading.Thread(target=plans[0], args=(second[:4] + first[4:],))
    thread.start()
    thread.join()
    plans[1](second)
    assert len(launches.calls) == 4
    assert launches.calls[0][3] == _expected(kernel, first)
    assert launches.calls[1][3] == launches.calls[3][3] == _expected(kernel, second)
    mixed = _expected(kernel, second[:4] + first[4:])
    layout = [field for _, field, _ in param_layout(kernel)]
    for got, want, own, field in zip(launches.calls[2][3], mixed, _expected(kernel, first),
                                      layout, strict=True):
        assert got == (own if field not in ("tensor", "scalar") else want)


def test_scalar_out_of_range_is_a_launch_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """A value the parameter's C type cannot hold raises LaunchError, and nothing runs."""
    rt, kernel = _runtime(), _kernel()
    launches = _Launches(kernel)
    monkeypatch.setattr(cuda, "_launch", launches)
    args = _launch_args(rt, kernel)
    args[1] = -1  # the u32 scalar
    with pytest.raises(LaunchError, match="do not fit"):
        rt.launch(cuda.CompiledCuda(None, None, "", 5), kernel, (1, 1, 1), args)
    assert not launches.calls


@pytest.mark.parametrize(("spans", "overlap"), [
    ([(0, False), (1, True)], False),  # distinct storages, one written
    ([(0, True), (1, True), (2, False)], False),
    ([(0, False), (0, True)], True),  # one storage twice, written once
    ([(0, True), (1, False), (0, False)], True),
    ([(0, False), (1, False), (0, False)], False),  # read twice only
    ([(3, True), (3, True)], False),  # an empty storage overlaps nothing
    ([(1, False), (2, True), (1, True)], True),
])
def test_overlap_sweep(spans: list[tuple[int, bool]], overlap: bool) -> None:
    """`_overlap` over storages named by number (3: an empty one): distinct storages are
    allocations of their own and never overlap; one storage passed twice does where either
    argument is written."""
    rt = _runtime()
    storages = [_Storage(1 << 20, 64), _Storage(1 << 21, 64), _Storage(1 << 22, 64),
                _Storage(1 << 23, 0)]
    packer = type("P", (), {})()
    packer.spans = [(i, w) for i, (_, w) in enumerate(spans)]
    packer.tensors = [i for i, _ in packer.spans]
    args = [DeviceArray(rt, storages[k], (storages[k].nbytes // 4,), f32) for k, _ in spans]
    assert cuda._overlap(packer, args) is overlap
    pairs = any(a == b and storages[a].nbytes and (wa or wb)
                for i, (a, wa) in enumerate(spans) for b, wb in spans[i + 1:])
    assert pairs is overlap


def test_overlapping_written_tensor_runs_the_aliased_variant(monkeypatch: pytest.MonkeyPatch
                                                             ) -> None:
    rt, kernel = _runtime(), _kernel()
    launches = _Launches(kernel)
    monkeypatch.setattr(cuda, "_launch", launches)
    compiled = cuda.CompiledCuda(None, None, "", 1)
    monkeypatch.setattr(rt, "_load", lambda k, src: cuda.CompiledCuda(None, None, src, 2))
    rt.launch(compiled, kernel, (1, 1, 1), _launch_args(rt, kernel, shared=True))
    assert [call[0] for call in launches.calls] == [2]


def test_launch_makes_its_device_current_only_when_it_is_not(monkeypatch: pytest.MonkeyPatch
                                                              ) -> None:
    """On device 0 a launch runs as is; with another device current it runs inside the
    runtime's device context."""
    rt, kernel = _runtime(), _kernel()
    entered: list[bool] = []

    class Device:
        def __enter__(self) -> None:
            entered.append(True)

        def __exit__(self, *exc: object) -> None:
            entered.append(False)

    rt.device = Device()
    monkeypatch.setattr(cuda, "_launch", _Launches(kernel))
    compiled = cuda.CompiledCuda(None, None, "", 3)
    rt.launch(compiled, kernel, (1, 1, 1), _launch_args(rt, kernel))
    assert entered == []
    monkeypatch.setattr(cuda, "getDevice", lambda: 1)
    rt.launch(compiled, kernel, (1, 1, 1), _launch_args(rt, kernel))
    assert entered == [True, False]
