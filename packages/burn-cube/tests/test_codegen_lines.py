"""The C target's fast paths: lane-flat ``Line`` loops, stride-1 versions of strided indexes
(both checked to vectorize with gcc), and ``IRKernel``'s launch fast path and argument block."""

from __future__ import annotations

import platform
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import burn_cube as bc
from burn_cube import ABSOLUTE_POS, Tensor, bf16, bool_, f16, f32, i32, i64
from burn_cube.codegen import generate
from burn_cube.codegen.c import CACHE_LINE, PREFETCH_AHEAD, PREFETCH_BLOCK, STREAM_BYTES
from burn_cube.errors import CompileError, LaunchError
from burn_cube.ir import KernelBuilder
from burn_cube.kernel import IRKernel
from burn_cube.runtime.cpu import find_compiler, source_flags
from burn_cube.runtime.probes import flushes_subnormals

RNG = np.random.default_rng(7)


@bc.kernel
def gelu_scalar(x: Tensor[f32], out: Tensor[f32]):
    i = ABSOLUTE_POS
    if i < len(x):
        v = x[i]
        out[i] = 0.5 * v * (1.0 + bc.tanh(0.7978845608 * (v + 0.044715 * v * v * v)))


@bc.kernel
def gelu_line(x: Tensor[bc.Line[f32, 4]], out: Tensor[bc.Line[f32, 4]]):
    i = ABSOLUTE_POS
    if i < len(x):
        v = x[i]
        out[i] = 0.5 * v * (1.0 + bc.tanh(0.7978845608 * (v + 0.044715 * v * v * v)))


@bc.kernel
def int_line(x: Tensor[bc.Line[i32, 2]], out: Tensor[bc.Line[i32, 2]]):
    i = ABSOLUTE_POS
    if i < len(out):
        out[i] = abs(x[i]) * 3 + x[i] // 2 - max(x[i], 7) + x[i] % 5


@bc.kernel
def mixed_line(x: Tensor[bc.Line[f32, 4]], y: Tensor[f32], out: Tensor[bc.Line[f32, 4]]):
    i = ABSOLUTE_POS
    if i < len(out):
        out[i] = x[i] * y[i]  # a scalar tensor: not lane-flat (it would be read per lane)


@bc.kernel
def double_line(x: Tensor[bc.Line[bc.f64, 2]], out: Tensor[bc.Line[bc.f64, 2]]):
    i = ABSOLUTE_POS
    if i < len(out):
        out[i] = x[i] * 2.0


@bc.kernel
def fill_line(out: Tensor[bc.Line[f32, 4]]):
    i = ABSOLUTE_POS
    if i < len(out):
        out[i] = f32(i)


def gelu_ref(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + np.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))


def strided_axpy() -> IRKernel:
    """out = a * x + y through ``index_of`` (offset + pos * stride: dense views get the fast
    path, others the checked loop)."""
    b = KernelBuilder("strided_axpy", cube_dim=64)
    x, y = b.tensor("x", f32, write=False), b.tensor("y", f32, write=False)
    out = b.tensor("out", f32, write=True)
    a = b.scalar("a", f32)
    i = b.ABSOLUTE_POS
    with b.if_(i < out.len):
        out[b.index_of(out, i)] = a * x[b.index_of(x, i)] + y[b.index_of(y, i)]
    return b.kernel()


def scalars_kernel() -> IRKernel:
    """out[k] = each scalar parameter (f16, bf16, bool, i64, i32) as f32, for the argument
    block's scalar slots."""
    b = KernelBuilder("scalars", cube_dim=64)
    out = b.tensor("out", f32, write=True)
    values = [b.scalar(name, dtype) for name, dtype in
              (("h", f16), ("g", bf16), ("flag", bool_), ("big", i64), ("small", i32))]
    with b.if_(b.ABSOLUTE_POS == 0):
        for k, v in enumerate(values):
            out[k] = b.cast(v, f32)
    return b.kernel()


