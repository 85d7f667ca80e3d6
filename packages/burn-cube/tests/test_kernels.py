"""One kernel suite, parametrized over the runtimes under test, checked against numpy."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from test_errors import scale

import burn_cube as bc
from burn_cube import (
    ABSOLUTE_POS,
    ABSOLUTE_POS_X,
    ABSOLUTE_POS_Y,
    CUBE_DIM,
    CUBE_POS,
    UNIT_POS,
    Comptime,
    Tensor,
    f32,
    i32,
    u32,
)
from burn_cube.errors import CompileError
from burn_cube.ir import KernelBuilder
from burn_cube.runtime.wgpu import DTYPE_FEATURES

RNG = np.random.default_rng(0)


#: Relative tolerance of float results per dtype (references compute in f32, f64 for f64).
RTOL = {"f16": 1e-3, "bf16": 1e-2, "f32": 1e-6, "f64": 1e-12}


def supports(rt: bc.Runtime, dtype: str, launch: Callable[[], object]) -> bool:
    """Whether ``rt`` has ``dtype``. A wgpu adapter without the dtype's feature skips, naming
    it; a dtype the target never has (bf16 on WGSL) must make ``launch`` fail clearly."""
    if dtype in rt.properties.dtypes:
        return True
    if rt.name == "wgpu" and dtype in DTYPE_FEATURES:
        pytest.skip(f"adapter lacks {DTYPE_FEATURES[dtype]}")
    with pytest.raises(bc.errors.LaunchError, match=f"does not support {dtype}"):
        launch()
    return False


@bc.kernel
def gelu_tanh(x: Tensor[f32], out: Tensor[f32]):
    i = ABSOLUTE_POS
    if i < len(x):
        v = x[i]
        out[i] = 0.5 * v * (1.0 + bc.tanh(0.7978845608 * (v + 0.044715 * v**3)))


def gelu_ref(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1 + np.tanh(0.7978845608 * (x + 0.044715 * x**3)))


def test_elementwise_chain(rt: bc.Runtime) -> None:
    x = RNG.standard_normal(10_000).astype(np.float32)
    out = rt.allocate(x.shape, bc.f32)
    gelu_tanh.launch(rt, -(-x.size // 256), 256, rt.upload(x), out)
    np.testing.assert_allclose(out.numpy(), gelu_ref(x), rtol=1e-5, atol=1e-6)


@bc.kernel
def gelu_line(x: Tensor[bc.Line[f32, 4]], out: Tensor[bc.Line[f32, 4]]):
    i = ABSOLUTE_POS
    if i < len(x):
        v = x[i]
        out[i] = 0.5 * v * (1.0 + bc.tanh(0.7978845608 * (v + 0.044715 * v**3)))


@bc.kernel
def int_line(x: Tensor[bc.Line[i32, 2]], out: Tensor[bc.Line[i32, 2]]):
    i = ABSOLUTE_POS
    if i < len(out):
        out[i] = abs(x[i]) * 3 + x[i] // 2 - max(x[i], 7)


def test_lines(rt: bc.Runtime) -> None:
    """Vectorized lines: len counts lines, arithmetic and math are element-wise."""
    x = RNG.standard_normal(10_000).astype(np.float32)
    out = rt.allocate(x.shape, bc.f32)
    gelu_line.launch(rt, -(-x.size // 1024), 256, rt.upload(x), out)
    np.testing.assert_allclose(out.numpy(), gelu_ref(x), rtol=1e-5, atol=1e-6)
    k = RNG.integers(-100, 100, 64).astype(np.int32)
    got = np.zeros_like(k)
    int_line.launch(rt, 1, 64, k, got)
    np.testing.assert_array_equal(got, np.abs(k) * 3 + np.trunc(k / 2).astype(np.int32)
                                  - np.maximum(k, 7))
    with pytest.raises(bc.errors.LaunchError, match="multiple of 4"):
        gelu_line.launch(rt, 1, 64, np.zeros(6, np.float32), np.zeros(6, np.float32))


@bc.kernel
def math_mix(x: Tensor[f32], out: Tensor[f32], alpha: f32):
    i = ABSOLUTE_POS
    if i >= len(x):
        return
    v = x[i]
    a = bc.exp(-v * v) + bc.log(abs(v) + 1.0) + bc.sqrt(abs(v)) + bc.sin(v) * bc.cos(v)
    b = bc.erf(v) + max(v, 0.0) - min(v, alpha) + bc.floor(v) + bc.pow(abs(v), 1.5)
    out[i] = bc.select(v > 0.0, a, b) + v % 0.75


def test_math_builtins(rt: bc.Runtime) -> None:
    import math

    x = RNG.standard_normal(2048).astype(np.float32) * 3
    out = np.zeros_like(x)
    math_mix.launch(rt, 8, 256, x, out, 0.25)
    v = x.astype(np.float64)
    erf = np.vectorize(math.erf)(v)
    a = np.exp(-v * v) + np.log(abs(v) + 1) + np.sqrt(abs(v)) + np.sin(v) * np.cos(v)
    b = erf + np.maximum(v, 0) - np.minimum(v, 0.25) + np.floor(v) + np.abs(v) ** 1.5
    np.testing.assert_allclose(out, np.where(v > 0, a, b) + v % 0.75, rtol=1e-5, atol=1e-5)


@bc.kernel
def block_sum(x: Tensor[f32], partial: Tensor[f32]):
    tile = bc.shared_memory(f32, CUBE_DIM)
    i = ABSOLUTE_POS
    tile[UNIT_POS] = x[i] if i < len(x) else 0.0
    bc.sync_units()
    stride = CUBE_DIM // 2
    while stride > 0:
        if UNIT_POS < stride:
            tile[UNIT_POS] += tile[UNIT_POS + stride]
        bc.sync_units()
        stride = stride // 2
    if UNIT_POS == 0:
        partial[CUBE_POS] = tile[0]


def test_shared_memory_reduction(rt: bc.Runtime) -> None:
    x = RNG.standard_normal(5000).astype(np.float32)
    cubes = -(-x.size // 128)
    partial = np.zeros(cubes, np.float32)
    block_sum.launch(rt, cubes, 128, x, partial)
    expected = np.pad(x, (0, cubes * 128 - x.size)).reshape(cubes, 128).sum(1)
    np.testing.assert_allclose(partial, expected, rtol=1e-4, atol=1e-4)


@bc.kernel
def histogram(x: Tensor[i32], bins: Tensor[i32]):
    i = ABSOLUTE_POS
    if i < len(x):
        bc.atomic_add(bins, x[i] % len(bins), 1)


def test_atomics(rt: bc.Runtime) -> None:
    x = RNG.integers(0, 1000, 20_000).astype(np.int32)
    bins = np.zeros(16, np.int32)
    histogram.launch(rt, -(-x.size // 64), 64, x, bins)
    np.testing.assert_array_equal(bins, np.bincount(x % 16, minlength=16))


@bc.kernel
def float_total(x: Tensor[f32], total: Tensor[f32]):
    i = ABSOLUTE_POS
    if i < len(x):
        bc.atomic_add(total, 0, x[i])


def test_float_atomics(rt: bc.Runtime) -> None:
    if rt.properties.target == "wgsl":
        with pytest.raises(bc.errors.CompileError, match="atomic_add.* on f32"):
            float_total.launch(rt, 1, 64, np.ones(64, np.float32), np.zeros(1, np.float32))
        return
    x = np.ones(10_000, np.float32)
    total = np.zeros(1, np.float32)
    float_total.launch(rt, -(-x.size // 128), 128, x, total)
    assert total[0] == 10_000


@bc.kernel
def control_flow(x: Tensor[i32], out: Tensor[i32]):
    i = ABSOLUTE_POS
    if i >= len(x):
        return
    v = x[i]
    if v < 0:
        r = -1
    elif v == 0:
        r = 100
    else:
        r = 0
        k = v
        while k != 1:  # Collatz steps, capped
            k = k // 2 if k % 2 == 0 else 3 * k + 1
            r += 1
            if r >= 50:
                break
    acc = 0
    for j in range(0, 10):
        if j % 3 == 0:
            continue
        acc += j
    out[i] = r * 1000 + acc


def collatz_ref(v: int) -> int:
    if v < 0:
        return -1
    if v == 0:
        return 100
    r, k = 0, v
    while k != 1:
        k = k // 2 if k % 2 == 0 else 3 * k + 1
        r += 1
        if r >= 50:
            break
    return r


def test_control_flow(rt: bc.Runtime) -> None:
    x = np.arange(-5, 300, dtype=np.int32)
    out = np.zeros_like(x)
    control_flow.launch(rt, 5, 64, x, out)
    acc = sum(j for j in range(10) if j % 3)
    np.testing.assert_array_equal(out, [collatz_ref(int(v)) * 1000 + acc for v in x])


@bc.kernel
def poly(x: Tensor[f32], out: Tensor[f32], degree: Comptime[int], squared: Comptime[bool]):
    i = ABSOLUTE_POS
    if i < len(x):
        acc = 0.0
        for k in bc.unroll(range(degree + 1)):
            acc = acc * x[i] + float(k + 1)
        if squared:
            acc = acc * acc
        out[i] = acc


@pytest.mark.parametrize(("degree", "squared"), [(0, False), (3, True), (5, False)])
def test_comptime_unrolling(rt: bc.Runtime, degree: int, squared: bool) -> None:
    x = RNG.standard_normal(300).astype(np.float32)
    out = np.zeros_like(x)
    poly.launch(rt, 3, 128, x, out, degree, squared)
    expected = np.polyval(np.arange(1, degree + 2, dtype=np.float64), x)
    np.testing.assert_allclose(out, expected**2 if squared else expected, rtol=1e-4)


def test_comptime_specializes_source() -> None:
    x, out = np.zeros(4, np.float32), np.zeros(4, np.float32)
    src = poly.source("c", 64, x, out, 2, False)
    # unrolled: only the cube loop and the unit loops (fast and checked paths)
    assert src.count("for (") == src.count("bc_unit < BC_CD") + src.count("bc_unit < bc_n") + 1
    assert src != poly.source("c", 64, x, out, 2, True)


@bc.kernel
def transpose(a: Tensor[f32], out: Tensor[f32]):
    r = ABSOLUTE_POS_Y
    c = ABSOLUTE_POS_X
    if r < a.shape[0] and c < a.shape[1]:
        out[c, r] = a[r, c]


def test_2d_launch_shape_stride(rt: bc.Runtime) -> None:
    a = RNG.standard_normal((37, 53)).astype(np.float32)
    out = np.zeros((53, 37), np.float32)
    transpose.launch(rt, (4, 3), (16, 16), a, out)
    np.testing.assert_array_equal(out, a.T)


@bc.kernel
def typed_ops(x: Tensor, out: Tensor, scale: Comptime[int], offset):
    i = ABSOLUTE_POS
    if i < len(x):
        out[i] = x[i] * scale + x[i] // 2 + offset


#: Scalar offsets that need every bit of the scalar (64-bit ones span two words on WGSL).
OFFSETS = {"i64": 2**40 + 7, "f64": 1 / 3}


@pytest.mark.parametrize("dtype", ["f64", "i32", "i64", "u32", "f16", "bf16"])
def test_dtypes(rt: bc.Runtime, dtype: str) -> None:
    """Tensor and scalar parameters of each dtype; floats against numpy in f32 (f64 for f64),
    rounded to the dtype."""
    kind = bc.types.DTYPES[dtype]
    x = RNG.integers(0, 1000, 500).astype(kind.numpy)
    out = np.zeros_like(x)
    offset = kind(OFFSETS.get(dtype, 7))
    if not supports(rt, dtype, lambda: typed_ops.launch(rt, 8, 64, x, out, 3, offset)):
        return
    typed_ops.launch(rt, 8, 64, x, out, 3, offset)
    if kind.is_float:
        wide = x.astype(np.float64 if dtype == "f64" else np.float32)
        expected = (wide * 3 + np.floor(wide / 2) + wide.dtype.type(offset)).astype(kind.numpy)
        np.testing.assert_allclose(out.astype(np.float64), expected.astype(np.float64),
                                   rtol=RTOL[dtype])
    else:
        np.testing.assert_array_equal(out, x * 3 + x // 2 + offset)


@bc.kernel
def gelu_any(x: Tensor, out: Tensor):
    i = ABSOLUTE_POS
    if i < len(x):
        v = x[i]
        out[i] = 0.5 * v * (1.0 + bc.tanh(0.7978845608 * (v + 0.044715 * v**3)))


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_half_math(rt: bc.Runtime, dtype: str) -> None:
    """16-bit floats: math functions in f32, arithmetic rounded per the dtype's tolerance."""
    np_dtype = bc.types.DTYPES[dtype].numpy
    x = RNG.standard_normal(1000).astype(np_dtype)
    out = np.zeros_like(x)
    if not supports(rt, dtype, lambda: gelu_any.launch(rt, 4, 256, x, out)):
        return
    gelu_any.launch(rt, 4, 256, x, out)
    expected = gelu_ref(x.astype(np.float32)).astype(np_dtype).astype(np.float32)
    np.testing.assert_allclose(out.astype(np.float32), expected, rtol=4 * RTOL[dtype],
                               atol=4 * RTOL[dtype])


