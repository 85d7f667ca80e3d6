"""Fusion: the cube cpu backend with and without the fusion decorator, against NumPy and PyTorch.

The measurements, each thread count in its own process (OMP/OpenBLAS/MKL threads set before
numpy, torch and the cpu runtime start; `torch.set_num_threads` alike), candidates interleaved:

- a tanh-GELU chain over `--size` float32 elements (9 elementwise ops): burn cpu (one kernel per
  op), burn cpu+fusion (one kernel), the same chain in NumPy and in PyTorch eager, PyTorch's
  `F.gelu(approximate="tanh")`, and copies as the memory-bound floor (`copy_` into a kept
  tensor; `clone`, which also allocates); on a GPU device of the rows report too (below; over
  `GPU_SIZE` elements, against torch on CUDA, in the 1-thread process), each call waited for,
  and `BACK_TO_BACK` calls queued before one wait (burn's flushed by `burn.flush`);
- the MLP 784-256-10 Adam training step of the `mlp` suite on cpu+autodiff and
  cpu+fusion+autodiff against PyTorch eager, with the inner-backend calls and fused kernels
  per step;
- ReLU's backward as `(x > 0).float() * g` over `MASK_SIZE` float32 elements (a comparison, a
  bool cast and a product: one fused kernel against three) on cpu and cpu+fusion against
  PyTorch;
- the cost of recording: 64 chained scalar multiplications of 64 elements, then a sync, per op,
  on cpu and cpu+fusion (every op recorded), and with a sync after each op (run at once;
  `record_report`);
- softmax, its backward ``s * (g - sum(g * s))`` and layer norm over rows, at the
  transformer-encoder suite's H200 shapes (`ROWS`: attention scores [32 * 8 * 256, 256],
  activations [32 * 256, 512]), on the devices of ``BURN_BENCH_FUSION_ROWS`` (comma-separated;
  default cuda where present, else cpu): written from primitives unfused and under fusion (one
  reduce kernel), and burn's `F.softmax` / `F.layer_norm` on both (which run the backend's row
  kernels at once under fusion), against PyTorch's on the same kind of device; in the 1-thread
  process only.
"""

from __future__ import annotations

import argparse
import math
import os
from collections import Counter
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

import numpy as np

from burn_bench.threads import THREADS, rerun_with_threads, run_each

SIZE = 1 << 24
#: elements of the GELU chain on a GPU of the rows devices (the H200 target's 64M floats)
GPU_SIZE = 1 << 26
#: calls queued before one wait in the GPU GELU report's back-to-back rows
BACK_TO_BACK = 8
CHAIN = 64
MASK_SIZE = 1 << 18
#: (rows, row length) of the softmax and layer-norm rows report.
ROWS = {"softmax": (32 * 8 * 256, 256), "softmax backward": (32 * 8 * 256, 256),
        "layer norm": (32 * 256, 512)}


def gelu_chain(x: Any) -> Any:
    """tanh-GELU as 9 elementwise ops (burn tensors, torch tensors and numpy arrays alike)."""
    return x * 0.5 * (1.0 + _tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x * x * x)))


def _tanh(x: Any) -> Any:
    return np.tanh(x) if isinstance(x, np.ndarray) else x.tanh()


def _bound(fn: Callable[[Any], Any], x: Any) -> Callable[[], Any]:
    """`fn` applied to `x`, as a call without arguments."""
    return lambda: fn(x)


def _synced(fn: Callable[[], Any], device: str) -> Callable[[], Any]:
    """`fn`, then a sync of `device` (its result computed, not only recorded)."""
    import burn

    def call() -> Any:
        out = fn()
        burn.sync(device)
        return out

    return call


def _torch_synced(fn: Callable[[], Any], where: str) -> Callable[[], Any]:
    """`fn` (a torch call), then a wait for CUDA where it runs there (`where`: "cpu" or
    "cuda")."""
    if where == "cpu":
        return fn
    import torch

    def call() -> Any:
        out = fn()
        torch.cuda.synchronize()
        return out

    return call