def test_line_fast_path_is_lane_flat() -> None:
    x = np.zeros(1024, np.float32)
    src = gelu_line.source("c", 256, x, x)
    assert "for (int64_t bc_e = bc_b; bc_e < bc_stop; ++bc_e)" in src
    assert "bc_tanh_f32x4" in src  # the checked loop keeps the vector type
    mixed = mixed_line.source("c", 256, x, x, x)
    assert "bc_e = " not in mixed


def test_lane_flat_blocks_prefetch_the_inputs() -> None:
    """A lane-flat loop runs in blocks of `PREFETCH_BLOCK` bytes of its widest tensor, each
    prefetching every line of the block of each tensor it reads (not of those it only writes),
    `PREFETCH_AHEAD` bytes on; a loop that reads no tensor is one plain loop."""
    x = np.zeros(1024, np.float32)
    src = gelu_line.source("c", 256, x, x)
    block = PREFETCH_BLOCK // 4
    assert f"bc_b < bc_n * 4; bc_b += {block})" in src
    prefetches = [line.strip() for line in src.splitlines() if "__builtin_prefetch" in line]
    assert len(prefetches) == PREFETCH_BLOCK // CACHE_LINE
    assert all("t_x_e + (bc_base) * 4 + bc_b" in line for line in prefetches)
    assert f"+ {PREFETCH_AHEAD})" in prefetches[0]
    assert f"+ {PREFETCH_AHEAD + PREFETCH_BLOCK - CACHE_LINE})" in prefetches[-1]
    doubles = double_line.source("c", 64, x.astype(np.float64), x.astype(np.float64))
    assert f"bc_b < bc_n * 2; bc_b += {PREFETCH_BLOCK // 8})" in doubles
    assert sum("__builtin_prefetch" in line for line in doubles.splitlines()) == \
        PREFETCH_BLOCK // CACHE_LINE
    fill = fill_line.source("c", 64, x)
    assert "__builtin_prefetch" not in fill and "bc_e = 0; bc_e < bc_n * 4;" in fill