@bc.kernel
def to_bf16(x: Tensor[f32], out: Tensor[bc.bf16]):
    i = ABSOLUTE_POS
    if i < len(x):
        out[i] = bc.bf16(x[i])


def test_bf16_rounding(rt: bc.Runtime) -> None:
    """f32 -> bf16 stores round to nearest even and keep NaN/inf, bit for bit as ml_dtypes."""
    bits = np.array([0x3F808000, 0x3F818000, 0x3F80C000, 0x3F807FFF, 0x7F7FFFFF, 0xFF7FFFFF,
                     0x7F800000, 0xFF800000, 0x7FC00001, 0xFFC00000, 0x00000001, 0x80000000,
                     0x0080FFFF], np.uint32)
    x = np.concatenate([bits.view(np.float32), RNG.standard_normal(200).astype(np.float32)])
    out = np.zeros(x.shape, bc.bf16.numpy)
    if not supports(rt, "bf16", lambda: to_bf16.launch(rt, 1, 256, x, out)):
        return
    to_bf16.launch(rt, 1, 256, x, out)
    expected = x.astype(bc.bf16.numpy)
    nan = np.isnan(x)
    np.testing.assert_array_equal(np.isnan(out.astype(np.float32)), nan)
    np.testing.assert_array_equal(out.view(np.uint16)[~nan], expected.view(np.uint16)[~nan])


