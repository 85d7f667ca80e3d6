"""Elementwise benchmark for the cpu runtime.

Prints: cold compile time of a typical elementwise kernel (empty cache), cache-hit time in a
fresh process (first launch, disk cache warm), a GELU-tanh chain over 16M float32 as scalars and
as ``Line[f32, 4]`` vs numpy's expression in the same run, and the host cost of one repeated
launch of a built (``KernelBuilder``) kernel on 64 elements.

Usage: ``python packages/burn-cube/bench/elementwise.py``
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

import numpy as np

import burn_cube as bc
from burn_cube import ABSOLUTE_POS, Line, Tensor, f32
from burn_cube.ir import KernelBuilder

N = 16 * 1024 * 1024


@bc.kernel
def gelu_tanh(x: Tensor[f32], out: Tensor[f32]):
    i = ABSOLUTE_POS
    if i < len(x):
        v = x[i]
        out[i] = 0.5 * v * (1.0 + bc.tanh(0.7978845608 * (v + 0.044715 * v * v * v)))


@bc.kernel
def gelu_tanh_line(x: Tensor[Line[f32, 4]], out: Tensor[Line[f32, 4]]):
    i = ABSOLUTE_POS
    if i < len(x):
        v = x[i]
        out[i] = 0.5 * v * (1.0 + bc.tanh(0.7978845608 * (v + 0.044715 * v * v * v)))


def launch_us(rt: bc.Runtime) -> float:
    """Best per-launch host time of an ``add`` kernel built in code, over 64 f32 elements."""
    b = KernelBuilder("add", cube_dim=256)
    x, y, out = b.tensor("x", f32), b.tensor("y", f32), b.tensor("out", f32, write=True)
    with b.if_(b.ABSOLUTE_POS < out.len):
        out[b.ABSOLUTE_POS] = x[b.ABSOLUTE_POS] + y[b.ABSOLUTE_POS]
    kern = b.kernel()
    a = rt.upload(np.ones(64, np.float32))
    c = rt.allocate((64,), f32)
    calls = 200
    return best_of(lambda: [kern.launch(rt, 1, 256, a, a, c) for _ in range(calls)], 50) * 1e3 \
        / calls


def first_launch_ms() -> float:
    """Time of the first launch in this process (specialize, codegen, cache/compile, run)."""
    x = np.ones(1024, np.float32)
    out = np.empty_like(x)
    start = time.perf_counter()
    gelu_tanh.launch("cpu", 4, 256, x, out)
    return (time.perf_counter() - start) * 1e3


def best_of(fn, repeats: int = 5) -> float:
    """Best wall time of ``fn`` in ms."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times) * 1e3


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--first-launch":
        print(f"{first_launch_ms():.3f}")
        return
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "BURN_CUBE_CACHE_DIR": cache}
        cmd = [sys.executable, __file__, "--first-launch"]
        cold = float(subprocess.run(cmd, env=env, capture_output=True, text=True,
                                    check=True).stdout)
        hits = [float(subprocess.run(cmd, env=env, capture_output=True, text=True,
                                     check=True).stdout) for _ in range(3)]
    print(f"cold compile (first launch, empty cache): {cold:8.1f} ms   (target <= 150 ms)")
    print(f"cache hit in a fresh process (best of 3): {min(hits):8.2f} ms   (target <= 5 ms)")

    rng = np.random.default_rng(0)
    x = rng.standard_normal(N).astype(np.float32)
    out = np.empty_like(x)
    cube_dim = 256
    rt = bc.runtime("cpu")
    expected = 0.5 * x * (1.0 + np.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))
    ref = best_of(lambda: 0.5 * x * (1.0 + np.tanh(0.7978845608 * (x + 0.044715 * x * x * x))))
    for name, kern, lanes in (("scalar", gelu_tanh, 1), ("Line[f32, 4]", gelu_tanh_line, 4)):
        cubes = N // cube_dim // lanes
        kern.launch(rt, cubes, cube_dim, x, out)  # compile outside the timing
        ours = best_of(lambda k=kern, c=cubes: k.launch(rt, c, cube_dim, x, out))
        err = float(np.max(np.abs(out - expected)))
        print(f"GELU-tanh over 16M f32 ({name}): burn-cube cpu {ours:7.1f} ms, numpy {ref:7.1f} "
              f"ms, speed-up {ref / ours:4.1f}x (target >= 4x); max abs err {err:.2e}; "
              f"{os.cpu_count()} cores")
    print(f"launch of a built kernel on 64 f32 (host cost): {launch_us(rt):6.1f} us")


if __name__ == "__main__":
    main()
