"""Kernels built in code (``KernelBuilder``, ``Kernel.from_ir``), strided views, runtime
scalars and runtimes per device index."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import burn_cube as bc
from burn_cube import ABSOLUTE_POS, Comptime, Tensor, f16, f32, i32, u32
from burn_cube.codegen import generate
from burn_cube.errors import CompileError, DeviceIndexError, LaunchError
from burn_cube.ir import KernelBuilder, Value

N = 300  # not a multiple of the cube size: the guard matters


def _cubes(n: int, dim: int = 64) -> int:
    return -(-n // dim)


def axpy_builder(scale: float = 1.0, name: str = "axpy") -> KernelBuilder:
    """out[i] = a * x[i] + scale * y[i] for i < len(x)."""
    b = KernelBuilder(name, cube_dim=64)
    x, y = b.tensor("x", f32), b.tensor("y", f32)
    out = b.tensor("out", f32, write=True)
    a = b.scalar("a", f32)
    i = b.ABSOLUTE_POS
    with b.if_(i < x.len):
        out[i] = a * x[i] + scale * y[i]
    return b


def test_axpy_matches_numpy(rt: bc.Runtime) -> None:
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal(N, dtype=np.float32), rng.standard_normal(N, dtype=np.float32)
    kern = axpy_builder(0.5).kernel()
    out = rt.allocate((N,), f32)
    kern.launch(rt, _cubes(N), 64, rt.upload(x), rt.upload(y), out, 3.0)
    got = out.numpy()
    assert got.shape == (N,) and got.dtype == np.float32
    np.testing.assert_allclose(got, 3.0 * x + 0.5 * y, rtol=1e-6, atol=1e-6)


MATH = ("exp", "log", "tanh", "erf", "sqrt", "rsqrt", "sin", "cos", "sigmoid")


def test_math_functions_match_numpy(rt: bc.Runtime) -> None:
    """One kernel applying every unary math function of the tables (plus a composed one)."""
    b = KernelBuilder("math", cube_dim=64)
    x, out = b.tensor("x", f32), b.tensor("out", f32, rank=2)
    i = b.ABSOLUTE_POS
    with b.if_(i < x.len):
        v = b.local(f32, x[i], name="v")
        for k, op in enumerate(MATH):
            value = 1.0 / (1.0 + b.exp(-v)) if op == "sigmoid" else getattr(b, op)(v)
            out[k, i] = value
    x_np = np.linspace(0.05, 3.0, N, dtype=np.float32)
    out_np = np.zeros((len(MATH), N), np.float32)
    b.kernel().launch(rt, _cubes(N), 64, x_np, out_np)
    erf = np.vectorize(math.erf)
    ref = {"exp": np.exp(x_np), "log": np.log(x_np), "tanh": np.tanh(x_np), "erf": erf(x_np),
           "sqrt": np.sqrt(x_np), "rsqrt": 1 / np.sqrt(x_np), "sin": np.sin(x_np),
           "cos": np.cos(x_np), "sigmoid": 1 / (1 + np.exp(-x_np))}
    for k, op in enumerate(MATH):
        np.testing.assert_allclose(out_np[k], ref[op], rtol=2e-5, atol=2e-6, err_msg=op)


def test_control_flow_locals_select_casts(rt: bc.Runtime) -> None:
    """Row sums with a loop, a clamp with if/else, a while with break, select and casts."""
    rows, cols = 37, 9
    b = KernelBuilder("rows", cube_dim=32)
    x = b.tensor("x", f32, rank=2)
    sums, clamped = b.tensor("sums", f32), b.tensor("clamped", i32)
    firsts = b.tensor("firsts", i32)
    r = b.ABSOLUTE_POS
    with b.if_(r >= x.shape[0]):
        b.return_()
    acc = b.local(f32, 0.0, name="acc")
    with b.for_range(x.shape[1]) as j:
        b.set(acc, acc + x[r, j])
    sums[r] = acc
    with b.if_(acc > 2.0):
        clamped[r] = 2
    with b.else_():
        clamped[r] = b.select(acc < -2.0, -2, b.cast(acc, i32))
    first = b.local(i32, -1, name="first")
    k = b.local(i32, 0, name="k")
    with b.while_(k < b.cast(x.shape[1], i32)):
        with b.if_(x[r, k] > 1.0):
            b.set(first, k)
            b.break_()
        b.set(k, k + 1)
    firsts[r] = first
    x_np = np.random.default_rng(1).standard_normal((rows, cols)).astype(np.float32)
    outs = [np.zeros(rows, np.float32), np.zeros(rows, np.int32), np.zeros(rows, np.int32)]
    b.kernel().launch(rt, _cubes(rows, 32), 32, x_np, *outs)
    s = x_np.sum(axis=1)
    np.testing.assert_allclose(outs[0], s, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(outs[1], np.where(s > 2, 2, np.where(s < -2, -2,
                                                                       s.astype(np.int32))))
    above = x_np > 1.0
    np.testing.assert_array_equal(outs[2], np.where(above.any(1), above.argmax(1), -1))


def test_shared_memory_barriers_atomics(rt: bc.Runtime) -> None:
    """Per-cube tree reduction in shared memory, then one atomic add per cube."""
    dim = 64
    b = KernelBuilder("block_sum", cube_dim=dim)
    x, total = b.tensor("x", i32), b.tensor("total", i32)
    tile = b.shared(i32, b.CUBE_DIM, name="tile")
    u, i = b.UNIT_POS, b.ABSOLUTE_POS
    tile[u] = b.select(i < x.len, x[i], 0)  # x[i] is only evaluated where selected on cpu
    b.sync_units()
    step = dim // 2
    while step:
        with b.if_(u < step):
            tile[u] = tile[u] + tile[u + step]
        b.sync_units()
        step //= 2
    with b.if_(u == 0):
        b.atomic_add(total, 0, tile[0])
    kern = b.kernel()
    assert {"shared", "barrier", "atomic:i32"} <= kern.kernel.features
    x_np = np.arange(N, dtype=np.int32) - 100
    out = np.zeros(1, np.int32)
    kern.launch(rt, _cubes(N, dim), dim, x_np, out)
    assert out.dtype == np.int32 and out[0] == x_np.sum()


def test_builder_and_frontend_produce_the_same_ir() -> None:
    """Both ways of writing a kernel lower through one typing path: equal structural hashes
    (f16 with an int literal, int true division to f32, float floor-division, a mixed max)."""

    @bc.kernel
    def mixed(x: Tensor[f16], n: Tensor[i32], out: Tensor[f32]):
        i = ABSOLUTE_POS
        if i < len(x):
            out[i] = x[i] * 2 + n[i] / 3 + max(x[i], n[i]) + x[i] // 0.5

    x16, n32, o = np.zeros(4, np.float16), np.zeros(4, np.int32), np.zeros(4, np.float32)
    ref, _, _ = mixed.specialize(bc.runtime("cpu"), 64, x16, n32, o)

    b = KernelBuilder("mixed", cube_dim=64)
    x, n, out = b.tensor("x", f16), b.tensor("n", i32), b.tensor("out", f32)
    i = b.local(u32, b.ABSOLUTE_POS, name="i")
    with b.if_(i < x.len):
        out[i] = x[i] * 2 + n[i] / 3 + b.max(x[i], n[i]) + x[i] // 0.5
    built = b.build()
    assert built.structural_hash() == ref.structural_hash()
    assert built.features == ref.features


def test_structural_hash_tells_kernels_apart() -> None:
    one, same = axpy_builder(1.0).build(), axpy_builder(1.0).build()
    assert one.structural_hash() == same.structural_hash()
    assert axpy_builder(2.0).build().structural_hash() != one.structural_hash()
    assert axpy_builder(1.0, "other").build().structural_hash() != one.structural_hash()
    b = KernelBuilder("axpy", cube_dim=64)
    x, y, out = b.tensor("x", f32), b.tensor("y", f32), b.tensor("out", f32, write=True)
    a = b.scalar("a", f32)
    i = b.ABSOLUTE_POS
    with b.if_(i < x.len):
        out[i] = a * x[i] - 1.0 * y[i]  # another op
    assert b.build().structural_hash() != one.structural_hash()


def test_from_ir_shares_compiled_kernels() -> None:
    rt = bc.runtime("cpu")
    x = np.ones(8, np.float32)
    first, second = axpy_builder(7.0).kernel(), axpy_builder(7.0).kernel()
    out = np.zeros(8, np.float32)
    first.launch(rt, 1, 64, x, x, out, 1.0)
    second.launch(rt, 1, 64, x, x, out, 1.0)
    assert first.stats["compiled"] + first.stats["index_hits"] == 1
    assert second.stats["compiled"] == 0 and second.stats["shared_hits"] == 1
    other = axpy_builder(8.0).kernel()  # another constant: its own compile
    other.launch(rt, 1, 64, x, x, out, 1.0)
    assert other.stats["shared_hits"] == 0 and other.stats["compiled"] == 1
    np.testing.assert_allclose(out, np.full(8, 9.0, np.float32))


_SCRIPT = """
import numpy as np, burn_cube as bc
from test_builder import axpy_builder
kern = axpy_builder(11.0, "axpy_disk").kernel()
out = np.zeros(4, np.float32)
kern.launch("cpu", 1, 64, np.ones(4, np.float32), np.ones(4, np.float32), out, 2.0)
identity = bc.cache.cache_key(bc.cache.package_identity())
print(out[0], kern.stats["compiled"], kern.stats["index_hits"], identity)
"""


def test_from_ir_uses_the_on_disk_launch_index() -> None:
    """A second process finds the IR kernel in the launch index: no lowering, no codegen.
    The index is keyed by burn-cube's code (sizes and mtimes of its modules): a pair of runs
    between which that code changed (an edit in the working tree) is run again."""
    path = [str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in path if p)}
    for _ in range(3):
        runs = [subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True,
                               env=env, timeout=120) for _ in range(2)]
        assert all(r.returncode == 0 for r in runs), [r.stderr for r in runs]
        outputs = [r.stdout.split() for r in runs]
        if outputs[0][3] == outputs[1][3]:
            break
    assert outputs[0][3] == outputs[1][3], "burn-cube's code changed during every attempt"
    assert outputs[0][0] == outputs[1][0] == "13.0"
    assert outputs[1][1:3] == ["0", "1"]  # compiled 0 times, one index hit


def test_runtime_scalars_do_not_recompile(rt: bc.Runtime) -> None:
    @bc.kernel
    def shift(x: Tensor[f32], out: Tensor[f32], k: f32):
        i = ABSOLUTE_POS
        if i < len(x):
            out[i] = x[i] + k

    x = np.arange(8, dtype=np.float32)
    for k in (1.0, 2.5, -4.0):
        out = np.zeros_like(x)
        shift.launch(rt, 1, 64, x, out, k)
        np.testing.assert_allclose(out, x + k)
    assert shift.stats["lowered"] == 1
    assert shift.stats["compiled"] + shift.stats["index_hits"] == 1
    built = axpy_builder(3.0, "axpy_scalars").kernel()
    for a in (1.0, 2.0):
        out = np.zeros_like(x)
        built.launch(rt, 1, 64, x, x, out, a)
        np.testing.assert_allclose(out, a * x + 3.0 * x)
    assert built.stats["compiled"] + built.stats["index_hits"] == 1


def test_comptime_values_specialize() -> None:
    @bc.kernel
    def scale(x: Tensor[f32], out: Tensor[f32], k: Comptime[int]):
        i = ABSOLUTE_POS
        if i < len(x):
            out[i] = x[i] * k

    x = np.arange(8, dtype=np.float32)
    for k in (2, 3):
        out = np.zeros_like(x)
        scale.launch("cpu", 1, 64, x, out, k)
        np.testing.assert_allclose(out, x * k)
    assert scale.stats["lowered"] == 2


def _sum3_builder() -> KernelBuilder:
    """out[p] = a[p] + b[p] + c[p] over logical positions of three rank-2 (strided) views."""
    b = KernelBuilder("sum3", cube_dim=64)
    a, bb, c = (b.tensor(n, f32, rank=2) for n in "abc")
    out = b.tensor("out", f32, rank=2, write=True)
    p = b.ABSOLUTE_POS
    with b.if_(p < out.len):
        out[b.index_of(out, p)] = a[b.index_of(a, p)] + bb[b.index_of(bb, p)] + \
            c[b.index_of(c, p)]
    return b


def test_strided_views_read_in_place(rt: bc.Runtime) -> None:
    """A transposed, an expanded (stride 0) and a sliced (offset) input give numpy's answer."""
    rows, cols = 13, 7
    rng = np.random.default_rng(2)
    base_t = rng.standard_normal((cols, rows)).astype(np.float32)
    base_e = rng.standard_normal(cols).astype(np.float32)
    base_s = rng.standard_normal((rows + 3, cols + 2)).astype(np.float32)
    t = rt.upload(base_t).view((rows, cols), (1, rows))  # base_t.T
    e = rt.upload(base_e).view((rows, cols), (0, 1))  # broadcast over rows
    s = rt.upload(base_s).view((rows, cols), (cols + 2, 1), offset=2 * (cols + 2) + 1)
    ref_s = base_s[2:2 + rows, 1:1 + cols]
    for view, ref in ((t, base_t.T), (e, np.broadcast_to(base_e, (rows, cols))), (s, ref_s)):
        got = view.numpy()
        assert got.shape == (rows, cols) and got.dtype == np.float32
        np.testing.assert_array_equal(got, ref)
    out = rt.allocate((rows, cols), f32)
    _sum3_builder().kernel().launch(rt, _cubes(rows * cols), 64, t, e, s, out)
    got = out.numpy()
    assert got.shape == (rows, cols) and got.dtype == np.float32
    np.testing.assert_allclose(got, base_t.T + base_e + ref_s, rtol=1e-6)


