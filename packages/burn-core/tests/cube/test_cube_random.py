"""Philox random kernels of the cube backends: the Philox4x32-10 known answers, bitwise-equal
streams on cpu and wgpu against a NumPy reference of the words, distribution statistics (means,
variances, Kolmogorov-Smirnov), ranges, dtypes, seeding and call streams; int_arange."""

from __future__ import annotations

import math
from typing import Any

import ml_dtypes
import numpy as np
import pytest
import torch

import burn
from burn.backend.protocol import Distribution
from burn.backends.cube.creation import arange_kernel
from burn.backends.cube.random import PHILOX_M, PHILOX_W, philox
from burn.dtype import DType
from burn.errors import ValueRangeError

DEVICES = ["cpu", "wgpu"]
U32 = np.uint64(0xFFFFFFFF)


def philox_ref(counter: np.ndarray, key: tuple[int, int]) -> np.ndarray:
    """Philox4x32-10 of counters [n, 4] (uint64 holding u32) under `key`: words [n, 4]."""
    c = [counter[:, i].astype(np.uint64) for i in range(4)]
    k0, k1 = np.uint64(key[0]), np.uint64(key[1])
    m0, m1 = np.uint64(PHILOX_M[0]), np.uint64(PHILOX_M[1])
    for rnd in range(10):
        p0, p1 = c[0] * m0, c[2] * m1
        c = [(p1 >> np.uint64(32)) ^ c[1] ^ k0, p1 & U32, (p0 >> np.uint64(32)) ^ c[3] ^ k1,
             p0 & U32]
        if rnd < 9:
            k0, k1 = (k0 + np.uint64(PHILOX_W[0])) & U32, (k1 + np.uint64(PHILOX_W[1])) & U32
    return np.stack(c, axis=1)