def _back_to_back(fn: Callable[[], Any], device: str) -> Callable[[], Any]:
    """`BACK_TO_BACK` calls of `fn` (a burn call), each result kept and its work started
    (`burn.flush`: a fusion device launches the chain's kernel) before the next call records,
    then one wait: the device's throughput, the host's work overlapping the device's."""
    import burn

    def call() -> Any:
        kept = []
        for _ in range(BACK_TO_BACK):
            kept.append(fn())
            burn.flush(device)
        burn.sync(device)
        return kept

    return call


def _torch_back_to_back(fn: Callable[[], Any], where: str) -> Callable[[], Any]:
    """`BACK_TO_BACK` calls of `fn` (a torch call), then one wait where it runs on CUDA
    (`where`: "cpu" or "cuda")."""
    return _torch_synced(lambda: [fn() for _ in range(BACK_TO_BACK)], where)


def gelu_report(size: int, threads: int, base: str = "cpu") -> str:
    """The GELU-chain table on `base` ("cpu", or a GPU backend against torch on CUDA where
    torch has it; NumPy's chain on the cpu only). Each call waits for its result; on a GPU
    also `BACK_TO_BACK` calls queued before one wait (`_back_to_back`), timed per call: the
    bandwidth with the host's recording and launches hidden behind the device's work, as a
    training loop that does not read its results each step sees it."""
    import torch

    import burn
    from burn_bench.ops import torch_device
    from burn_bench.timing import Candidate, measure_interleaved, report

    where = torch_device(torch, base)
    torch_call = partial(_torch_synced, where=where)
    data = np.random.default_rng(0).standard_normal(size).astype(np.float32)
    t = torch.from_numpy(data).to(where)
    dst = torch.empty(size, device=where)
    copy = "torch copy_ (into a kept tensor)"
    candidates = [Candidate(copy, torch_call(lambda: dst.copy_(t))),
                  Candidate("torch clone", torch_call(t.clone), vs=copy),
                  Candidate("torch F.gelu(tanh)", torch_call(lambda: torch.nn.functional.gelu(
                      t, approximate="tanh")), vs=copy),
                  Candidate("torch eager chain", torch_call(lambda: gelu_chain(t)), vs=copy)]
    if base == "cpu":
        candidates.append(Candidate("numpy chain", lambda: gelu_chain(data), vs=copy))
    for spec in (base, f"{base}+fusion"):
        candidates.append(Candidate(f"burn {spec} chain", _synced(
            _bound(gelu_chain, burn.tensor(data, device=spec)), spec), vs=copy))
    queued = f"{copy}, {BACK_TO_BACK} queued"
    queued_fused = f"burn {base}+fusion chain, {BACK_TO_BACK} queued"
    if base != "cpu":
        candidates += [
            Candidate(queued, _torch_back_to_back(lambda: dst.copy_(t), where),
                      calls=BACK_TO_BACK),
            Candidate(queued_fused, _back_to_back(_bound(gelu_chain, burn.tensor(
                data, device=f"{base}+fusion")), f"{base}+fusion"), vs=queued,
                calls=BACK_TO_BACK)]
    results = measure_interleaved(candidates, min_time=0.3, rounds=7)
    by_name = {r.name: r.median for r in results}
    fused = by_name[f"burn {base}+fusion chain"]
    against = f"numpy chain {by_name['numpy chain'] / fused:.2f}x, " if base == "cpu" else ""
    lines = (report(f"tanh-GELU chain, {size} x float32, {base} (torch on {where}), "
                    f"{threads} thread(s)", results)
             + f"\nfused vs (their time over fused's): {against}torch F.gelu "
             f"{by_name['torch F.gelu(tanh)'] / fused:.2f}x, "
             f"unfused {by_name[f'burn {base} chain'] / fused:.2f}x; each call waited for: it "
             f"takes {fused / by_name[copy]:.2f}x the copy's time, {by_name[copy] / fused:.0%} "
             f"of its bandwidth (medians)")
    if base != "cpu":
        lines += (f"; {BACK_TO_BACK} calls queued before one wait: "
                  f"{by_name[queued] / by_name[queued_fused]:.0%} of the copy's bandwidth")
    return lines


