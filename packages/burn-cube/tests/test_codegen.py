"""Generated source: table-driven structure per target, CUDA C checked with nvcc if present."""

from __future__ import annotations

import dataclasses
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import test_kernels
from test_kernels import block_sum, gelu_tanh, histogram, poly

import burn_cube as bc
from burn_cube.codegen import generate, table_c, table_cuda, table_wgsl
from burn_cube.codegen.cuda import ENTRY_CHARS, entry_point, generate_aliased

X = np.zeros(16, np.float32)
CASES = {
    "gelu": (gelu_tanh, (X, X)),
    "reduce": (block_sum, (X, X)),
    "atomics": (histogram, (X.astype(np.int32), X.astype(np.int32))),
    "unroll": (poly, (X, X, 3, True)),
}


def balanced(src: str) -> bool:
    depth = 0
    for ch in re.sub(r'"[^"\n]*"', "", src):
        depth += {"{": 1, "}": -1, "(": 1, ")": -1}.get(ch, 0)
        if depth < 0:
            return False
    return depth == 0


@pytest.mark.parametrize("case", CASES)
def test_cuda_structure(case: str) -> None:
    kern, args = CASES[case]
    src = kern.source("cuda", 128, *args)
    assert balanced(src)
    entry = entry_point(kern.specialize(bc.runtime("cpu"), 128, *args)[0])
    assert re.fullmatch(r"bc_\w+", entry)
    assert re.search(rf'extern "C" __global__ void __launch_bounds__\(BC_CD\) {entry}\(', src)
    assert "#define BC_CD 128u" in src
    signature = src.split(f"{entry}(")[1].split(")")[0]
    assert signature.count(" *__restrict__ t_") == 2 and "unsigned int t_" in signature
    assert "const unsigned int bc_unit = threadIdx.x;" in src
    plain = generate_aliased(kern.specialize(bc.runtime("cpu"), 128, *args)[0])
    assert "__restrict__" not in plain and "const float *" not in plain
    if case == "reduce":
        assert "__shared__ float s_tile[128];" in src and "__syncthreads();" in src
    if case == "atomics":
        assert "atomicAdd(&t_bins[" in src
    for line in src.splitlines():
        stripped = line.strip()
        if stripped and not stripped.startswith(("#", "//", "template", "extern", "for", "if", "}",
                                                 "while", "else", "return")):
            assert stripped.endswith((";", "{", "}", "|", "&", ",", "(")), line  # or continued


def _suite_cases() -> dict[str, tuple[bc.Kernel, int, tuple[object, ...]]]:
    """Every kernel of the kernel suite with example arguments: (kernel, cube_dim, args)."""
    k = test_kernels
    f, i = np.zeros(16, np.float32), np.zeros(16, np.int32)
    cases: dict[str, tuple[bc.Kernel, int, tuple[object, ...]]] = {
        "gelu_tanh": (k.gelu_tanh, 256, (f, f)),
        "gelu_line": (k.gelu_line, 256, (f, f)),
        "int_line": (k.int_line, 64, (i, i)),
        "math_mix": (k.math_mix, 256, (f, f, 0.25)),
        "block_sum": (k.block_sum, 128, (f, f)),
        "histogram": (k.histogram, 64, (i, i)),
        "float_total": (k.float_total, 128, (f, f)),
        "control_flow": (k.control_flow, 64, (i, i)),
        "poly": (k.poly, 128, (f, f, 3, True)),
        "transpose": (k.transpose, (16, 16), (f.reshape(4, 4), f.reshape(4, 4))),
        "flags": (k.flags, 64, (f, i, 1.0)),
        "zeros": (k.zeros, 64, (f, i)),
        "scale": (k.scale, 64, (f, f, 0.5)),
        "propagate": (k.propagate, 32, (f, f)),
        "bool_tensor": (k.bool_tensor, 128, (f.astype(bool), f, f, f.astype(bool))),
        "to_bf16": (k.to_bf16, 256, (f, f.astype(bc.bf16.numpy))),
        "plane_total": (k.plane_total, 256, (f, f)),
        "stencil": (k.stencil, 64, (f, f, 16)),
        "shifted_copy": (k.shifted_copy, 64, (f, f)),
        "cancel": (k.cancel, 64, (f, f, f, 0)),
        "cancel_lines": (k.cancel_lines, 64, (f, f, 0)),
        "quotient": (k.quotient, 64, (f, f, f)),
    }
    for dtype in ("f16", "bf16", "f32", "f64", "i32", "i64", "u32"):
        kind = bc.types.DTYPES[dtype]
        x = np.zeros(16, kind.numpy)
        cases[f"typed_ops_{dtype}"] = (k.typed_ops, 64, (x, x, 3, kind(1)))
    for dtype in ("f16", "bf16"):
        x = np.zeros(16, bc.types.DTYPES[dtype].numpy)
        cases[f"gelu_any_{dtype}"] = (k.gelu_any, 256, (x, x))
    return cases


