"""The cube backends as devices: registration, layout views without copies, dtype support,
moves between devices, and the host fallback's bookkeeping (cpu and wgpu)."""

from __future__ import annotations

import math
import sys
import types
from collections.abc import Callable

import numpy as np
import pytest
import torch

import burn
import burn.functional as F
from burn.backends.cube import CubeTensor
from burn.errors import AllocationError, UnsupportedDTypeError

DEVICES = ["cpu", "wgpu"]


def _prim(t: burn.Tensor) -> CubeTensor:
    prim = t._prim
    assert isinstance(prim, CubeTensor)
    return prim


def _storage(t: burn.Tensor) -> object:
    array = _prim(t).array
    return (array.base if array.base is not None else array).handle


@pytest.mark.parametrize("name", DEVICES)
def test_cube_devices_are_registered_and_available(name: str) -> None:
    infos = {info.name: info for info in burn.available_backends()}
    assert infos[name].available, infos[name].reason
    assert infos["cuda"].available or infos["cuda"].reason  # says why not, without a GPU
    device = burn.Device(name)
    assert device.backend.name == name
    assert str(burn.Device(f"{name}+autodiff")) == f"{name}+autodiff"


@pytest.mark.parametrize("name", DEVICES)
def test_layout_ops_are_views_of_the_same_storage(name: str) -> None:
    data = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    x = burn.tensor(data, device=name)
    ref = torch.from_numpy(data)
    views = {
        "reshape": (x.reshape(6, 4), ref.reshape(6, 4)),
        "permute": (x.permute(2, 0, 1), ref.permute(2, 0, 1)),
        "swap_dims": (x.swap_dims(0, 2), ref.transpose(0, 2)),
        "expand": (x[:, :1].expand(2, 5, 4), ref[:, :1].expand(2, 5, 4)),
        "slice": (x[1:, ::2, 1:3], ref[1:, ::2, 1:3]),
        "unfold": (x.unfold(2, 2, 1), ref.unfold(2, 2, 1)),
    }
    for what, (view, expected) in views.items():
        assert _storage(view) is _storage(x), what
        assert tuple(view.shape) == tuple(expected.shape), what
        assert view.dtype == burn.float32, what
        np.testing.assert_array_equal(view.to_numpy(), expected.numpy(), err_msg=what)


@pytest.mark.parametrize("name", DEVICES)
def test_copies_happen_only_where_a_kernel_needs_dense_data(name: str) -> None:
    x = burn.tensor(np.arange(12, dtype=np.int64).reshape(3, 4), device=name)
    transposed = x.swap_dims(0, 1)
    assert not _prim(transposed).is_contiguous
    flat = transposed.reshape(12)  # a transposed view cannot be reshaped in place
    assert _storage(flat) is not _storage(x)
    np.testing.assert_array_equal(flat.to_numpy(), np.arange(12).reshape(3, 4).T.reshape(12))
    flipped = x.flip([0, 1])
    np.testing.assert_array_equal(flipped.to_numpy(), np.arange(12).reshape(3, 4)[::-1, ::-1])
    reversed_rows = x[::-1]
    np.testing.assert_array_equal(reversed_rows.to_numpy(), np.arange(12).reshape(3, 4)[::-1])


@pytest.mark.parametrize("name", DEVICES)
@pytest.mark.parametrize("shape", [(), (0,), (2, 0, 3), (5,)])
def test_empty_and_zero_dim_tensors_round_trip(name: str, shape: tuple[int, ...]) -> None:
    data = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    x = burn.tensor(data, device=name)
    y = (x * 2 + 1).to_numpy()
    assert y.shape == shape and y.dtype == np.float32
    np.testing.assert_array_equal(y, data * 2 + 1)


def test_wgpu_refuses_float64_and_bfloat16_with_a_typed_error() -> None:
    for dtype in (burn.float64, burn.bfloat16):
        with pytest.raises(UnsupportedDTypeError, match="wgpu"):
            burn.zeros((2,), dtype=dtype, device="wgpu")
        with pytest.raises(UnsupportedDTypeError):
            burn.ones((2,), device="wgpu").to(dtype)


