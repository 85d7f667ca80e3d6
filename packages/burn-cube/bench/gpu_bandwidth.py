"""GPU bandwidth benchmark: the GELU-tanh chain through the cuda and wgpu runtimes.

Prints, in one run: device-to-device copy bandwidth (CuPy), the chain's bandwidth through the
cuda runtime (reads + writes counted) as a share of the copy, and through wgpu as a share of the
cuda figure. Runtimes that are not available are reported as such.

Usage: ``python packages/burn-cube/bench/gpu_bandwidth.py [n_elements]``
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

import numpy as np

import burn_cube as bc
from burn_cube import ABSOLUTE_POS, Tensor, f32

CUBE_DIM = 256


@bc.kernel
def gelu_tanh(x: Tensor[f32], out: Tensor[f32]):
    i = ABSOLUTE_POS
    if i < len(x):
        v = x[i]
        out[i] = 0.5 * v * (1.0 + bc.tanh(0.7978845608 * (v + 0.044715 * v * v * v)))


def seconds_per_call(fn: Callable[[], None], sync: Callable[[], None], calls: int = 50) -> float:
    """Best of 3 batches of `calls` runs, synchronised at both ends."""
    fn()
    sync()
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        sync()
        best = min(best, (time.perf_counter() - start) / calls)
    return best


def chain_bandwidth(name: str, data: np.ndarray) -> float | None:
    """GB/s of the chain on runtime `name` (None when the runtime is unavailable)."""
    try:
        rt = bc.runtime(name)
    except bc.errors.KernelError as err:
        print(f"{name}: not available ({err})")
        return None
    x, out = rt.upload(data), rt.allocate(data.shape, bc.f32)
    cubes = (data.size + CUBE_DIM - 1) // CUBE_DIM

    def run() -> None:
        gelu_tanh.launch(rt, cubes, CUBE_DIM, x, out)

    t = seconds_per_call(run, rt.sync)
    expected = 0.5 * data * (1.0 + np.tanh(0.7978845608 * (data + 0.044715 * data ** 3)))
    err = float(np.max(np.abs(out.numpy() - expected)))
    gbs = 2 * data.nbytes / t / 1e9
    print(f"{name}: chain {t * 1e3:.3f} ms, {gbs:.0f} GB/s on {rt.properties.device}; "
          f"max abs err {err:.2e}")
    return gbs


def copy_bandwidth(data: np.ndarray) -> float | None:
    """GB/s of a CuPy device-to-device copy of `data` (reads + writes)."""
    try:
        import cupy
    except ImportError:
        return None
    a = cupy.asarray(data)
    b = cupy.empty_like(a)
    t = seconds_per_call(lambda: cupy.copyto(b, a), cupy.cuda.Device().synchronize)
    gbs = 2 * data.nbytes / t / 1e9
    print(f"cupy device copy: {t * 1e3:.3f} ms, {gbs:.0f} GB/s")
    return gbs


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 64 * 1024 * 1024
    data = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    print(f"GELU-tanh chain over {n} float32 ({data.nbytes / 2**20:.0f} MiB per buffer)")
    copy = copy_bandwidth(data)
    cuda = chain_bandwidth("cuda", data)
    wgpu = chain_bandwidth("wgpu", data)
    if cuda and copy:
        print(f"cuda chain / device copy: {cuda / copy:.1%} (target >= 85%)")
    if cuda and wgpu:
        print(f"wgpu chain / cuda chain: {wgpu / cuda:.1%} (target >= 70%)")


if __name__ == "__main__":
    main()
