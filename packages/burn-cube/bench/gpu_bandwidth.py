"""GPU bandwidth benchmark: the GELU-tanh chain through the cuda and wgpu runtimes.

Prints, in one run: device-to-device copy bandwidth (CuPy), then the chain's bandwidth (reads +
writes counted) in two variants per runtime: ``scalar`` (one f32 per unit, 32-bit accesses) and
``line`` (``Line[f32, 4]``: four per unit, 128-bit accesses); cuda as a share of the copy, wgpu as
a share of the cuda figure of the same variant; and a plain ``Line[f32, 4]`` copy kernel per
runtime ("wgpu copy kernel GB/s"), separating memory throughput from the maths, plus a scalar one;
and hand-written CUDA GELU kernels (CuPy ``RawKernel``, one and four f32 per thread) as the
reference for the generated scalar code. Runtimes that are not available are reported.

Usage: ``python packages/burn-cube/bench/gpu_bandwidth.py [n_elements]``
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import burn_cube as bc
from burn_cube import ABSOLUTE_POS, Line, Tensor, f32

CUBE_DIM = 256


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


@bc.kernel
def copy_scalar(x: Tensor[f32], out: Tensor[f32]):
    i = ABSOLUTE_POS
    if i < len(x):
        out[i] = x[i]


@bc.kernel
def copy_line(x: Tensor[Line[f32, 4]], out: Tensor[Line[f32, 4]]):
    i = ABSOLUTE_POS
    if i < len(x):
        out[i] = x[i]


VARIANTS = {"scalar": (gelu_tanh, 1), "line": (gelu_tanh_line, 4)}


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


def chain_bandwidth(name: str, data: np.ndarray) -> dict[str, float]:
    """GB/s of each chain variant on runtime `name` (empty when the runtime is unavailable)."""
    try:
        rt = bc.runtime(name)
    except bc.errors.KernelError as err:
        print(f"{name}: not available ({err})")
        return {}
    x, out = rt.upload(data), rt.allocate(data.shape, bc.f32)
    expected = 0.5 * data * (1.0 + np.tanh(0.7978845608 * (data + 0.044715 * data ** 3)))
    result = {}
    for variant, (kern, lanes) in VARIANTS.items():
        cubes = (data.size // lanes + CUBE_DIM - 1) // CUBE_DIM

        def run(kern: bc.Kernel = kern, cubes: int = cubes) -> None:
            kern.launch(rt, cubes, CUBE_DIM, x, out)

        t = seconds_per_call(run, rt.sync)
        err = float(np.max(np.abs(out.numpy() - expected)))
        result[variant] = 2 * data.nbytes / t / 1e9
        print(f"{name} {variant}: chain {t * 1e3:.3f} ms, {result[variant]:.0f} GB/s on "
              f"{rt.properties.device}; max abs err {err:.2e}")
    cubes = (data.size // 4 + CUBE_DIM - 1) // CUBE_DIM
    t = seconds_per_call(lambda: copy_line.launch(rt, cubes, CUBE_DIM, x, out), rt.sync)
    print(f"{name} copy kernel (Line[f32, 4]): {2 * data.nbytes / t / 1e9:.0f} GB/s")
    cubes = (data.size + CUBE_DIM - 1) // CUBE_DIM
    t = seconds_per_call(lambda: copy_scalar.launch(rt, cubes, CUBE_DIM, x, out), rt.sync)
    print(f"{name} copy kernel (scalar f32): {2 * data.nbytes / t / 1e9:.0f} GB/s")
    return result


#: Hand-written CUDA references (no burn-cube): one f32 per thread, and four per thread
#: (coalesced, ``blockDim.x`` apart: four independent loads in flight per thread).
HAND_WRITTEN = r"""
extern "C" __global__ void gelu1(const float *__restrict__ x, float *__restrict__ y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { float v = x[i];
        y[i] = 0.5f * v * (1.0f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v))); }
}
extern "C" __global__ void gelu4(const float *__restrict__ x, float *__restrict__ y, int n) {
    int base = blockIdx.x * blockDim.x * 4 + threadIdx.x;
    float v[4];
    #pragma unroll
    for (int k = 0; k < 4; ++k) { int i = base + k * blockDim.x; v[k] = i < n ? x[i] : 0.0f; }
    #pragma unroll
    for (int k = 0; k < 4; ++k) { int i = base + k * blockDim.x; float w = v[k];
        if (i < n) y[i] = 0.5f * w * (1.0f + tanhf(0.7978845608f * (w + 0.044715f * w * w * w))); }
}
"""


def hand_written_bandwidth(data: np.ndarray) -> float | None:
    """GB/s of the hand-written scalar GELU (CuPy RawKernel); prints the 4-per-thread one too."""
    try:
        import cupy
    except ImportError:
        return None
    module = cupy.RawModule(code=HAND_WRITTEN)
    a = cupy.asarray(data)
    b = cupy.empty_like(a)
    n = np.int32(data.size)
    result = None
    for name, per_thread in (("gelu1", 1), ("gelu4", 4)):
        fn = module.get_function(name)
        blocks = (data.size + CUBE_DIM * per_thread - 1) // (CUBE_DIM * per_thread)

        def run(fn: Any = fn, blocks: int = blocks) -> None:
            fn((blocks,), (CUBE_DIM,), (a, b, n))

        t = seconds_per_call(run, cupy.cuda.Device().synchronize)
        gbs = 2 * data.nbytes / t / 1e9
        print(f"hand-written CUDA GELU, {per_thread} f32 per thread: {gbs:.0f} GB/s")
        result = gbs if result is None else result
    return result


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
    hand = hand_written_bandwidth(data)
    cuda = chain_bandwidth("cuda", data)
    wgpu = chain_bandwidth("wgpu", data)
    for variant in VARIANTS:
        if variant in cuda and copy:
            print(f"cuda {variant} / device copy: {cuda[variant] / copy:.1%} (target >= 85%)")
        if variant == "scalar" and variant in cuda and hand:
            print(f"cuda scalar / hand-written scalar: {cuda[variant] / hand:.1%}")
        if variant in cuda and variant in wgpu:
            print(f"wgpu {variant} / cuda {variant}: {wgpu[variant] / cuda[variant]:.1%} "
                  "(target >= 70%)")

if __name__ == "__main__":
    main()