def stream_words(seed: int, call: int, n: int) -> np.ndarray:
    """The words of call `call` after `seed` in the order of `n` one-word output elements:
    word j of block i is element i + j * ceil(n / 4)."""
    blocks = -(-n // 4)
    counter = np.zeros((blocks, 4), np.uint64)
    counter[:, 0] = np.arange(blocks)
    counter[:, 2], counter[:, 3] = call & 0xFFFFFFFF, call >> 32
    words = philox_ref(counter, (seed & 0xFFFFFFFF, (seed >> 32) & 0xFFFFFFFF))
    return words.T.reshape(-1)[:n]


def backend_of(name: str) -> tuple[burn.Device, Any]:
    device = burn.Device(name)
    return device, device.backend


def draw(name: str, shape: tuple[int, ...], dist: Distribution, dtype: DType) -> np.ndarray:
    device, be = backend_of(name)
    out = be.float_random(shape, dist, dtype, device)
    assert be.shape(out) == shape and be.dtype(out) is dtype
    return be.float_into_data(out)


@pytest.mark.parametrize("name", DEVICES)
def test_philox_known_answers(name: str) -> None:
    """Random123's kat_vectors for philox4x32_10 (and the reference implementation here)."""
    from burn_cube import KernelBuilder, u32

    b = KernelBuilder("philox_kat")
    counter = [b.scalar(f"c{i}", u32) for i in range(4)]
    key = [b.scalar(f"k{i}", u32) for i in range(2)]
    out = b.tensor("out", u32, rank=1, write=True)
    with b.if_(b.ABSOLUTE_POS < 1):
        for j, w in enumerate(philox(b, counter, key)):
            out[j] = w
    kernel = b.kernel()
    cases = [((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
             ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2,
              (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
             ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
              (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1))]
    _, be = backend_of(name)
    for ctr, k, expected in cases:
        words = np.zeros(4, np.uint32)
        kernel.launch(be.runtime, (1, 1, 1), 256, *ctr, *k, words)
        assert words.tolist() == list(expected)
        assert philox_ref(np.array([ctr], np.uint64), k).reshape(-1).tolist() == list(expected)
    kernel.source("cuda", 256, *cases[0][0], *cases[0][1], np.zeros(4, np.uint32))


def test_uniform_f32_bitwise_equal_on_cpu_and_wgpu() -> None:
    """One seed: the same float32 uniforms on both runtimes, from the reference words."""
    results = []
    for name in DEVICES:
        burn.seed(1234, burn.Device(name))
        results.append([draw(name, (3, 1001), Distribution("uniform", 0.0, 1.0), DType.float32),
                        draw(name, (517,), Distribution("uniform", 0.1, 0.7), DType.float32)])
    for first, second in zip(*results, strict=True):
        assert first.tobytes() == second.tobytes()
    words = stream_words(1234, 0, 3003)
    expected = ((words >> np.uint64(8)).astype(np.float32) * np.float32(2.0 ** -24))
    np.testing.assert_array_equal(results[0][0].reshape(-1), expected)
    words = stream_words(1234, 1, 517)
    unit = (words >> np.uint64(8)).astype(np.float32) * np.float32(2.0 ** -24)
    # u * (high - low) + low rounded twice, as NumPy (the C and CUDA compilers fuse no FMA)
    np.testing.assert_array_equal(results[0][1], unit * np.float32(0.7 - 0.1) + np.float32(0.1))


@pytest.mark.parametrize("dtype", [DType.int32, DType.int64])
def test_int_random_bitwise_equal_on_cpu_and_wgpu(dtype: DType) -> None:
    spans = [(-5, 7), (0, 2 ** 31)] + ([(-2 ** 40, 3 ** 30), (-2 ** 63, 2 ** 63)]
                                        if dtype is DType.int64 else [])
    results = []
    for name in DEVICES:
        device, be = backend_of(name)
        burn.seed(99, device)
        results.append([be.int_into_data(be.int_random((257,), lo, hi, dtype, device))
                        for lo, hi in spans])
    for first, second in zip(*results, strict=True):
        np.testing.assert_array_equal(first, second)
    words = stream_words(99, 0, 257)  # span 12: low + floor(w * 12 / 2**32)
    np.testing.assert_array_equal(results[0][0], -5 + ((words * np.uint64(12)) >> np.uint64(32))
                                  .astype(np.int64))


@pytest.mark.parametrize("name", DEVICES)
def test_seed_reproducible_and_calls_differ(name: str) -> None:
    device, be = backend_of(name)
    dist = Distribution("uniform", 0.0, 1.0)
    burn.seed(7, device)
    a, b = draw(name, (64,), dist, DType.float32), draw(name, (64,), dist, DType.float32)
    burn.seed(7, device)
    c = draw(name, (64,), dist, DType.float32)
    burn.seed(8, device)
    d = draw(name, (64,), dist, DType.float32)
    np.testing.assert_array_equal(a, c)
    assert not np.array_equal(a, b) and not np.array_equal(a, d)
    assert be.fallbacks["float_random"] == 0


def _dtypes(name: str) -> list[DType]:
    extra = [DType.float64, DType.bfloat16] if name == "cpu" else []
    return [DType.float32, DType.float16, *extra]


@pytest.mark.parametrize("name", DEVICES)
def test_uniform_statistics_and_range(name: str) -> None:
    for dtype in _dtypes(name):
        x = draw(name, (200, 250), Distribution("uniform", -1.5, 2.5), dtype).astype(np.float64)
        assert x.min() >= -1.5 and x.max() < 2.5
        assert abs(x.mean() - 0.5) < 0.02 and abs(x.var() - 16 / 12) < 0.03
        ks = np.max(np.abs(np.sort(x.reshape(-1)) - np.linspace(-1.5, 2.5, x.size))) / 4
        assert ks < 0.01, (dtype, ks)
    _, be = backend_of(name)
    assert be.fallbacks["float_random"] == 0


@pytest.mark.parametrize("name", DEVICES)
def test_uniform_never_reaches_high(name: str) -> None:
    """Rounding up to `high` is clamped below it, in every dtype (a narrow interval makes it
    frequent)."""
    for dtype in _dtypes(name):
        high = 1.0 + float(ml_dtypes.finfo(dtype.numpy).eps) * 4  # (numpy 2.5's: no bf16)
        x = draw(name, (4096,), Distribution("uniform", 1.0, high), dtype)
        assert x.dtype == dtype.numpy
        assert (x >= 1.0).all() and (x.astype(np.float64) < high).all(), dtype
    x = draw(name, (8,), Distribution("uniform", 3.0, 3.0), DType.float32)
    np.testing.assert_array_equal(x, np.full(8, 3.0, np.float32))


@pytest.mark.parametrize("name", DEVICES)
def test_normal_statistics(name: str) -> None:
    for dtype in _dtypes(name):
        x = draw(name, (300, 301), Distribution("normal", 2.0, 3.0), dtype).astype(np.float64)
        z = (np.sort(x.reshape(-1)) - 2.0) / 3.0
        assert np.isfinite(z).all() and abs(z.mean()) < 0.01 and abs(z.std() - 1) < 0.01
        cdf = 0.5 * (1 + torch.erf(torch.from_numpy(z) / math.sqrt(2))).numpy()
        ks = np.max(np.abs(cdf - (np.arange(z.size) + 0.5) / z.size))
        assert ks < 0.01, (dtype, ks)
        assert np.abs(z).max() > 3.5  # the tails are there
    x = draw(name, (3, 5), Distribution("normal", 1.0, 0.0), DType.float32)
    np.testing.assert_array_equal(x, np.ones((3, 5), np.float32))


@pytest.mark.parametrize("name", DEVICES)
def test_bernoulli(name: str) -> None:
    for dtype in _dtypes(name):
        for p in (0.0, 0.3, 1.0):
            x = draw(name, (20000,), Distribution("bernoulli", p), dtype)
            assert set(np.unique(x).tolist()) <= {0.0, 1.0}
            assert abs(x.astype(np.float64).mean() - p) < 0.015, (dtype, p)


@pytest.mark.parametrize("name", DEVICES)
@pytest.mark.parametrize("dtype", [DType.int32, DType.int64])
def test_int_random_ranges_and_statistics(name: str, dtype: DType) -> None:
    device, be = backend_of(name)
    info = np.iinfo(dtype.numpy)
    spans = [(-3, 4), (0, 1), (10, 2 ** 31 - 1), (int(info.min), int(info.max) + 1)]
    if dtype is DType.int64:
        spans += [(-2 ** 50, 2 ** 50 + 3), (2 ** 62, 2 ** 63 - 1)]
    for low, high in spans:
        out = be.int_random((40, 500), low, high, dtype, device)
        assert be.shape(out) == (40, 500) and be.dtype(out) is dtype
        x = be.int_into_data(out)
        assert x.dtype == dtype.numpy and x.min() >= low and x.max() < high
        span = high - low
        mean = (x.astype(np.float64) - low).mean() / span
        assert abs(mean - (span - 1) / 2 / span) < 0.01, (low, high, mean)
    small = be.int_into_data(be.int_random((70000,), -3, 4, dtype, device))
    counts = np.bincount(small + 3, minlength=7)
    assert counts.min() > 9400 and counts.max() < 10600  # 7 values, 10000 each expected
    assert be.fallbacks["int_random"] == 0


@pytest.mark.parametrize("name", DEVICES)
def test_int_random_refuses_empty_or_out_of_dtype_range(name: str) -> None:
    device, be = backend_of(name)
    for low, high in ((3, 3), (0, 2 ** 31 + 1), (-2 ** 31 - 1, 0)):
        with pytest.raises(ValueRangeError, match="int_random"):
            be.int_random((4,), low, high, DType.int32, device)


@pytest.mark.parametrize("name", DEVICES)
def test_empty_and_zero_dim(name: str) -> None:
    device, be = backend_of(name)
    for shape in ((0,), (3, 0), ()):
        x = draw(name, shape, Distribution("normal", 0.0, 1.0), DType.float32)
        assert x.shape == shape
        i = be.int_into_data(be.int_random(shape, 0, 10, DType.int64, device))
        assert i.shape == shape and i.dtype == np.int64
    assert be.fallbacks["float_random"] == be.fallbacks["int_random"] == 0


@pytest.mark.parametrize("name", DEVICES)
def test_frontend_random_functions(name: str) -> None:
    device, be = backend_of(name)
    burn.seed(3, device)
    for t in (burn.rand(4, 5, device=device), burn.randn(4, 5, device=device),
              burn.uniform((4, 5), -1.0, 1.0, device=device),
              burn.bernoulli((4, 5), 0.5, device=device)):
        assert t.shape == (4, 5) and t.dtype == burn.float32
    r = burn.randint(-2, 3, (4, 5), device=device)
    assert r.dtype == burn.int64 and int(r.min().item()) >= -2 and int(r.max().item()) < 3
    assert be.fallbacks["float_random"] == be.fallbacks["int_random"] == 0


@pytest.mark.parametrize("name", DEVICES)
@pytest.mark.parametrize("dtype", [DType.int32, DType.int64])
def test_int_arange(name: str, dtype: DType) -> None:
    device, be = backend_of(name)
    info = np.iinfo(dtype.numpy)
    cases = [(0, 10, 1), (5, -7, -3), (3, 3, 1), (0, 10, 20),
             (int(info.min), int(info.max), 2 ** (info.bits - 2))]
    for start, end, step in cases:
        out = be.int_arange(start, end, step, dtype, device)
        expected = np.arange(start, end, step, dtype=dtype.numpy)
        assert be.shape(out) == expected.shape and be.dtype(out) is dtype
        np.testing.assert_array_equal(be.int_into_data(out), expected)
    assert be.fallbacks["int_arange"] == be.fallbacks["int_cumsum"] == 0
    assert arange_kernel(dtype).source("cuda", 256, 0, 1, np.zeros(4, dtype.numpy))


def test_random_kernels_generate_cuda() -> None:
    from burn.backends.cube.random import float_kernel, int_kernel

    stream = (1, 2, 3, 4)
    params = {"uniform": (0.0, 1.0, 0.99, 1.0), "normal": (0.0, 1.0), "bernoulli": (5,)}
    for dtype in (DType.float32, DType.float16, DType.bfloat16, DType.float64):
        for kind, args in params.items():
            out = np.zeros(8, dtype.numpy)
            assert float_kernel(kind, dtype).source("cuda", 256, *stream, *args, out)
    for dtype, wide, args in ((DType.int32, False, (5, 9)), (DType.int64, False, (-5, 9)),
                              (DType.int64, True, (-5, 3, 7))):
        out = np.zeros(8, dtype.numpy)
        assert int_kernel(dtype, wide).source("cuda", 256, *stream, *args, out)


@pytest.mark.parametrize("name", DEVICES)
def test_normal_f32_is_box_muller_of_the_words(name: str) -> None:
    """The float32 normals (polynomial log / sin / cos) against float64 Box-Muller of the
    reference words: value 2p (2p + 1) of a block is r cos (r sin) of its word pair p."""
    n = 4 * 3000 + 3
    device, _ = backend_of(name)
    burn.seed(21, device)
    got = draw(name, (n,), Distribution("normal", 0.0, 1.0), DType.float32)
    blocks = -(-n // 4)
    counter = np.zeros((blocks, 4), np.uint64)
    counter[:, 0] = np.arange(blocks)
    words = philox_ref(counter, (21, 0))
    unit = (words >> np.uint64(8)).astype(np.float64) * 2.0 ** -24
    radius = np.sqrt(-2 * np.log1p(-unit[:, 0::2]))
    angle = 2 * np.pi * unit[:, 1::2]
    ref = np.stack([radius[:, 0] * np.cos(angle[:, 0]), radius[:, 0] * np.sin(angle[:, 0]),
                    radius[:, 1] * np.cos(angle[:, 1]), radius[:, 1] * np.sin(angle[:, 1])])
    np.testing.assert_allclose(got, ref.reshape(-1)[:n], rtol=2e-6, atol=2e-6)