def test_cpu_holds_every_float_dtype() -> None:
    for dtype in (burn.float64, burn.float32, burn.float16, burn.bfloat16):
        x = burn.tensor([1.5, -2.25], dtype=dtype, device="cpu")
        assert x.dtype == dtype
        np.testing.assert_array_equal((x + x).to_numpy().astype(np.float64), [3.0, -4.5])


def test_tensors_move_between_every_pair_of_devices() -> None:
    data = np.arange(6, dtype=np.float32).reshape(2, 3)
    for source in ("numpy", *DEVICES):
        for target in ("numpy", *DEVICES):
            moved = burn.tensor(data, device=source).swap_dims(0, 1).to(target)
            assert str(moved.device) == target
            np.testing.assert_array_equal(moved.to_numpy(), data.T)


@pytest.mark.parametrize("name", DEVICES)
def test_elementwise_ops_run_on_kernels_not_on_the_host(name: str) -> None:
    device = burn.Device(name)
    before = sum(device.backend.fallbacks.values())
    x = burn.tensor(np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4), device=device)
    y = ((x.exp() - x.swap_dims(0, 1).reshape(3, 4)) * 0.5).clamp(-1, 1) > 0
    assert y.dtype == burn.bool_
    assert sum(device.backend.fallbacks.values()) == before
    xt = torch.linspace(-2, 2, 12).reshape(3, 4)
    expected = ((xt.exp() - xt.T.reshape(3, 4)) * 0.5).clamp(-1, 1) > 0
    np.testing.assert_array_equal(y.to_numpy(), expected.numpy())


@pytest.mark.parametrize("name", DEVICES)
def test_an_allocation_the_device_cannot_hold_is_a_typed_error_and_the_device_stays_usable(
        name: str) -> None:
    backend = burn.Device(name).backend
    with pytest.raises(AllocationError, match=name) as info:
        backend.empty((2**40,), burn.float32)
    assert info.value.details["shape"] == (2**40,)
    x = burn.tensor([1.0, 2.0], device=name)
    np.testing.assert_array_equal((x * 3).to_numpy(), [3.0, 6.0])
    assert isinstance(backend.memory_stats(), dict)


def test_cpu_tensors_share_their_memory_with_torch_and_numpy() -> None:
    x = burn.tensor(np.arange(6, dtype=np.float32).reshape(2, 3), device="cpu")
    shared = torch.from_dlpack(x.swap_dims(0, 1))  # a strided view, exported in place
    assert tuple(shared.shape) == (3, 2) and shared.stride() == (1, 3)
    assert shared.dtype == torch.float32
    view = np.asarray(x)
    view[0, 0] = 42.0
    assert float(shared[0, 0]) == 42.0 and x.to_numpy()[0, 0] == 42.0
    assert x.__dlpack_device__() == (1, 0)
    copied = np.array(x, copy=True)
    copied[0, 1] = -1.0
    assert x.to_numpy()[0, 1] == 1.0


@pytest.mark.parametrize("spec", ["wgpu", "cpu+autodiff", "wgpu+autodiff"])
def test_other_devices_export_their_values_through_dlpack(spec: str) -> None:
    x = burn.tensor([[1.5, -2.0]], device=spec)
    exported = torch.from_dlpack(x)
    assert tuple(exported.shape) == (1, 2) and exported.dtype == torch.float32
    np.testing.assert_array_equal(exported.numpy(), [[1.5, -2.0]])
    assert burn.from_dlpack(exported, device=spec).to_numpy().tolist() == [[1.5, -2.0]]


