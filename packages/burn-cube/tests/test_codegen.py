"""Generated source: table-driven structure per target, CUDA C checked with nvcc if present."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from test_kernels import block_sum, gelu_tanh, histogram, poly

from burn_cube.codegen import table_c, table_cuda, table_wgsl

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
    assert re.search(r'extern "C" __global__ void __launch_bounds__\(BC_CD\) bc_kernel\(', src)
    assert "#define BC_CD 128u" in src
    signature = src.split("bc_kernel(")[1].split(")")[0]
    assert signature.count("*t_") == 2 and "unsigned int t_" in signature
    if case == "reduce":
        assert "__shared__ float s_tile[128];" in src and "__syncthreads();" in src
    if case == "atomics":
        assert "atomicAdd(&t_bins[" in src
    for line in src.splitlines():
        stripped = line.strip()
        if stripped and not stripped.startswith(("#", "template", "extern", "for", "if", "}",
                                                 "while", "else", "return")):
            assert stripped.endswith((";", "{", "}")), line


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
@pytest.mark.parametrize("case", CASES)
def test_cuda_compiles_with_nvcc(tmp_path: Path, case: str) -> None:
    kern, args = CASES[case]
    path = tmp_path / f"{case}.cu"
    path.write_text(kern.source("cuda", 128, *args))
    proc = subprocess.run(["nvcc", "-c", "-arch=sm_80", "-o", str(tmp_path / "k.o"), str(path)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr


def test_tables_cover_the_same_ops() -> None:
    """A target is one table: every op the C table knows has a spelling elsewhere too."""
    def ops(table: dict[str, str]) -> set[str]:
        return {key.split(".")[0] for key in table}

    assert ops(table_c.OPS) == ops(table_cuda.OPS)
    assert ops(table_c.OPS) - ops(table_wgsl.OPS) <= {"nan", "inf", "ninf"}


def test_wgsl_structure() -> None:
    src = block_sum.source("wgsl", 64, X, X)
    assert "@compute @workgroup_size(BC_CDX, BC_CDY, BC_CDZ)" in src
    assert "var<workgroup> s_tile: array<f32, 64>;" in src and "workgroupBarrier();" in src
    assert "var<storage, read> t_x" in src and "var<storage, read_write> t_partial" in src
    assert balanced(src)


def test_c_barrier_fission() -> None:
    src = block_sum.source("c", 64, X, X)
    assert src.count("for (bc_unit = 0; bc_unit < BC_CD; ++bc_unit)") >= 3
    assert "v_stride[BC_CD]" in src and "#pragma omp parallel for" in src


def test_c_fast_path_hoists_bounds_checks() -> None:
    src = gelu_tanh.source("c", 256, X, X)
    fast, checked = src.split("} else {")
    assert "#pragma omp simd" in fast and "bc_oob" not in fast.split("omp simd")[1]
    assert "t_x[(bc_base + bc_unit)]" in fast and "if (bc_f0)" in fast
    assert "bc_oob = 1" in checked
    assert "#pragma omp simd" not in histogram.source("c", 128, X.astype(np.int32),
                                                       X.astype(np.int32))