def test_frontend_index_of_and_offset_multi_index(rt: bc.Runtime) -> None:
    """``index_of`` and ``x[i, j]`` (strides plus offset) in a decorated kernel."""

    @bc.kernel
    def copy_view(x: Tensor[f32], out: Tensor[f32], out2: Tensor[f32]):
        p = ABSOLUTE_POS
        if p < len(x):
            out[p] = x[bc.index_of(x, p)]
            out2[p] = x[p // x.shape[1], p % x.shape[1]]

    base = np.arange(40, dtype=np.float32).reshape(5, 8)
    view = rt.upload(base).view((3, 4), (8, 2), offset=9)  # base[1:4, 1::2]
    out, out2 = rt.allocate((12,), f32), rt.allocate((12,), f32)
    copy_view.launch(rt, 1, 64, view, out, out2)
    np.testing.assert_array_equal(out.numpy(), base[1:4, 1::2].reshape(-1))
    np.testing.assert_array_equal(out2.numpy(), base[1:4, 1::2].reshape(-1))


def test_bad_views_raise() -> None:
    rt = bc.runtime("cpu")
    arr = rt.upload(np.zeros(12, np.float32))
    with pytest.raises(LaunchError, match=r"reaches element 12 of a storage of 12"):
        arr.view((3, 4), (4, 1), offset=1)
    with pytest.raises(LaunchError, match="non-negative"):
        arr.view((3,), (-1,), offset=2)
    b = KernelBuilder("lines", cube_dim=64)
    x = b.tensor("x", f32, rank=2, line_size=4)
    out = b.tensor("out", f32, rank=2, line_size=4)
    out[b.ABSOLUTE_POS] = x[b.ABSOLUTE_POS]
    strided = rt.upload(np.zeros((4, 8), np.float32)).view((4, 4), (8, 1), offset=2)
    with pytest.raises(LaunchError, match=r"view `x` of f32x4.*offset 2"):
        b.kernel().launch(rt, 1, 64, strided, np.zeros((4, 4), np.float32))


def test_builder_errors_name_the_kernel() -> None:
    b = KernelBuilder("bad", cube_dim=64)
    x = b.tensor("x", f32, write=False)
    n = b.tensor("n", i32)
    with pytest.raises(CompileError, match=r"kernel 'bad'.*cannot implicitly convert f32 to i32"):
        n[0] = x[0]
    with pytest.raises(CompileError, match="declared read-only"):
        x[0] = 1.0
    with pytest.raises(CompileError, match="no Python truth value"):
        bool(x[0] > 1.0)
    with pytest.raises(CompileError, match="else_"):
        with b.else_():
            pass
    with pytest.raises(CompileError, match="break/continue"):
        b.break_()
    with pytest.raises(CompileError, match="bitwise operator"):
        b.binary_value("shl", x[0], 1)
    with pytest.raises(CompileError, match="already declared"):
        b.scalar("x", f32)
    v = b.ABSOLUTE_POS
    assert isinstance(v, Value) and v.dtype is u32 and b.CUBE_DIM == 64


def test_ir_kernel_launch_errors() -> None:
    kern = axpy_builder().kernel()
    x = np.ones(4, np.float32)
    with pytest.raises(LaunchError, match=r"built for cube_dim \(64, 1, 1\)"):
        kern.launch("cpu", 1, 32, x, x, x, 1.0)
    with pytest.raises(LaunchError, match="must have rank 1"):
        kern.launch("cpu", 1, 64, x.reshape(2, 2), x, x, 1.0)
    with pytest.raises(LaunchError, match="missing a"):
        kern.launch("cpu", 1, 64, x, x, x)
    with pytest.raises(LaunchError, match="must be f32, got i32"):
        kern.launch("cpu", 1, 64, x.astype(np.int32), x, x, 1.0)


def test_view_kernel_generates_cuda(tmp_path: Path) -> None:
    """The strided-view kernel as CUDA C; compiled with nvcc (as the codegen tests do)."""
    src = generate(_sum3_builder().build(), "cuda")
    assert "t_a_offset" in src and "t_out_stride1" in src
    path = tmp_path / "sum3.cu"
    path.write_text(src)
    proc = subprocess.run(["nvcc", "-c", "-arch=sm_90", "-std=c++17", "-o",
                           str(tmp_path / "sum3.o"), str(path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_runtime_per_device_index() -> None:
    cpu = bc.runtime("cpu")
    assert bc.runtime("cpu", index=0) is cpu and bc.runtime("cpu:0") is cpu
    with pytest.raises(DeviceIndexError, match=r"runtime 'cpu' has 1 device\(s\)"):
        bc.runtime("cpu:1")
    with pytest.raises(DeviceIndexError, match="bad device index"):
        bc.runtime("cuda:x")
    count = len(bc.devices("wgpu"))
    with pytest.raises(DeviceIndexError, match=f"runtime 'wgpu' has {count} device"):
        bc.runtime("wgpu", index=count)


def test_wgpu_adapters_by_index() -> None:
    """Each wgpu adapter index is its own runtime, which runs kernels; an adapter that cannot
    run compute kernels (NVIDIA's OpenGL one) is refused with RuntimeUnavailableError."""
    names = bc.devices("wgpu")
    assert len(names) >= 1
    ran = []
    for index in range(len(names)):
        try:
            rt = bc.runtime("wgpu", index=index)
        except bc.errors.RuntimeUnavailableError as exc:
            assert f"wgpu adapter {index}" in str(exc) and "compute" in str(exc)
            continue
        assert rt.index == index and rt.properties.device == names[index]
        assert (rt is bc.runtime("wgpu")) == (index == 0)
        x = np.arange(6, dtype=np.float32)
        out = rt.allocate((6,), f32)
        axpy_builder(1.0, "axpy_adapter").kernel().launch(rt, 1, 64, rt.upload(x),
                                                          rt.upload(x), out, 2.0)
        np.testing.assert_allclose(out.numpy(), 3 * x)
        ran.append(index)
    assert 0 in ran


def rows_sub_builder() -> KernelBuilder:
    """out[r, c] = x[r, c] - y[r, c] launched by rows (``CUBE_POS_Y`` the row,
    ``ABSOLUTE_POS_X`` the column), as the cube backends' broadcast elementwise kernels."""
    b = KernelBuilder("rows_sub", cube_dim=64)
    x, y = b.tensor("x", f32, rank=2), b.tensor("y", f32, rank=2)
    out = b.tensor("out", f32, rank=2, write=True)
    col, row = b.ABSOLUTE_POS_X, b.CUBE_POS_Y

    def at(t: object) -> Value:
        return t.offset + col * t.stride[1] + row * t.stride[0]  # type: ignore[attr-defined]

    with b.if_(col < out.shape[1]):
        out[at(out)] = x[at(x)] - y[at(y)]
    return b


@pytest.mark.parametrize("cols", [1, 40, 64, 150])
def test_rows_with_broadcast_inputs_and_partial_cubes(rt: bc.Runtime, cols: int) -> None:
    kern = rows_sub_builder().kernel()
    rows = 5
    rng = np.random.default_rng(cols)
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    col = rng.standard_normal((rows, 1)).astype(np.float32)
    row = rng.standard_normal((1, cols)).astype(np.float32)
    cases = {  # (x view, y view, expected)
        "dense": (rt.upload(x), rt.upload(x[::-1].copy()), x - x[::-1]),
        "column": (rt.upload(x), rt.upload(col).view((rows, cols), (1, 0)), x - col),
        "row": (rt.upload(row).view((rows, cols), (0, 1)), rt.upload(x), row - x),
        "both": (rt.upload(col).view((rows, cols), (1, 0)),
                 rt.upload(row).view((rows, cols), (0, 1)), col - row),
    }
    for name, (a, b, expected) in cases.items():
        out = rt.allocate((rows, cols), f32)
        kern.launch(rt, (_cubes(cols), rows, 1), 64, a, b, out)
        got = rt.download(out)
        assert got.shape == expected.shape and got.dtype == expected.dtype, name
        np.testing.assert_array_equal(got, expected, err_msg=name)


def test_c_rows_fast_paths() -> None:
    """The C fast path covers the units a leading guard admits (partial cubes) and has a
    variant per read-only stride taken as 0 (broadcast inputs)."""
    rt = bc.runtime("cpu")
    kern = rows_sub_builder().kernel()
    view = rt.upload(np.zeros((2, 40), np.float32))
    src = kern.source("c", 64, view, view, view)
    assert src.count("bc_unit < bc_n") == 3 and src.count("bc_unit < BC_CD") == 1
    assert "(int64_t)t_x_stride1 == 0" in src and "(int64_t)t_y_stride1 == 0" in src
    assert "(int64_t)t_out_stride1 == 0" not in src


def strided_sums_builder(step_const: int) -> KernelBuilder:
    """out[r] = sum of x[r * row + k * step] for k in range(first, n, step_const): a loop
    whose reads are affine in its counter with a runtime stride."""
    b = KernelBuilder("strided_sums", cube_dim=64)
    x = b.tensor("x", f32)
    out = b.tensor("out", f32, write=True)
    n, first, row, step = (b.scalar(name, u32) for name in ("n", "first", "row", "step"))
    r = b.ABSOLUTE_POS
    with b.if_(r < out.len):
        acc = b.local(f32, 0.0)
        with b.for_range(first, n, step_const) as k:
            b.set(acc, acc + x[r * row + k * step] + x[r * row + k * step + 1])
        out[r] = acc
    return b


@pytest.mark.parametrize(("step_const", "first", "n"), [(1, 0, 7), (3, 2, 20), (2, 5, 5)])
def test_loop_reads_checked_once_per_loop(rt: bc.Runtime, step_const: int, first: int,
                                          n: int) -> None:
    """The C target checks a loop's affine reads once before it (the unchecked copy runs);
    results on every runtime match numpy, and reads past the end are still reported."""
    kern = strided_sums_builder(step_const).kernel()
    rows, row, step = 70, 3, 11
    x = np.random.default_rng(n).standard_normal(row * (rows - 1) + step * n + 2)
    x = x.astype(np.float32)
    out = np.zeros(rows, np.float32)
    kern.launch(rt, _cubes(rows), 64, x, out, n, first, row, step)
    ks = np.arange(first, n, step_const)
    idx = np.arange(rows)[:, None] * row + ks[None, :] * step
    expected = (x[idx] + x[idx + 1]).sum(1, dtype=np.float64) if ks.size else np.zeros(rows)
    assert out.shape == (rows,) and out.dtype == np.float32
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)
    if rt.name == "cpu":
        with pytest.raises(LaunchError, match="out-of-bounds"):
            kern.launch(rt, _cubes(rows), 64, x, out, n + 2 * step_const, first, row, step)
        src = kern.source("c", 64, x, out, n, first, row, step)
        assert "bc_t1 < (INT64_C(1) << 28)" in src
        unchecked = src.split("bc_t1 < (INT64_C(1) << 28)), 1)) {")[1].split("} else {")[0]
        assert "t_x[" in unchecked and "bc_oob" not in unchecked


@pytest.mark.parametrize("cols", [1, 3, 32, 1000, 65537])
def test_division_by_shape_metadata(rt: bc.Runtime, cols: int) -> None:
    """u32 ``//`` and ``%`` by a tensor's shape (the C target multiplies by a per-launch
    magic number) equal numpy's for values up to the u32 maximum."""
    b = KernelBuilder("shape_divmod", cube_dim=64)
    t = b.tensor("t", f32, rank=2)
    a = b.tensor("a", u32)
    q, r = b.tensor("q", u32, write=True), b.tensor("r", u32, write=True)
    i = b.ABSOLUTE_POS
    with b.if_(i < a.len):
        q[i] = a[i] // t.shape[1]
        r[i] = a[i] % t.shape[1]
    kern = b.kernel()
    rng = np.random.default_rng(cols)
    values = np.concatenate([np.arange(300), 2**32 - 1 - np.arange(300),
                             rng.integers(0, 2**32, 400)]).astype(np.uint32)
    q_out, r_out = np.zeros_like(values), np.zeros_like(values)
    kern.launch(rt, _cubes(values.size), 64, np.zeros((2, cols), np.float32), values, q_out,
                r_out)
    assert q_out.dtype == r_out.dtype == np.uint32
    np.testing.assert_array_equal(q_out, values // np.uint32(cols))
    np.testing.assert_array_equal(r_out, values % np.uint32(cols))
    if rt.name == "cpu":
        src = kern.source("c", 64, np.zeros((2, cols), np.float32), values, q_out, r_out)
        assert "bc_fdiv_u32(" in src and "bc_fmod_u32(" in src
