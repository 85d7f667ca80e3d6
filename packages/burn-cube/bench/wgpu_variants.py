"""Which wgpu variant closes the gap to cuda on the GELU-tanh chain (64M f32 by default).

One row per kernel (a plain copy, GELU with the WGSL table's f32 tanh, GELU with the driver's
``tanh``), lanes (1 or 4) and cube_dim; columns, all in GB/s (reads + writes):

* ``rt``, ``rt/b1``: through ``Kernel.launch`` as ``gpu_bandwidth.py`` does, with the
  runtime's submit policy (batches of 1, 2, 4, ... up to ``BATCH`` = 64) or a submit per launch;
* ``gpu``: GPU time from timestamp queries around 50 dispatches recorded in one compute pass,
  which isolates the shader from the host;

plus the host microseconds per ``Kernel.launch``. The cuda runtime's figures come first.

Usage: ``python packages/burn-cube/bench/wgpu_variants.py [n_elements]``
"""

from __future__ import annotations

import importlib
import sys
import time
from typing import Any

import numpy as np
from gpu_bandwidth import copy_line, gelu_tanh, gelu_tanh_line, seconds_per_call

import burn_cube as bc
from burn_cube import ABSOLUTE_POS, Line, Tensor, f32
from burn_cube.codegen import table_wgsl

CALLS = 50
rt_wgpu = importlib.import_module("burn_cube.runtime.wgpu")  # bc.runtime is a function


@bc.kernel
def copy(x: Tensor[f32], out: Tensor[f32]):
    i = ABSOLUTE_POS
    if i < len(x):
        out[i] = x[i]


@bc.kernel
def gelu_driver(x: Tensor[f32], out: Tensor[f32]):
    i = ABSOLUTE_POS
    if i < len(x):
        v = x[i]
        out[i] = 0.5 * v * (1.0 + bc.tanh(0.7978845608 * (v + 0.044715 * v * v * v)))


@bc.kernel
def gelu_driver_line(x: Tensor[Line[f32, 4]], out: Tensor[Line[f32, 4]]):
    i = ABSOLUTE_POS
    if i < len(x):
        v = x[i]
        out[i] = 0.5 * v * (1.0 + bc.tanh(0.7978845608 * (v + 0.044715 * v * v * v)))


KERNELS = {("copy", 1): copy, ("copy", 4): copy_line, ("gelu", 1): gelu_tanh,
           ("gelu", 4): gelu_tanh_line, ("gelu-driver-tanh", 1): gelu_driver,
           ("gelu-driver-tanh", 4): gelu_driver_line}


def gpu_seconds(rt: Any, pipeline: Any, bind_group: Any, dispatch: tuple[int, ...]) -> float:
    """Seconds per dispatch from timestamps around CALLS dispatches in one compute pass."""
    import wgpu

    device = rt.device
    rt.sync()
    queries = device.create_query_set(type="timestamp", count=2)
    resolved = device.create_buffer(size=256, usage=wgpu.BufferUsage.QUERY_RESOLVE
                                    | wgpu.BufferUsage.COPY_SRC)
    readback = device.create_buffer(size=256, usage=wgpu.BufferUsage.MAP_READ
                                    | wgpu.BufferUsage.COPY_DST)
    best = float("inf")
    for _ in range(3):
        encoder = device.create_command_encoder()
        compute = encoder.begin_compute_pass(timestamp_writes={
            "query_set": queries, "beginning_of_pass_write_index": 0,
            "end_of_pass_write_index": 1})
        compute.set_pipeline(pipeline)
        compute.set_bind_group(0, bind_group)
        for _ in range(CALLS):
            compute.dispatch_workgroups(*dispatch)
        compute.end()
        encoder.resolve_query_set(queries, 0, 2, resolved, 0)
        encoder.copy_buffer_to_buffer(resolved, 0, readback, 0, 16)
        device.queue.submit([encoder.finish()])
        readback.map_sync(wgpu.MapMode.READ, 0, 16)
        start, end = np.frombuffer(bytes(readback.read_mapped(0, 16)), np.uint64)
        readback.unmap()
        best = min(best, float(end - start) * 1e-9 / CALLS)  # Vulkan on NVIDIA: 1 ns ticks
    return best


def host_seconds(fn: Any, sync: Any) -> float:
    """Host seconds per call of `fn` (recording only, no wait)."""
    sync()
    start = time.perf_counter()
    for _ in range(CALLS):
        fn()
    elapsed = time.perf_counter() - start
    sync()
    return elapsed / CALLS