SUITE = _suite_cases()


def test_nvcc_cases_cover_the_kernel_suite() -> None:
    kernels = {v for v in vars(test_kernels).values() if isinstance(v, bc.Kernel)}
    assert kernels == {case[0] for case in SUITE.values()}


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
@pytest.mark.parametrize("case", SUITE)
def test_cuda_compiles_with_nvcc(tmp_path: Path, case: str) -> None:
    """Every suite kernel, every dtype: the CUDA C must compile (NVRTC's C++17, sm_90)."""
    kern, cube_dim, args = SUITE[case]
    path = tmp_path / f"{case}.cu"
    path.write_text(kern.source("cuda", cube_dim, *args))
    proc = subprocess.run(["nvcc", "-c", "-arch=sm_90", "-std=c++17", "-o",
                           str(tmp_path / "k.o"), str(path)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr


def test_tables_cover_the_same_ops() -> None:
    """A target is one table: every op the C table knows has a spelling elsewhere too."""
    def ops(table: dict[str, str]) -> set[str]:
        return {key.split(".")[0] for key in table}

    assert ops(table_c.OPS) == ops(table_cuda.OPS)
    assert ops(table_c.OPS) - ops(table_wgsl.OPS) <= {"nan", "inf", "ninf"}


def test_lines_are_vector_accesses() -> None:
    """A Line[f32, 4] tensor is a float4 / vec4<f32> / GCC-vector array: 128-bit accesses."""
    cuda = test_kernels.gelu_line.source("cuda", 256, X, X)
    assert "const float4 *__restrict__ t_x" in cuda and "r.w = tanhf(a0.w);" in cuda
    assert "array<vec4<f32>>" in test_kernels.gelu_line.source("wgsl", 256, X, X)
    c = test_kernels.gelu_line.source("c", 256, X, X)
    assert "vector_size(16), aligned(4)" in c and "bc_f32x4 *t_x" in c


def test_wgsl_structure() -> None:
    src = block_sum.source("wgsl", 64, X, X)
    assert "@compute @workgroup_size(BC_CDX, BC_CDY, BC_CDZ)" in src
    assert "var<workgroup> s_tile: array<f32, 64>;" in src and "workgroupBarrier();" in src
    assert "var<storage, read> t_x" in src and "var<storage, read_write> t_partial" in src
    assert balanced(src)


def test_c_barrier_fission() -> None:
    src = block_sum.source("c", 64, X, X)
    assert src.count("for (bc_unit = 0; bc_unit < BC_CD; ++bc_unit)") >= 3
    assert "v_stride[BC_CD]" in src and "#pragma omp parallel reduction(|:bc_oob)" in src


def test_c_fast_path_hoists_bounds_checks() -> None:
    src = gelu_tanh.source("c", 256, X, X)
    fast, checked = src[:src.index("void bc_kernel")].split("} else {")
    assert "#pragma omp simd" in fast and "bc_oob" not in fast.split("omp simd")[1]
    assert "t_x[(bc_base + bc_unit)]" in fast and "if (bc_f0)" in fast
    assert "bc_oob = 1" in checked
    assert "#pragma omp simd" not in histogram.source("c", 128, X.astype(np.int32),
                                                       X.astype(np.int32))


def row_sums(work: str | None, dtype: bc.DType = bc.f32) -> bc.IRKernel:
    """sums[r] = sum of row r of the dense [m, n] `x`, a unit per row, `unit_work` = `work`."""
    b = bc.KernelBuilder("row_sums", cube_dim=32, unit_work=work)
    x, sums = b.tensor("x", dtype), b.tensor("sums", dtype, write=True)
    m, n = b.scalar("m", bc.u32), b.scalar("n", bc.u32)
    r = b.ABSOLUTE_POS
    with b.if_(r < m):
        total = b.local(dtype, 0.0)
        with b.for_range(0, n) as k:
            b.set(total, total + x[r * n + k])
        sums[r] = total
    return b.kernel()


def test_c_parallel_threshold_weighs_unit_work() -> None:
    """A kernel naming its per-unit work parallelises on units * work, and only over two
    cubes or more on a team of two threads or more; others on units alone; the hint leaves
    the other targets' source alone."""
    from burn_cube.codegen.c import PARALLEL_UNITS

    hinted, plain = row_sums("n").kernel, row_sums(None).kernel
    assert hinted.unit_work == "n" and plain.unit_work is None
    assert hinted.structural_hash() != plain.structural_hash()
    src = generate(hinted, "c")
    entry = src[src.index("void bc_kernel"):]
    assert (f"if (bc_cubes * BC_CD * (int64_t)v_n < {PARALLEL_UNITS} || bc_cubes < 2 "
            f"|| omp_get_max_threads() < 2)") in entry
    assert entry.index("const uint32_t v_n") < entry.index("if (bc_cubes")  # read before
    assert "const uint32_t v_m" not in entry  # the entry reads only what it decides by
    assert f"if (bc_cubes * BC_CD < {PARALLEL_UNITS})" in generate(plain, "c")
    assert "omp_get_max_threads" not in generate(plain, "c")  # unchanged without the hint
    assert f"if (bc_cubes * BC_CD < {PARALLEL_UNITS})" in gelu_tanh.source("c", 256, X, X)
    for target in ("wgsl", "cuda"):
        assert generate(hinted, target) == generate(plain, target)


def test_interface_keeps_unit_work() -> None:
    """A kernel loaded from the launch index (its interface) names its unit work as the built
    IR does; a kernel without one writes no key for it (its interface is unchanged)."""
    from burn_cube.ir.nodes import KernelIR

    hinted, plain = row_sums("n").kernel, row_sums(None).kernel
    assert KernelIR.from_interface(hinted.interface()).unit_work == "n"
    assert "unit_work" not in plain.interface()
    assert KernelIR.from_interface(plain.interface()).unit_work is None


def test_c_small_launches_skip_openmp() -> None:
    """Below the threshold `bc_kernel` calls the cube loop directly; OpenMP is entered only
    on the other branch (one `bc_run` body: the serial and parallel paths share it)."""
    src = generate(row_sums(None).kernel, "c")
    entry = src[src.index("void bc_kernel"):]
    serial, parallel = entry.split("} else {")
    assert "bc_run(bc_blob, 0, bc_cubes, &bc_oob);" in serial and "omp" not in serial
    assert "#pragma omp parallel reduction(|:bc_oob)" in parallel
    assert src.count("static __attribute__((noinline)) void bc_run(") == 1
    assert src.count("for (int64_t bc_cube = bc_first; bc_cube < bc_last; ++bc_cube)") == 1


@pytest.mark.skipif("cpu" not in bc.available(), reason="needs the cpu runtime")
@pytest.mark.parametrize(("rows", "n"), [(1, 64), (31, 64), (4096, 64), (1, 40000)])
def test_c_serial_and_parallel_entries_agree(rows: int, n: int) -> None:
    """Row sums over launches on either side of the threshold (the parallel one split over
    the team in contiguous cube ranges; one cube of a long row past the threshold stays on
    the calling thread) match numpy, every row written once."""
    from burn_cube.codegen.c import PARALLEL_UNITS

    x = np.random.default_rng(rows).standard_normal((rows, n)).astype(np.float32)
    rt = bc.runtime("cpu")
    kernel = row_sums("n")
    cubes = -(-rows // 32)
    assert (cubes * 32 * n >= PARALLEL_UNITS) == (rows == 4096 or n == 40000)
    dx, sums = rt.upload(x.reshape(-1)), rt.allocate((rows,), bc.f32)
    kernel.launch(rt, (cubes, 1, 1), 32, dx, sums, rows, n)
    out = sums.numpy()
    assert out.shape == (rows,) and out.dtype == np.float32
    np.testing.assert_allclose(out, x.sum(axis=1, dtype=np.float64), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("name", ["x", "missing", "scale"])
def test_unit_work_must_name_an_integer_scalar(name: str) -> None:
    b = bc.KernelBuilder("bad_work", cube_dim=32, unit_work=name)
    x = b.tensor("x", bc.f32, write=True)
    scale = b.scalar("scale", bc.f32)
    x[b.ABSOLUTE_POS] = scale
    with pytest.raises(bc.errors.CompileError, match=f"bad_work.*unit_work.*{name!r}"):
        b.build()


@pytest.mark.parametrize("rows", [0, 5, 2000])
def test_hinted_row_kernel_matches_numpy(rt: bc.Runtime, rows: int) -> None:
    """Rows kernels with the hint: few rows (one thread) and rows * n over the threshold (the
    OpenMP team on the cpu), NaN and inf rows included, against numpy in float64."""
    n = 40
    rng = np.random.default_rng(1)
    x = rng.standard_normal((rows, n)).astype(np.float32)
    if rows:
        x[0, 3], x[-1, 0] = np.nan, np.inf
    out = np.zeros(rows, np.float32)
    row_sums("n").launch(rt, max(1, -(-rows // 32)), 32, x.reshape(-1), out, rows, n)
    want = x.astype(np.float64).sum(axis=1).astype(np.float32)
    assert out.shape == want.shape and out.dtype == want.dtype
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)


def test_wgsl_f64_refuses_transcendentals() -> None:
    """Vulkan has no f64 exp/sin/pow...: a clear CompileError, not garbage; arithmetic works."""
    d = np.zeros(16, np.float64)
    with pytest.raises(bc.errors.CompileError, match="`tanh` on f64 is not supported by the "
                                                     "wgsl target"):
        test_kernels.gelu_any.source("wgsl", 64, d, d)
    src = test_kernels.typed_ops.source("wgsl", 64, d, d, 3, np.float64(1))
    assert "array<f64>" in src and "3.0lf" in src
    # words: 3 cube counts, then len, shape, stride, offset of x and of out, then the scalar
    assert "bitcast<f64>((u64(bc_info[12]) << 32u) | u64(bc_info[11]))" in src


def test_bf16_storage() -> None:
    """bf16 is 16-bit storage computed in float (C, CUDA), absent from WGSL; no atomics."""
    b = np.zeros(16, bc.bf16.numpy)
    c = test_kernels.typed_ops.source("c", 64, b, b, 3, bc.bf16(1))
    assert "uint16_t *t_x" in c and "bc_bf16_store(" in c and "bc_bf16_load(t_x[" in c
    cuda = test_kernels.typed_ops.source("cuda", 64, b, b, 3, bc.bf16(1))
    assert "#include <cuda_bf16.h>" in cuda and "__float2bfloat16_rn(" in cuda
    with pytest.raises(bc.errors.CompileError, match="wgsl target has no bf16"):
        test_kernels.typed_ops.source("wgsl", 64, b, b, 3, bc.bf16(1))
    with pytest.raises(bc.errors.CompileError, match="atomic_add on bf16"):
        total_any.source("c", 64, b, b)


@bc.kernel
def total_any(x: bc.Tensor, total: bc.Tensor):
    bc.atomic_add(total, 0, x[bc.ABSOLUTE_POS])


def test_cuda_pointers_read_only_and_unit_index() -> None:
    """Read-only tensors are ``const __restrict__`` (read-only data path); the unit index uses
    the compile-time cube_dim. (The runtime's overlap test, which picks the unqualified
    variant, is tested in test_cuda_packing.py.)"""
    cuda = test_kernels.gelu_line.source("cuda", 256, X, X)
    assert "const float4 *__restrict__ t_x, float4 *__restrict__ t_out" in cuda
    cuda = test_kernels.gelu_line.source("cuda", (16, 4, 2), X, X)
    assert "bc_unit = threadIdx.x + (threadIdx.y + threadIdx.z * BC_CDY) * BC_CDX;" in cuda


def test_cuda_entry_point_is_named_after_the_kernel() -> None:
    kern, args = CASES["reduce"]
    ir = kern.specialize(bc.runtime("cpu"), 128, *args)[0]
    assert entry_point(ir) == f"bc_{ir.name}"
    odd = dataclasses.replace(ir, name="module.kernel-name" + "x" * 200)
    entry = entry_point(odd)
    assert entry.startswith("bc_module_kernel_name") and len(entry) == 3 + ENTRY_CHARS
    assert f"{entry}(" in generate(odd, "cuda")