@pytest.mark.parametrize("lines", [1, 31, 32, 33, 256 * 2 + 7, 256 * 40])
def test_lane_flat_blocks_match_numpy(lines: int) -> None:
    """The C target's blocks: lengths that end mid-block, blocks cut by the cube, and a kernel
    writing the tensor it reads (in place), against numpy."""
    rt = bc.runtime("cpu")
    x = RNG.standard_normal(4 * lines).astype(np.float32)
    out = rt.allocate(x.shape, f32)
    gelu_line.launch(rt, -(-lines // 256), 256, rt.upload(x), out)
    got = out.numpy()
    assert got.shape == x.shape and got.dtype == np.float32
    np.testing.assert_allclose(got, gelu_ref(x), rtol=1e-5, atol=1e-6)
    inplace = rt.upload(x)
    gelu_line.launch(rt, -(-lines // 256), 256, inplace, inplace)
    np.testing.assert_array_equal(inplace.numpy(), got)
    doubled = rt.allocate(x.shape, bc.f64)
    double_line.launch(rt, -(-lines * 2 // 64), 64, rt.upload(x.astype(np.float64)), doubled)
    np.testing.assert_array_equal(doubled.numpy(), x.astype(np.float64) * 2)


@bc.kernel
def clipped_line(x: Tensor[bc.Line[f32, 4]], out: Tensor[bc.Line[f32, 4]]):
    i = ABSOLUTE_POS
    if i < len(x):
        v = x[i]
        if i % 2 == 0:  # a store under a condition: its block is not written whole
            out[i] = v


def test_large_outputs_are_streamed_where_written_whole() -> None:
    """A lane-flat block loop that stores its outputs unconditionally gets a streamed copy for
    large 64-byte-aligned outputs (staging buffer, then `bc_stream_bytes`, fenced once a
    launch); loops storing under a condition, or reading no tensor, keep ordinary stores."""
    x = np.zeros(1024, np.float32)
    src = gelu_line.source("c", 256, x, x)
    assert f"(int64_t)t_out_len * 16 >= {STREAM_BYTES}" in src
    assert "bc_nt_out[bc_e - bc_b] = " in src and "bc_stream_bytes(&t_out_e[" in src
    assert "if (bc_streamed) bc_stream_fence();" in src
    for plain in (clipped_line.source("c", 256, x, x), fill_line.source("c", 64, x)):
        assert "bc_stream" not in plain


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="x86's stores")
def test_streams_are_non_temporal_stores_without_intrinsics_headers(tmp_path: Path) -> None:
    """The streamed copy compiles to non-temporal stores and a fence with the runtime's
    compiler and flags, spelled with builtins: no intrinsics header (whose parsing dominated
    the compile of small kernels)."""
    x = np.zeros(1024, np.float32)
    src = gelu_line.source("c", 256, x, x)
    assert "intrin.h" not in src
    compiler = find_compiler()
    path = tmp_path / "kernel.c"
    path.write_text(src)
    flags = [f for f in source_flags(compiler) if f != "-shared"]
    proc = subprocess.run([compiler, *flags, "-S", "-o", str(tmp_path / "kernel.s"), str(path)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assembly = (tmp_path / "kernel.s").read_text()
    assert "movnt" in assembly and "sfence" in assembly


def test_streamed_outputs_match_ordinary_stores() -> None:
    """Past `STREAM_BYTES` (several threads' ranges, a partial last block, a last partial
    cube), the streamed GELU equals, bit for bit, the same kernel run on a prefix below the
    threshold (ordinary stores), and numpy to float32 tolerance; buffers the cpu runtime
    hands out start on a cache line; a kernel writing in place streams too."""
    rt = bc.runtime("cpu")
    lines = STREAM_BYTES // 16 + 256 * 3 + 37
    x = RNG.standard_normal(4 * lines).astype(np.float32)
    source = rt.upload(x)
    out = rt.empty(x.shape, f32)
    assert out.handle.ctypes.data % 64 == 0 and source.handle.ctypes.data % 64 == 0
    gelu_line.launch(rt, -(-lines // 256), 256, source, out)
    got = out.numpy()
    assert got.shape == x.shape and got.dtype == np.float32
    np.testing.assert_allclose(got, gelu_ref(x), rtol=1e-5, atol=1e-6)
    prefix = 4 * 256 * 64
    small = rt.empty((prefix,), f32)
    gelu_line.launch(rt, 64, 256, rt.upload(x[:prefix]), small)
    np.testing.assert_array_equal(small.numpy(), got[:prefix])
    gelu_line.launch(rt, -(-lines // 256), 256, source, source)
    np.testing.assert_array_equal(source.numpy(), got)


def test_lane_flat_matches_numpy(rt: bc.Runtime) -> None:
    """Full cubes run the lane-flat path, the partial last one the checked loop."""
    x = RNG.standard_normal(4 * 256 * 3 + 40).astype(np.float32)
    out = rt.allocate(x.shape, f32)
    gelu_line.launch(rt, -(-x.size // 1024), 256, rt.upload(x), out)
    np.testing.assert_allclose(out.numpy(), gelu_ref(x), rtol=1e-5, atol=1e-6)
    k = RNG.integers(-1000, 1000, 2 * 64 * 4).astype(np.int32)
    got = rt.allocate(k.shape, i32)
    int_line.launch(rt, 4, 64, rt.upload(k), got)
    expected = np.abs(k) * 3 + np.trunc(k / 2).astype(np.int32) - np.maximum(k, 7) + np.fmod(k, 5)
    np.testing.assert_array_equal(got.numpy(), expected)
    y = RNG.standard_normal(x.size // 4).astype(np.float32)
    out = rt.allocate(x.shape, f32)
    mixed_line.launch(rt, -(-y.size // 256), 256, rt.upload(x), rt.upload(y), out)
    np.testing.assert_allclose(out.numpy(), x * np.repeat(y, 4), rtol=1e-6)


def test_scalar_splats_convert_to_the_line_element(rt: bc.Runtime) -> None:
    """A line local set from an int literal, and an int value added to a float line, convert
    the scalar before splatting it (WGSL's ``vec4<f32>(0i)`` does not compile)."""
    b = KernelBuilder("int_splat", cube_dim=64)
    x = b.tensor("x", f32, rank=1, line_size=4, write=False)
    out = b.tensor("out", f32, rank=1, line_size=4, write=True)
    i = b.ABSOLUTE_POS
    with b.if_(i < x.shape[0]):
        acc = b.local(bc.Line[f32, 4], 0)
        b.set(acc, acc + x[i] + b.cast(i, i32))
        out[i] = acc
    kernel_ir = b.build()
    assert "vec4<f32>(0i)" not in generate(kernel_ir, "wgsl")
    kern = IRKernel(kernel_ir)
    xs = RNG.standard_normal(4 * 100).astype(np.float32)
    got = rt.allocate(xs.shape, f32)
    kern.launch(rt, 2, 64, rt.upload(xs), got)
    want = xs + np.repeat(np.arange(100, dtype=np.float32), 4)
    assert got.numpy().dtype == np.float32 and got.numpy().shape == xs.shape
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)


@bc.kernel
def widen_line(x: Tensor[bc.Line[i32, 2]], out: Tensor[bc.Line[f32, 2]]):
    if ABSOLUTE_POS < len(out):
        out[ABSOLUTE_POS] = f32(x[ABSOLUTE_POS]) * 0.5


@bc.kernel
def double_lanes(x: Tensor[bc.Line[f32, 2]], out: Tensor[bc.Line[bc.f64, 2]]):
    if ABSOLUTE_POS < len(out):
        out[ABSOLUTE_POS] = bc.f64(x[ABSOLUTE_POS])


def test_a_cast_of_a_line_converts_each_lane(rt: bc.Runtime) -> None:
    """``f32(x)`` of a ``Line[i32, 2]`` is a ``Line[f32, 2]`` (and ``f64`` of an f32 line an
    f64 line where the runtime holds f64), lane by lane, as numpy's astype."""
    xs = np.array([-7, -1, 0, 1, 3, 2**24 + 1, -(2**31), 2**31 - 1], np.int32)
    got = rt.allocate(xs.shape, f32)
    widen_line.launch(rt, 1, 4, rt.upload(xs), got)
    assert got.numpy().dtype == np.float32 and got.numpy().shape == xs.shape
    np.testing.assert_array_equal(got.numpy(), xs.astype(np.float32) * np.float32(0.5))
    if "f64" not in rt.properties.dtypes:
        return
    fs = np.array([1.5, -0.0, np.inf, np.nan, 1e-45, -3.4e38, 0.1, 7.0], np.float32)
    wide = rt.allocate(fs.shape, bc.f64)
    double_lanes.launch(rt, 1, 4, rt.upload(fs), wide)
    assert wide.numpy().dtype == np.float64
    if flushes_subnormals(rt):  # (NVIDIA's Vulkan driver: the f32 subnormal reads as 0)
        fs[np.abs(fs) < np.finfo(np.float32).tiny] *= 0
    np.testing.assert_array_equal(wide.numpy(), fs.astype(np.float64))
    assert np.signbit(wide.numpy()[1])


def test_float_lines_to_int_or_bool_refuse_with_a_typed_error() -> None:
    """A float line cast to an integer or bool type is refused at build time, naming the
    line's type (their scalar rules: truncation, NaN and range handling, truthiness)."""
    for target in (i32, bool_):
        b = KernelBuilder("line_to_int", cube_dim=4)
        x = b.tensor("x", f32, rank=1, line_size=2, write=False)
        with pytest.raises(CompileError, match="f32x2 line"):
            b.cast(x[b.ABSOLUTE_POS], target)


def test_strided_index_dense_and_strided(rt: bc.Runtime) -> None:
    kern = strided_axpy()
    n = 64 * 5 + 3
    x = RNG.standard_normal(2 * n).astype(np.float32)
    y = RNG.standard_normal(n).astype(np.float32)
    dx, dy = rt.upload(x), rt.upload(y)
    out = rt.allocate((n,), f32)
    kern.launch(rt, -(-n // 64), 64, dx.view((n,), (1,), 5), dy, out, 2.0)  # dense, offset 5
    np.testing.assert_allclose(out.numpy(), 2.0 * x[5:5 + n] + y, rtol=1e-6, atol=1e-6)
    kern.launch(rt, -(-n // 64), 64, dx.view((n,), (2,), 1), dy, out, 2.0)  # stride 2
    np.testing.assert_allclose(out.numpy(), 2.0 * x[1::2] + y, rtol=1e-6, atol=1e-6)
    kern.launch(rt, -(-n // 64), 64, dx.view((n,), (0,), 3), dy, out, 2.0)  # broadcast
    np.testing.assert_allclose(out.numpy(), 2.0 * x[3] + y, rtol=1e-6, atol=1e-6)


def test_out_of_bounds_still_reported(rt: bc.Runtime) -> None:
    """A too-short output: the units past its storage are skipped and reported."""
    kern = strided_axpy()
    x = rt.upload(np.ones(128, np.float32))
    short = rt.allocate((128,), f32).view((128,), (1,), 0)
    kern.launch(rt, 2, 64, x, x, short, 1.0)
    b = KernelBuilder("overrun", cube_dim=64)
    src, out = b.tensor("src", f32, write=False), b.tensor("out", f32, write=True)
    with b.if_(b.ABSOLUTE_POS < src.len):
        out[b.ABSOLUTE_POS] = src[b.ABSOLUTE_POS]
    overrun = b.kernel()
    overrun.launch(rt, 2, 64, x, rt.allocate((128,), f32))
    if rt.name == "cpu":
        with pytest.raises(LaunchError, match="out-of-bounds"):
            overrun.launch(rt, 2, 64, x, rt.allocate((100,), f32))


def test_scalar_slots(rt: bc.Runtime) -> None:
    kern = scalars_kernel()
    if not {"f16", "bf16", "i64"} <= rt.properties.dtypes:
        pytest.skip(f"{rt.name} lacks f16/bf16/i64")
    out = rt.allocate((64,), f32)
    args = (1.5, -2.25, True, 2**40 + 3, -7)
    for _ in range(2):  # the checked launch, then the fast path
        kern.launch(rt, 1, 64, out, *args)
        np.testing.assert_array_equal(out.numpy()[:5], np.array(args, np.float32))
    kern.launch(rt, 1, 64, out, np.float16(0.5), 1, False, -5, 3)  # numpy scalar: checked path
    np.testing.assert_array_equal(out.numpy()[:5], [0.5, 1, 0, -5, 3])


def test_fast_path_keeps_the_checks(rt: bc.Runtime) -> None:
    """After a launch set the fast path up, bad arguments still get the checked path's errors,
    and numpy arguments still round-trip."""
    kern = strided_axpy()
    x = rt.upload(np.arange(64, dtype=np.float32))
    out = rt.allocate((64,), f32)
    kern.launch(rt, 1, 64, x, x, out, 1.0)
    kern.launch(rt, (1, 1, 1), 64, x, x, out, 2.0)
    np.testing.assert_array_equal(out.numpy(), 3 * np.arange(64, dtype=np.float32))
    with pytest.raises(LaunchError, match="must be f32"):
        kern.launch(rt, 1, 64, rt.upload(np.zeros(64, np.int32)), x, out, 1.0)
    with pytest.raises(LaunchError, match="rank 1"):
        kern.launch(rt, 1, 64, rt.allocate((8, 8), f32), x, out, 1.0)
    with pytest.raises(LaunchError, match="cube_dim"):
        kern.launch(rt, 1, 32, x, x, out, 1.0)
    with pytest.raises(LaunchError, match="cube_count"):
        kern.launch(rt, 0, 64, x, x, out, 1.0)
    with pytest.raises(LaunchError, match="scalar"):
        kern.launch(rt, 1, 64, x, x, out, "1")
    with pytest.raises(LaunchError, match="missing"):
        kern.launch(rt, 1, 64, x, x, out)
    host = np.zeros(64, np.float32)
    kern.launch(rt, 1, 64, x, x, host, 0.5)  # a numpy output is copied back
    np.testing.assert_array_equal(host, 1.5 * np.arange(64, dtype=np.float32))
    b = KernelBuilder("index_i32", cube_dim=64)
    t = b.tensor("t", i32, write=True)
    s = b.scalar("s", i32)
    with b.if_(b.ABSOLUTE_POS < t.len):
        t[b.ABSOLUTE_POS] = s
    fill = b.kernel()
    ints = rt.allocate((64,), i32)
    fill.launch(rt, 1, 64, ints, 5)
    with pytest.raises(LaunchError, match="does not fit"):
        fill.launch(rt, 1, 64, ints, 2**31)
    with pytest.raises(LaunchError, match="does not fit"):
        fill.launch(rt, 1, 64, ints, 1.5)


def _vectorized(tmp_path: Path, source: str) -> str:
    path = tmp_path / "kernel.c"
    path.write_text(source)
    compiler = find_compiler()
    proc = subprocess.run([compiler, *source_flags(compiler), "-fopt-info-vec-optimized",
                           "-o", str(tmp_path / "kernel.so"), str(path), "-lm"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stderr


@pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc not installed")
@pytest.mark.parametrize("case", ["scalar", "line", "strided_index"])
def test_contiguous_kernels_vectorize(tmp_path: Path, case: str) -> None:
    """gcc vectorizes the unit loop of contiguous elementwise kernels: plain ``x[i]``, lines
    (lane-flat) and ``index_of`` reads of dense views (the stride-1 version)."""
    if "gcc" not in Path(find_compiler()).name and "cc" != Path(find_compiler()).name:
        pytest.skip("the compiler is not gcc")
    x = np.zeros(1024, np.float32)
    source = {"scalar": lambda: gelu_scalar.source("c", 256, x, x),
              "line": lambda: gelu_line.source("c", 256, x, x),
              "strided_index": lambda: strided_axpy().source("c", 64, x, x, x, 1.0)}[case]()
    assert "loop vectorized" in _vectorized(tmp_path, source)


def _cpu_has_avx512() -> bool:
    try:
        return " avx512f " in Path("/proc/cpuinfo").read_text().replace("\n", " ")
    except OSError:
        return False


@pytest.mark.skipif(shutil.which("gcc") is None or not _cpu_has_avx512(),
                    reason="needs gcc and an AVX-512 CPU")
def test_avx512_cpus_vectorize_at_512_bits(tmp_path: Path) -> None:
    """On an AVX-512 CPU the lane-flat GELU loop vectorizes with 64-byte vectors (the cpu
    runtime's ``-mprefer-vector-width=512``; gcc's tuning for these cores would pick 32)."""
    if "gcc" not in Path(find_compiler()).name and "cc" != Path(find_compiler()).name:
        pytest.skip("the compiler is not gcc")
    x = np.zeros(1024, np.float32)
    assert "loop vectorized using 64 byte vectors" in _vectorized(
        tmp_path, gelu_line.source("c", 256, x, x))


def test_fmod_on_lines_is_a_compile_error() -> None:
    """fmod has no Line form (the WGSL and CUDA helpers run a long division on the bits of one
    value: WGSL rejected `f32(vec4<f32>)`): building it raises a typed error naming it, so
    burn-core's elementwise kernels fall back to one element per unit (their `CompileError`
    path); on scalars it builds."""
    for lanes in (4, 1):
        b = KernelBuilder("fmod_lines", cube_dim=64)
        x = b.tensor("x", f32, rank=1, line_size=lanes, write=False)
        out = b.tensor("out", f32, rank=1, line_size=lanes, write=True)
        i = b.ABSOLUTE_POS
        with b.if_(i < x.shape[0]):
            if lanes > 1:
                with pytest.raises(CompileError, match=r"fmod\(\) is not supported on Line"):
                    b.call_value("fmod", x[i], x[i])
                continue
            out[i] = b.call_value("fmod", x[i], x[i])
        if lanes == 1:
            assert "fmod" in generate(b.build(), "c")