def mlp_report(threads: int) -> str:
    """The MLP training-step table, with inner-backend calls and kernels per step."""
    import burn
    from burn.fusion import reset_stats, stats
    from burn_bench.timing import Candidate, measure_interleaved, report
    from burn_bench.training import WORKLOADS, burn_step_fn, torch_step_fn

    work = WORKLOADS["mlp"]
    torch_name = "torch eager step"
    steps = {spec: burn_step_fn(work, spec) for spec in ("cpu", "cpu+fusion")}
    results = measure_interleaved(
        [Candidate(torch_name, torch_step_fn(work)),
         *(Candidate(f"burn {spec}+autodiff step", fn, vs=torch_name)
           for spec, fn in steps.items())], min_time=0.3, rounds=7)
    cube = burn.Device("cpu").backend  # the inner backend of cpu+fusion too
    runtime = cube.runtime  # type: ignore[attr-defined]
    start = runtime.launches
    unfused = cube_calls(steps["cpu"], cube)
    reset_stats()
    middle = runtime.launches
    fused = cube_calls(steps["cpu+fusion"], cube)
    kernels = {"cpu": middle - start, "cpu+fusion": runtime.launches - middle}
    s = stats()
    extra = ", ".join(f"{name} +{n}" for name, n in sorted((fused - unfused).items())) or "none"
    return (report(f"{work.title}: training step (Adam), {threads} thread(s)", results)
            + f"\nkernels launched per step (the cpu runtime's count; BLAS products are none): "
            f"unfused {kernels['cpu']}, fused {kernels['cpu+fusion']}"
            + f"\nper step: unfused {unfused.total()} calls of the cpu backend's op-table ops "
            f"(kernels, BLAS products, views; not the Adam update's one launch); fused "
            f"{fused.total()} (more than unfused: {extra}), {s.kernels_launched} kernels "
            f"({s.ops_recorded} ops recorded, {s.ops_fused} of them in fused "
            f"kernels, {s.cache_hits} plan-cache hits, {s.plans} new kernels)")