@pytest.mark.parametrize("name", DEVICES)
@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_saturated_integer_arithmetic_wraps_like_numpy_without_trapping(name: str,
                                                                       dtype: str) -> None:
    info = np.iinfo(dtype)
    a = np.array([info.min, info.max, -7, 7, info.min], dtype=dtype)
    b = np.array([-1, 1, 2, -2, info.max], dtype=dtype)
    x, y = burn.tensor(a, device=name), burn.tensor(b, device=name)
    with np.errstate(all="ignore"):  # numpy warns about the overflow, and wraps
        expected = {"floor_div": a // b, "remainder": a % b, "add": a + a, "neg": -a,
                    "mul": a * b, "div_scalar": a // -1}
    got = {"floor_div": x // y, "remainder": x % y, "add": x + x, "neg": -x, "mul": x * y,
           "div_scalar": x // -1}  # MIN // -1 traps in C unless handled
    for op, value in got.items():
        assert value.dtype == getattr(burn, dtype), op
        np.testing.assert_array_equal(value.to_numpy(), expected[op], err_msg=op)



@pytest.mark.parametrize("name", DEVICES)
def test_float32_ops_never_need_float64(name: str) -> None:
    """Ops asked for float32 (or int) results work on devices without float64 (most WebGPU
    adapters): float arange, the windows and integer is_close compute wide only where the
    device holds float64 (the conformance suite counts an UnsupportedDTypeError as a pass)."""
    device = burn.Device(name)
    cases = [(burn.arange(0.0, 1.0, 0.1, device=device), torch.arange(0.0, 1.0, 0.1)),
             (burn.arange(-2.5, 2, device=device), torch.arange(-2.5, 2)),
             (burn.hann_window(7, device=device), torch.hann_window(7)),
             (burn.hamming_window(6, alpha=0.54, beta=0.46, device=device),
              torch.hamming_window(6)),
             (burn.blackman_window(5, periodic=False, device=device),
              torch.blackman_window(5, False))]
    for got, want in cases:
        assert got.device == device and got.dtype == burn.float32
        np.testing.assert_allclose(np.asarray(got), want.numpy(), rtol=1e-6, atol=1e-6)
    a, b = burn.tensor([1, 2, 300], device=device), burn.tensor([1, 3, 302], device=device)
    close = a.is_close(b, rtol=0.0, atol=1.0)
    assert close.dtype == burn.bool_
    want_close = torch.isclose(torch.tensor([1, 2, 300]), torch.tensor([1, 3, 302]), rtol=0.0,
                               atol=1.0)
    assert np.asarray(close).tolist() == want_close.tolist()


def test_cuda_export_waits_for_the_runtime_stream(monkeypatch: pytest.MonkeyPatch) -> None:
    """A zero-copy export on cuda (DLPack, CuPy) finishes the runtime's non-blocking stream
    first: the consumer reads on its own stream, which does not wait for it (torch read a
    tensor's memory before its upload had landed), and marks the storage shared. CuPy
    stand-ins: the view is the storage."""
    from burn.backends.cube import backend as cube_backend

    stride_tricks = types.SimpleNamespace(as_strided=None)
    monkeypatch.setitem(sys.modules, "cupy", types.SimpleNamespace(
        lib=types.SimpleNamespace(stride_tricks=stride_tricks)))

    order: list[str] = []

    class Runtime:
        def sync(self) -> None:
            order.append("sync")

    class Cuda:
        runtime_name, runtime = "cuda", Runtime()

    def storage(x: object, as_strided: object) -> str:
        order.append("view")
        return "view"

    monkeypatch.setattr(cube_backend, "strided_storage", storage)
    monkeypatch.setattr(cube_backend, "pending", lambda backend: type(
        "Checks", (), {"raise_pending": staticmethod(lambda: order.append("checks"))})())
    storage_array = types.SimpleNamespace(base=None, shared=False)
    tensor = type("T", (), {"dtype": burn.float32, "array": storage_array})()
    assert cube_backend.CubeBackend.exported(Cuda(), tensor) == "view"  # type: ignore[arg-type]
    assert order == ["checks", "sync", "view"]
    assert storage_array.shared  # its buffer never returns to the runtime's pool


@pytest.mark.parametrize("source", ["float64", "float32", "int64", "bool", "strided"])
def test_cpu_tensors_from_data_start_on_a_cache_line(source: str) -> None:
    """`burn.tensor` on the cpu copies large data into storage that starts on a cache line, as
    the kernels' outputs do (a misaligned input made the same column sum 40% slower than an
    aligned one), converting as torch.tensor does; small data keeps numpy's alignment."""
    rng = np.random.default_rng(3)
    base = rng.standard_normal((257, 129)) * 40
    data = {"float64": base, "float32": base.astype(np.float32),
            "int64": base.astype(np.int64), "bool": base > 0,
            "strided": base.astype(np.float32)[::2, 1::3]}[source]
    for dtype in (None, burn.float32) if source != "bool" else (None,):
        x = burn.tensor(data, device="cpu", dtype=dtype)
        expected = torch.tensor(data, dtype=None if dtype is None else torch.float32)
        assert x.shape == tuple(expected.shape)
        assert str(x.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1]
        storage = x._prim.array.handle
        if storage.nbytes >= 1 << 16:
            assert storage.ctypes.data % 64 == 0
        np.testing.assert_array_equal(x.to_numpy(), expected.numpy())


@pytest.mark.parametrize("name", DEVICES)
@pytest.mark.parametrize("op,run", [
    ("exp", lambda x, y: x.exp()),
    ("add", lambda x, y: x + y),
    ("add_scalar", lambda x, y: x + 1.0),
    ("greater", lambda x, y: x > y),
])
def test_an_op_whose_result_the_device_cannot_hold_names_itself(
        name: str, op: str, run: Callable[[burn.Tensor, burn.Tensor], burn.Tensor]) -> None:
    """A broadcast view's elementwise result past the device's memory: AllocationError naming
    the op (not the allocation under it), its shape and dtype; the device stays usable."""
    x = burn.ones(1, 1024, 1024, device=name).expand((2**20, 1024, 1024))
    y = burn.ones(1024, device=name)
    with pytest.raises(AllocationError) as info:
        run(x, y)
    assert str(info.value).startswith(f"{op}:"), str(info.value)
    assert info.value.details["shape"] == (2**20, 1024, 1024)
    assert info.value.details["dtype"] in ("float32", "bool")
    np.testing.assert_array_equal((y[:2] * 3).to_numpy(), [3.0, 3.0])


@pytest.mark.parametrize("name", DEVICES)
@pytest.mark.parametrize("op,run", [
    ("cumsum", lambda x: x.cumsum(2)),
    ("cat", lambda x: burn.cat([x, x], 0)),
    ("flip", lambda x: x.flip((0,))),
    ("reshape", lambda x: x.reshape((-1,))),
    ("softmax", lambda x: F.softmax(x, 2)),
    ("conv2d", lambda x: F.conv2d(
        burn.ones(1, 1, 1024, 1024, device=x.device).expand((2**20, 1, 1024, 1024)),
        burn.ones(1, 1, 1, 1, device=x.device))),
    ("tril", lambda x: x.tril()),
    ("sort", lambda x: x.sort(2)),
    ("repeat", lambda x: x.repeat((1, 1, 2))),
    ("max_pool2d", lambda x: F.max_pool2d(
        burn.ones(1, 1, 1024, 1024, device=x.device).expand((2**20, 1, 1024, 1024)), 1)),
])
def test_an_op_whose_buffer_the_device_cannot_hold_names_itself(
        name: str, op: str, run: Callable[[burn.Tensor], burn.Tensor]) -> None:
    """Ops other than the elementwise ones (scans, copies, row kernels, a convolution's
    product): AllocationError naming the op the user called, not the allocation under it
    ("empty") or an op it is built on ("matmul" under a convolution, "sort_with_indices"
    under sort); the device stays usable."""
    x = burn.ones(1, 1024, 1024, device=name).expand((2**20, 1024, 1024))
    with pytest.raises(AllocationError) as info:
        run(x)
    assert str(info.value).startswith(f"{op}:"), str(info.value)
    assert math.prod(info.value.details["shape"]) >= 2**40
    np.testing.assert_array_equal((x[:1, :1, :2] * 3).to_numpy(), [[[3.0, 3.0]]])