@bc.kernel
def flags(x: Tensor[f32], out: Tensor[i32], threshold: f32):
    i = ABSOLUTE_POS
    if i < len(x):
        big = x[i] > threshold
        nan = bc.isnan(x[i])
        out[i] = i32(big) + 2 * i32(nan and not big) + 4 * i32(bc.isinf(x[i]))


def test_bool_nan_inf(rt: bc.Runtime) -> None:
    x = np.array([0.0, 2.0, np.nan, np.inf, -np.inf, 0.5], np.float32)
    out = np.zeros(x.shape, np.int32)
    flags.launch(rt, 1, 64, x, out, 1.0)
    expected = (x > 1).astype(int) + 2 * np.isnan(x) + 4 * np.isinf(x)
    np.testing.assert_array_equal(out, expected)


@bc.kernel
def zeros(x: Tensor[f32], out: Tensor[i32]):
    i = ABSOLUTE_POS
    if i < len(x):
        out[i] = i32(bc.iszero(x[i]))


def test_iszero_holds_for_both_zeros_only(rt: bc.Runtime) -> None:
    """Both signed zeros, not subnormals (kept as bits even where a driver flushes them in
    arithmetic), NaN or infinities."""
    x = np.array([0.0, -0.0, 1e-40, -1e-45, np.nan, np.inf, -np.inf, 1.0], np.float32)
    out = np.full(x.shape, -1, np.int32)
    zeros.launch(rt, 1, 64, x, out)
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, (x == 0).astype(np.int32))


