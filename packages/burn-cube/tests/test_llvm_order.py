"""Triton imported after the wgpu runtime started on Mesa's llvmpipe (runtime/llvm_order.py):
without triton's LLVM loaded first the import kills the process."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import RUNTIMES

#: starts the wgpu runtime (its adapter loads the Vulkan driver), runs a kernel, then imports
#: triton (what `torch.compile` and `torchvision.ops` do on PyPI's torch)
SCRIPT = """
import numpy as np
import burn_cube as bc
from burn_cube import ABSOLUTE_POS, Tensor, f32

@bc.kernel
def double(x: Tensor[f32], out: Tensor[f32]):
    i = ABSOLUTE_POS
    if i < len(x):
        out[i] = x[i] * 2.0

rt = bc.runtime("wgpu")
out = rt.allocate((8,), bc.f32)
double.launch(rt, 1, 8, rt.upload(np.arange(8, dtype=np.float32)), out)
total = float(rt.download(out).sum())
import triton
print(triton.__version__, total)
"""


@pytest.mark.skipif("wgpu" not in RUNTIMES, reason="wgpu is not a selected runtime")
def test_triton_imports_after_the_wgpu_runtime_started(tmp_path: Path) -> None:
    pytest.importorskip("triton")
    script = tmp_path / "script.py"
    script.write_text(SCRIPT)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, f"exit {done.returncode}: {done.stderr[-2000:]}"
    assert done.stdout.split()[-1] == "56.0"