def wgpu_row(rt: Any, name: str, lanes: int, cube_dim: int, data: np.ndarray, x: Any,
             out: Any, timestamps: bool) -> list[str]:
    """The table row of one kernel / lanes / cube_dim on the wgpu runtime."""
    kern = KERNELS[name, lanes]
    cubes = (data.size // lanes + cube_dim - 1) // cube_dim
    nbytes = 2 * data.nbytes

    def run() -> None:
        kern.launch(rt, cubes, cube_dim, x, out)

    driver = name.endswith("driver-tanh")
    saved = dict(table_wgsl.OPS)
    if driver:  # the driver's tanh: drop the table's f32 helper while this kernel compiles
        for key in [k for k in table_wgsl.OPS if k.startswith("tanh.f32")]:
            del table_wgsl.OPS[key]
    try:
        rt.sync()
        before = set(map(id, (c for c in rt._pipelines.values())))
        run()
    finally:
        table_wgsl.OPS.clear()
        table_wgsl.OPS.update(saved)
    rt.sync()
    expected = data if name == "copy" else 0.5 * data * (1.0 + np.tanh(
        0.7978845608 * (data + 0.044715 * data ** 3)))
    err = float(np.max(np.abs(out.numpy() - expected)))
    cells = [f"{name:16s} {lanes:5d} {cube_dim:5d}"]
    default = rt_wgpu.BATCH
    for batch in (default, 1):
        rt_wgpu.BATCH = batch
        cells.append(f"{nbytes / seconds_per_call(run, rt.sync, CALLS) / 1e9:7.0f}")
    rt_wgpu.BATCH = default
    cells.append(f"{host_seconds(run, rt.sync) * 1e6:7.1f}")
    if timestamps:
        compiled = next((c for c in rt._pipelines.values() if id(c) not in before), None)
        if compiled is None:  # compiled before (same source): look it up by source
            compiled = next(c for c in rt._pipelines.values() if
                            c.source == kern.source("wgsl", cube_dim, data[:4], data[:4]))
        bind_group = next(bg for key, (_, bg, _) in reversed(rt._bind_groups.items())
                          if key[0] == id(compiled))
        per_dim = rt.limits["max-compute-workgroups-per-dimension"]
        rows = -(-cubes // per_dim)
        dispatch = (-(-cubes // rows), rows, 1)
        gbs = nbytes / gpu_seconds(rt, compiled.pipeline, bind_group, dispatch) / 1e9
        cells.append(f"{gbs:7.0f}")
    cells.append(f"{err:8.1e}")
    return cells


def cuda_rows(data: np.ndarray) -> None:
    """cuda runtime references (cube_dim 256) and a CuPy copy."""
    try:
        rt = bc.runtime("cuda")
    except bc.errors.KernelError as err:
        print(f"cuda: not available ({err})")
        return
    import cupy

    a = cupy.asarray(data)
    b = cupy.empty_like(a)
    t = seconds_per_call(lambda: cupy.copyto(b, a), cupy.cuda.Device().synchronize)
    print(f"cupy copy: {2 * data.nbytes / t / 1e9:.0f} GB/s")
    x, out = rt.upload(data), rt.allocate(data.shape, bc.f32)
    for (name, lanes), kern in KERNELS.items():
        if name.endswith("driver-tanh"):
            continue
        cubes = (data.size // lanes + 255) // 256
        t = seconds_per_call(lambda k=kern, c=cubes: k.launch(rt, c, 256, x, out), rt.sync)
        print(f"cuda {name} x{lanes}: {2 * data.nbytes / t / 1e9:.0f} GB/s")


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 64 * 1024 * 1024
    data = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    print(f"{n} float32 ({data.nbytes / 2**20:.0f} MiB per buffer)")
    cuda_rows(data)
    rt_wgpu._FEATURES = (*rt_wgpu._FEATURES, "timestamp-query")
    rt = bc.runtime("wgpu")
    timestamps = "timestamp-query" in rt.features
    print(f"wgpu on {rt.properties.device}; timestamps: {timestamps}")
    x, out = rt.upload(data), rt.allocate(data.shape, bc.f32)
    print(f"{'kernel':16s} lanes  cube       rt   rt/b1 host_us    gpu  max_err")
    for name, lanes in KERNELS:
        for cube_dim in (64, 256, 1024):
            print(" ".join(wgpu_row(rt, name, lanes, cube_dim, data, x, out, timestamps)),
                  flush=True)


if __name__ == "__main__":
    main()