def test_subnormal_probe_agrees_with_the_device_arithmetic(rt: bc.Runtime) -> None:
    """`flushes_subnormals` says what a kernel's float32 arithmetic does with subnormals; the
    cpu runtime keeps them (no -ffast-math), as numpy."""
    from burn_cube.runtime.probes import flushes_subnormals

    x = np.array([1e-40, -3e-42, 1e-45, 1.5e-38], np.float32)
    out = np.full(x.shape, np.nan, np.float32)
    scale.launch(rt, 1, 64, x, out, 0.5)
    flushed = np.where(np.abs(x * np.float32(0.5)) < np.finfo(np.float32).tiny, 0, x * 0.5)
    want = flushed.astype(np.float32) if flushes_subnormals(rt) else x * np.float32(0.5)
    assert out.dtype == np.float32
    np.testing.assert_array_equal(np.abs(out), np.abs(want))
    if rt.name == "cpu":
        assert not flushes_subnormals(rt)


@bc.kernel
def propagate(x: Tensor[f32], out: Tensor[f32]):
    i = ABSOLUTE_POS
    if i < len(x):
        out[i] = bc.exp(x[i]) * 2.0 - x[i]


def test_nan_inf_propagate(rt: bc.Runtime) -> None:
    x = np.array([np.nan, np.inf, -np.inf, 100.0], np.float32)
    out = np.zeros_like(x)
    propagate.launch(rt, 1, 32, x, out)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(out, np.exp(x) * 2 - x)