def cube_calls(step: Callable[[], Any], backend: Any) -> Counter[str]:
    """The calls of `backend`'s op-table ops (by name) while `step` runs once (counters set on
    the instance, removed after)."""
    from burn.ir import OPS

    calls: Counter[str] = Counter()
    names = [name for name in OPS if hasattr(backend, name) and name not in vars(backend)]

    def counted(name: str, method: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            calls[name] += 1
            return method(*args, **kwargs)
        return call

    for name in names:
        setattr(backend, name, counted(name, getattr(backend, name)))
    try:
        step()
    finally:
        for name in names:
            delattr(backend, name)
    return calls


def _relu_grad(pair: tuple[Any, Any]) -> Any:
    """ReLU's backward of gradient `g` at `x`, through a bool cast."""
    x, g = pair
    return (x > 0).float() * g


def mask_report(threads: int) -> str:
    """ReLU's backward written with a bool cast, fused and unfused, against PyTorch."""
    import torch

    import burn
    from burn_bench.timing import Candidate, measure_interleaved, report

    rng = np.random.default_rng(0)
    xd, gd = (rng.standard_normal(MASK_SIZE).astype(np.float32) for _ in range(2))
    tx, tg = torch.from_numpy(xd), torch.from_numpy(gd)
    torch_name = "torch (x > 0).float() * g"
    candidates = [Candidate(torch_name, _bound(_relu_grad, (tx, tg)))]
    for spec in ("cpu", "cpu+fusion"):
        pair = (burn.tensor(xd, device=spec), burn.tensor(gd, device=spec))
        candidates.append(Candidate(f"burn {spec}", _synced(_bound(_relu_grad, pair), spec),
                                    vs=torch_name))
    results = measure_interleaved(candidates, min_time=0.3, rounds=7)
    return report(f"(x > 0).float() * g, {MASK_SIZE} x float32, {threads} thread(s)", results)


def record_report(threads: int) -> str:
    """What recording costs per op: a chain of scalar multiplications, then a sync, on cpu (a
    launch each) and cpu+fusion (every op recorded, one launch for the chain); and what an op
    run at once costs on each, the chain synced after every op (on cpu+fusion a structure
    flushed alone `LONE` times runs at once: fusion's pass-through cost)."""
    import burn
    from burn.fusion.stream import LONE
    from burn_bench.timing import Candidate, Measurement, measure_interleaved

    data = np.ones(64, np.float32)

    def chain(x: Any, device: str | None = None) -> Any:
        for _ in range(CHAIN):
            x = x * 1.0001
            if device is not None:
                burn.sync(device)
        return x

    specs = ("cpu", "cpu+fusion")
    candidates = [Candidate(spec, _synced(_bound(chain, burn.tensor(data, device=spec)), spec))
                  for spec in specs]
    # (as 1 x 64: an op structure of its own, so that running at once does not spread to
    # the recorded chain's, as it would in a loop doing both)
    candidates += [Candidate(f"{spec} at once", _bound(partial(chain, device=spec),
                                                       burn.tensor(data[None], device=spec)))
                   for spec in specs]
    plain, recorded, plain_once, passed = measure_interleaved(candidates, min_time=0.3,
                                                              rounds=7)

    def per_op(result: Measurement) -> str:
        return f"{result.seconds / CHAIN * 1e6:.2f} / {result.median / CHAIN * 1e6:.2f} us"

    return (f"## recording, {CHAIN} chained x * c on 64 x float32 then sync, {threads} "
            f"thread(s)\nper op (min / median): cpu {per_op(plain)} (a launch each), "
            f"cpu+fusion {per_op(recorded)} (every op deferred, one launch for the chain); "
            f"a sync after each op: cpu {per_op(plain_once)}, cpu+fusion {per_op(passed)} "
            f"(run at once after {LONE} flushes alone)")


def _is_torch(x: Any) -> bool:
    """Whether `x` is a torch tensor (by its type's module: torch is not imported here, and
    burn tensors have torch's method names too)."""
    return type(x).__module__.split(".", 1)[0] == "torch"


def softmax_rows(x: Any) -> Any:
    """Softmax over the last dim from primitives (burn tensors and torch tensors alike)."""
    if _is_torch(x):
        e = (x - x.amax(-1, keepdim=True)).exp()
        return e / e.sum(-1, keepdim=True)
    e = (x - x.max_dim(1)).exp()
    return e / e.sum_dim(1)


def softmax_backward_rows(pair: tuple[Any, Any]) -> Any:
    """Softmax's backward from primitives: gradient `g` at softmax output `s`."""
    s, g = pair
    if _is_torch(s):
        return s * (g - (g * s).sum(-1, keepdim=True))
    return s * (g - (g * s).sum_dim(1))


def layer_norm_rows(pair: tuple[Any, Any]) -> Any:
    """Layer norm over the last dim (weight, no bias) from primitives."""
    x, w = pair
    if _is_torch(x):
        c = x - x.mean(-1, keepdim=True)
        return c / ((c * c).mean(-1, keepdim=True) + 1e-5).sqrt() * w
    c = x - x.mean_dim(1)
    return c / ((c * c).mean_dim(1) + 1e-5).sqrt() * w


def rows_devices() -> list[str]:
    """The base devices of the rows report (`BURN_BENCH_FUSION_ROWS`, else cuda or cpu)."""
    import burn

    named = os.environ.get("BURN_BENCH_FUSION_ROWS")
    if named:
        return [d.strip() for d in named.split(",") if d.strip()]
    return ["cuda" if any(b.name == "cuda" and b.available
                          for b in burn.available_backends()) else "cpu"]


def functional_rows(name: str, arg: Any) -> Any:
    """The library's own softmax / layer norm (`ROWS` name) of `arg` (burn or torch: x, or
    the pair x, weight), or torch's softmax backward (the pair s, g)."""
    import torch

    import burn.functional as F

    if name == "softmax backward":
        s, g = arg
        return torch._softmax_backward_data(g, s, -1, s.dtype)
    if name == "softmax":
        return torch.softmax(arg, -1) if isinstance(arg, torch.Tensor) else F.softmax(arg, 1)
    x, w = arg
    if isinstance(x, torch.Tensor):
        return torch.nn.functional.layer_norm(x, (x.shape[-1],), w)
    return F.layer_norm(x, x.shape[-1], w)


def rows_report(base: str) -> str:
    """Softmax and layer norm over `ROWS` on `base`, unfused and fused, against PyTorch."""
    import torch

    import burn
    from burn_bench.timing import Candidate, measure_interleaved, report

    where = "cuda" if base.startswith("cuda") and torch.cuda.is_available() else "cpu"

    def torch_call(arg: Any, name: str) -> Callable[[], Any]:
        return _torch_synced(partial(functional_rows, name, arg), where)

    rng = np.random.default_rng(0)
    tables = []
    for name, (rows, n) in ROWS.items():
        xd = rng.standard_normal((rows, n)).astype(np.float32)
        wd = rng.standard_normal(n).astype(np.float32)
        primitives = {"softmax": softmax_rows, "softmax backward": softmax_backward_rows,
                      "layer norm": layer_norm_rows}[name]
        if name == "softmax backward":  # a softmax output and a gradient
            xd = torch.softmax(torch.from_numpy(xd), -1).numpy()
            wd = rng.standard_normal((rows, n)).astype(np.float32)
        tx = torch.from_numpy(xd).to(where)
        ref = f"torch {name} ({where})"
        candidates = [Candidate(ref, torch_call(
            tx if name == "softmax" else (tx, torch.from_numpy(wd).to(where)), name))]
        for spec in (base, f"{base}+fusion"):
            x = burn.tensor(xd, device=spec)
            arg = x if name == "softmax" else (x, burn.tensor(wd, device=spec))
            candidates.append(Candidate(f"burn {spec} from primitives",
                                        _synced(_bound(primitives, arg), spec), vs=ref))
            if name != "softmax backward":
                candidates.append(Candidate(f"burn {spec} functional", _synced(
                    _bound(partial(functional_rows, name), arg), spec), vs=ref))
        results = measure_interleaved(candidates, min_time=0.3, rounds=7)
        tables.append(report(f"{name} over {rows} rows of {n} float32, {base}", results))
    return "\n\n".join(tables)


def reports(size: int, threads: int) -> Iterator[str]:
    """Every table at `threads` threads, in this process, each as soon as it is measured."""
    import torch

    torch.set_num_threads(threads)
    bases = rows_devices() if threads == THREADS[0] else []
    yield gelu_report(size, threads)
    for base in bases:
        if base != "cpu":
            yield gelu_report(GPU_SIZE, threads, base)
    yield mlp_report(threads)
    yield mask_report(threads)
    yield record_report(threads)
    for base in bases:
        yield rows_report(base)


def run(size: int = SIZE) -> str:
    """Measure at 1 and 2 threads, each in a fresh process; the reports."""
    return run_each("burn_bench.fusion", ["--size", str(size)], "fusion bench")


def main(argv: list[str] | None = None) -> None:
    """`python -m burn_bench.fusion --threads N [--size N]`: the reports, in this process
    where its thread variables are N, else in a child with them set
    (`threads.rerun_with_threads`)."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--threads", type=int, required=True)
    parser.add_argument("--size", type=int, default=SIZE)
    args = parser.parse_args(argv)
    if rerun_with_threads("burn_bench.fusion", argv, args.threads):
        return
    for i, table in enumerate(reports(args.size, args.threads)):
        print(f"\n{table}" if i else table, flush=True)  # (a run stopped part way keeps these)


if __name__ == "__main__":
    main()
