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


@pytest.mark.parametrize("shape", [(), (1,), (2, 3)])
def test_uploads_keep_negative_zero(rt: bc.Runtime, shape: tuple[int, ...]) -> None:
    """-0.0 arrives as -0.0 in any shape (CuPy fills a 0-d array from its value, and a zero
    value by a memset)."""
    for dtype in (np.float32, np.float64):
        if bc.types.from_numpy(np.dtype(dtype)).name not in rt.properties.dtypes:
            continue
        x = np.full(shape, -0.0, dtype)
        back = rt.download(rt.upload(x))
        assert back.shape == shape and back.dtype == dtype
        assert np.signbit(back).all()


@pytest.mark.parametrize("shape", [(), (0,), (7,), (3, 5), (1 << 14,), (1 << 16,)])
def test_downloads_of_every_dtype_and_size(rt: bc.Runtime, shape: tuple[int, ...]) -> None:
    """Every dtype the runtime holds comes back bit for bit, in shape and dtype, from 0-d and
    empty arrays to sizes past cuda's pinned staging buffer (`PINNED_BYTES`), and from
    threads downloading at once."""
    from concurrent.futures import ThreadPoolExecutor

    rng = np.random.default_rng(len(shape))
    size = int(np.prod(shape))
    for name in sorted(rt.properties.dtypes):
        dtype = bc.types.DTYPES[name].numpy
        bits = rng.integers(0, 256, size * dtype.itemsize, dtype=np.uint8)
        x = (bits % 2).astype(dtype) if name == "bool" else bits.view(dtype)
        x = x.reshape(shape)
        dev = rt.upload(x)
        back = rt.download(dev)
        assert back.shape == shape and back.dtype == dtype
        assert back.tobytes() == x.tobytes()
    arrays = [np.arange(k, k + 4 * (1 + k % 5), dtype=np.float32) for k in range(32)]
    devs = [rt.upload(a) for a in arrays]
    with ThreadPoolExecutor(4) as pool:
        backs = list(pool.map(rt.download, devs))
    for a, back in zip(arrays, backs, strict=True):
        np.testing.assert_array_equal(back, a)


def test_host_mapped_memory_is_written_by_kernels(rt: bc.Runtime) -> None:
    """`host_mapped` (cpu: its memory; cuda: pinned host memory in unified addressing; wgpu:
    none): zeroed, written by a kernel, read in place by the host after `sync()`; the device
    reads the host's writes too."""
    mapped = rt.host_mapped((5, 7), bc.i32)
    if rt.name == "wgpu":
        assert mapped is None
        return
    assert mapped is not None
    array, host = mapped
    assert array.shape == host.shape == (5, 7) and host.dtype == np.int32
    assert not host.any()
    b = bc.KernelBuilder("add_position")
    out = b.tensor("out", bc.i32, rank=2, write=True)
    pos = b.ABSOLUTE_POS
    with b.if_(pos < out.len):
        out[b.index_of(out, pos)] = out[b.index_of(out, pos)] + b.cast(pos, bc.i32)
    kernel = b.kernel()
    host[0, 0] = 100  # a host write the kernel reads
    kernel.launch(rt, (1, 1, 1), 256, array)
    rt.sync()
    expected = np.arange(35, dtype=np.int32).reshape(5, 7)
    expected[0, 0] += 100
    np.testing.assert_array_equal(host, expected)
    np.testing.assert_array_equal(rt.download(array), expected)


def test_flush_starts_launches_without_waiting(rt: bc.Runtime) -> None:
    """`flush()`: wgpu submits the launches it encoded (one submit, no wait); on the cpu
    (launches run as they are made) and cuda (its stream queues them) nothing is left to
    start. The results are the kernel's either way."""
    b = bc.KernelBuilder("double")
    x = b.tensor("x", bc.f32, rank=1, write=True)
    pos = b.ABSOLUTE_POS
    with b.if_(pos < x.len):
        x[pos] = x[pos] * 2.0
    kernel = b.kernel()
    data = np.arange(-3, 5, dtype=np.float32)
    array = rt.upload(data)
    launches = 0
    # (wgpu submits the first launches after a wait at once, later ones in growing batches)
    while launches < 8 and (launches < 2 or getattr(rt, "_encoder", None) is None):
        kernel.launch(rt, (1, 1, 1), 256, array)
        launches += 1
    before = rt.memory_stats().get("submits")
    rt.flush()
    if rt.name == "wgpu":
        assert rt.memory_stats()["submits"] == before + 1
        rt.flush()  # nothing encoded since: nothing submitted
        assert rt.memory_stats()["submits"] == before + 1
    got = rt.download(array)
    assert got.shape == data.shape and got.dtype == data.dtype
    np.testing.assert_array_equal(got, data * 2.0**launches)


def test_unknown_runtime() -> None:
    with pytest.raises(bc.errors.RuntimeUnavailableError):
        bc.runtime("tpu")


def test_runtime_is_called_and_its_package_modules_import_by_dotted_name() -> None:
    """``burn_cube.runtime(...)`` returns the device's shared runtime, and the package's
    modules import as ``import burn_cube.runtime.cpu as m`` (the name once hid them)."""
    import importlib
    import inspect

    import burn_cube.runtime.cpu as imported  # an ImportError while the function hid them

    cpu_module = importlib.import_module("burn_cube.runtime.cpu")
    assert imported is cpu_module
    assert bc.runtime("cpu") is bc.runtime()
    assert isinstance(bc.runtime("cpu"), cpu_module.CpuRuntime)
    assert bc.runtime.DeviceArray is bc.DeviceArray
    assert list(inspect.signature(bc.runtime).parameters) == ["name", "index"]
    assert not hasattr(bc.runtime, "no_such_module")