@bc.kernel
def bool_tensor(mask: Tensor[bc.bool_], x: Tensor[f32], out: Tensor[f32],
                negative: Tensor[bc.bool_]):
    i = ABSOLUTE_POS
    if i < len(x):
        out[i] = x[i] if mask[i] else -x[i]
        negative[i] = x[i] < 0.0


def test_bool_tensor(rt: bc.Runtime) -> None:
    """bool tensors (one u32 per element on WGSL), read and written."""
    mask = RNG.random(100) > 0.5
    x = RNG.standard_normal(100).astype(np.float32)
    out, negative = np.zeros_like(x), np.ones(x.shape, bool)
    bool_tensor.launch(rt, 1, 128, mask, x, out, negative)
    np.testing.assert_array_equal(out, np.where(mask, x, -x))
    np.testing.assert_array_equal(negative, x < 0)


@bc.kernel
def plane_total(x: Tensor[f32], out: Tensor[f32]):
    i = ABSOLUTE_POS
    s = bc.plane_sum(x[i])
    if bc.UNIT_POS_PLANE == 0:
        out[i // bc.PLANE_DIM] = s


def test_plane_sum(rt: bc.Runtime) -> None:
    plane = rt.properties.plane_size
    if plane == 0:
        pytest.skip(f"the {rt.name} runtime has no plane (subgroup) operations")
    x = RNG.standard_normal(256).astype(np.float32)
    out = rt.allocate((256,), bc.f32)
    plane_total.launch(rt, 1, 256, rt.upload(x), out)
    got = out.numpy()
    size = 256 // np.count_nonzero(got) if np.count_nonzero(got) else plane
    np.testing.assert_allclose(got[: 256 // size], x.reshape(-1, size).sum(1), rtol=1e-4,
                               atol=1e-5)


def test_many_cubes(rt: bc.Runtime) -> None:
    """More than 65,535 cubes (folded into a 2-D dispatch on wgpu)."""
    x = RNG.standard_normal(70_000 * 4).astype(np.float32)
    out = rt.allocate(x.shape, bc.f32)
    gelu_tanh.launch(rt, 70_000, 4, rt.upload(x), out)
    np.testing.assert_allclose(out.numpy(), gelu_ref(x), rtol=1e-5, atol=1e-6)


@bc.kernel
def stencil(x: Tensor[f32], out: Tensor[f32], n: i32):
    i = ABSOLUTE_POS
    if i > 0 and i < n - 1:
        out[i] = x[i - 1] + x[i + 1] - 2.0 * x[i]


@pytest.mark.parametrize("n", [1, 5, 256, 1000])
def test_hoisted_fast_path_matches_checked(n: int) -> None:
    """Cubes fully in range take the fast path; edge cubes the checked one: same results."""
    x = RNG.standard_normal(n).astype(np.float32)
    out = np.zeros_like(x)
    stencil.launch("cpu", (n + 63) // 64, 64, x, out, n)
    expected = np.zeros_like(x)
    expected[1:-1] = x[:-2] + x[2:] - 2.0 * x[1:-1]
    np.testing.assert_allclose(out, expected, rtol=1e-6, atol=1e-6)


@bc.kernel
def shifted_copy(x: Tensor[f32], out: Tensor[f32]):
    i = ABSOLUTE_POS
    out[i] = x[i + 1]


def test_hoisted_out_of_bounds_is_still_caught() -> None:
    x, out = np.arange(128, dtype=np.float32), np.zeros(128, np.float32)
    with pytest.raises(bc.errors.LaunchError, match="out-of-bounds"):
        shifted_copy.launch("cpu", 2, 64, x, out)
    np.testing.assert_array_equal(out[:127], x[1:])  # every in-bounds unit ran


@bc.kernel
def cancel(x: Tensor[f32], y: Tensor[f32], out: Tensor[f32], zero: u32):
    i = ABSOLUTE_POS
    if i < len(x):
        a = bc.opaque(x[i], zero)
        b = bc.opaque(x[i], zero & 1)
        s = bc.opaque(a + bc.opaque(y[i], zero & 2), zero & 3)
        out[i] = (a - b) + (s - bc.opaque(y[i], zero & 4))


def test_opaque_keeps_ieee_results_of_identities(rt: bc.Runtime) -> None:
    """`opaque` gives its value unchanged, and `x - x` / `(x + y) - y` across its uses keep
    NaN, infinities and signed zeros (WGSL drivers may fold them to 0 and x otherwise)."""
    x = np.array([1.5, np.inf, -np.inf, np.nan, -0.0, 0.0, 3e38, 1e-40], np.float32)
    y = np.array([2.0, 1.0, -np.inf, 0.0, 0.0, -0.0, 3e38, 1.0], np.float32)
    out = np.full(x.shape, 7.0, np.float32)
    cancel.launch(rt, 1, 64, x, y, out, 0)
    with np.errstate(invalid="ignore", over="ignore"):
        want = (x - x) + ((x + y) - y)
    assert out.dtype == np.float32 and out.shape == x.shape
    finite = np.isfinite(want) & (np.abs(x) > 1e-30)
    np.testing.assert_array_equal(np.isnan(out), np.isnan(want))
    np.testing.assert_array_equal(out[finite], want[finite])
    np.testing.assert_array_equal(np.signbit(out[finite]), np.signbit(want[finite]))


def test_casts_to_bf16_round(rt: bc.Runtime) -> None:
    """A value cast to bf16 inside a kernel is rounded there (to nearest even, NaN and
    infinities kept) as a store rounds it, though C and CUDA compute bf16 in float."""
    b = KernelBuilder("bf16_round_trip", cube_dim=64)
    x, out = b.tensor("x", f32, write=False), b.tensor("out", f32, write=True)
    i = b.ABSOLUTE_POS
    with b.if_(i < x.len):
        out[i] = b.cast(b.cast(x[i], bc.bf16), f32)
    kernel = b.kernel()
    data = np.array([1.3174102, -299.0561, 1 / 3, 1.00390625, 1.01171875, np.nan, -np.inf,
                     3e38, 1e-40, -0.0], np.float32)  # (two ties: to even, down and up)
    got = np.full_like(data, 7.0)
    if "bf16" not in rt.properties.dtypes:  # (WGSL)
        with pytest.raises(CompileError, match="bf16"):
            kernel.launch(rt, 1, 64, data, got)
        return
    kernel.launch(rt, 1, 64, data, got)
    want = data.astype(bc.bf16.numpy).astype(np.float32)
    assert got.shape == want.shape and got.dtype == np.float32
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


def test_opaque_takes_floats_only() -> None:
    b = KernelBuilder("opaque_int", cube_dim=1)
    with pytest.raises(CompileError, match="opaque"):
        b.opaque(b.const(1, i32), 0)


@bc.kernel
def cancel_lines(x: Tensor[bc.Line[f32, 4]], out: Tensor[bc.Line[f32, 4]], zero: u32):
    i = ABSOLUTE_POS
    if i < len(x):
        out[i] = bc.opaque(x[i], zero) - bc.opaque(x[i], zero & 1)


def test_opaque_on_lines(rt: bc.Runtime) -> None:
    """Lines: each lane as its scalar (`x - x`: NaN at NaN and +-inf, else +0.0)."""
    x = np.array([1.5, np.inf, -np.inf, np.nan, -0.0, 0.0, 3e38, -2.0], np.float32)
    out = rt.allocate(x.shape, f32)
    cancel_lines.launch(rt, 1, 64, rt.upload(x), out, 0)
    got = out.numpy()
    with np.errstate(invalid="ignore"):
        want = x - x
    assert got.shape == x.shape and got.dtype == np.float32
    np.testing.assert_array_equal(got, want)
    number = ~np.isnan(want)  # (a NaN's sign is the hardware's)
    np.testing.assert_array_equal(np.signbit(got[number]), np.signbit(want[number]))


@bc.kernel
def quotient(x: Tensor[f32], y: Tensor[f32], out: Tensor[f32]):
    i = ABSOLUTE_POS
    if i < len(x):
        out[i] = x[i] / y[i]


def test_division_by_huge_divisors(rt: bc.Runtime) -> None:
    """Divisors past 2**126 (where Vulkan leaves OpFDiv undefined) divide as IEEE: inf / 3e38
    is inf, 3e38 / 3e38 is 1 (NVIDIA's driver gave NaN and 0); quotients that are subnormal
    are left out (drivers may flush them)."""
    x = np.array([np.inf, 3e38, 3e38, -6e37, 1.5, np.nan, 2e38, -np.inf, 1e30], np.float32)
    y = np.array([3e38, 3e38, -1e38, 9e37, 3e38, 3e38, np.inf, -2e38, 1.7e38], np.float32)
    out = np.full(x.shape, 7.0, np.float32)
    quotient.launch(rt, 1, 64, x, y, out)
    with np.errstate(invalid="ignore"):
        want = x / y
    assert out.dtype == np.float32
    kept = ~((np.abs(want) < np.finfo(np.float32).tiny) & (want != 0))
    np.testing.assert_array_equal(out[kept], want[kept])
