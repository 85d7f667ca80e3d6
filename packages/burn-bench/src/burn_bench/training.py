"""Training steps of real models, burn (each backend under autodiff) against PyTorch eager.

Suites: `mlp` (784-256-10, batch 64), `lenet` (LeNet-5 on 1x28x28, batch 64),
`transformer-encoder` (2 layers, d_model 128, 4 heads, d_ff 512, GELU, seq 64, batch 16) and
`transformer-encoder-large` (6 layers, d_model 512, 8 heads, d_ff 2048, GELU, seq 256, batch
32: the GPU target's encoder; seconds a step on a CPU). One step is forward, `cross_entropy`,
backward and an Adam update (torch's epsilon 1e-8, dropout 0), float32.
Each thread count runs in its own process (OMP/OpenBLAS/MKL threads set before numpy and torch
start, `torch.set_num_threads` alike) and times torch and burn interleaved in that process. The
1-thread figures are the stable ones: at 2 threads the two libraries' pools compete on a 2-core
machine. PyTorch runs on the kind of device of the burn backends it is compared with
(`ops.torch_device`): a GPU backend's step against torch on CUDA where torch has it, a host
backend's against torch on the CPU, one torch step per device in the same run.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from burn_bench.threads import rerun_with_threads, run_each

#: Backends compared with torch, where available (each under autodiff).
CPU_BACKENDS = ("numpy", "cpu")
LR = 1e-3
EPSILON = 1e-8


@dataclass(frozen=True)
class Workload:
    """One model's step: its title, input shape, class count, the two model builders, and
    whether a step takes well under a second on a CPU (the asv history and the test suite
    train those; the others are GPU workloads)."""

    title: str
    input_shape: tuple[int, ...]
    classes: int
    burn_model: Callable[[Any], Any]
    torch_model: Callable[[], Any]
    cpu_sized: bool = True


def _burn_mlp(device: Any) -> Any:
    from burn import nn

    return nn.Sequential(nn.Linear(784, 256, device=device), nn.Relu(),
                         nn.Linear(256, 10, device=device))


def _torch_mlp() -> Any:
    from torch import nn

    return nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))


def _burn_lenet(device: Any) -> Any:
    from burn import nn

    return nn.Sequential(
        nn.Conv2d(1, 6, 5, device=device), nn.Relu(), nn.MaxPool2d(2),
        nn.Conv2d(6, 16, 5, device=device), nn.Relu(), nn.MaxPool2d(2), nn.Flatten(),
        nn.Linear(256, 120, device=device), nn.Relu(), nn.Linear(120, 84, device=device),
        nn.Relu(), nn.Linear(84, 10, device=device))


def _torch_lenet() -> Any:
    from torch import nn

    return nn.Sequential(
        nn.Conv2d(1, 6, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(6, 16, 5), nn.ReLU(),
        nn.MaxPool2d(2), nn.Flatten(), nn.Linear(256, 120), nn.ReLU(), nn.Linear(120, 84),
        nn.ReLU(), nn.Linear(84, 10))


@dataclass(frozen=True)
class EncoderShape:
    """A transformer encoder classifier's sizes: model width, heads, feed-forward width and
    layers."""

    d_model: int
    heads: int
    d_ff: int
    layers: int


SMALL_ENCODER = EncoderShape(128, 4, 512, 2)
#: the encoder of the GPU target: 6 layers of d_model 512
LARGE_ENCODER = EncoderShape(512, 8, 2048, 6)


def _burn_encoder(shape: EncoderShape, device: Any) -> Any:
    from burn import nn

    class Encoder(nn.Module):
        def __init__(self) -> None:
            self.encoder = nn.TransformerEncoder(shape.d_model, shape.heads, shape.d_ff,
                                                 shape.layers, dropout=0.0, activation="gelu",
                                                 device=device)
            self.head = nn.Linear(shape.d_model, 10, device=device)

        def forward(self, x: Any) -> Any:
            return self.head(self.encoder(x)).reshape([-1, 10])

    return Encoder()


def _torch_encoder(shape: EncoderShape) -> Any:
    from torch import nn

    class Encoder(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            layer = nn.TransformerEncoderLayer(shape.d_model, shape.heads, shape.d_ff,
                                               dropout=0.0, activation="gelu", batch_first=True)
            self.encoder = nn.TransformerEncoder(layer, shape.layers, enable_nested_tensor=False)
            self.head = nn.Linear(shape.d_model, 10)

        def forward(self, x: Any) -> Any:
            return self.head(self.encoder(x)).reshape(-1, 10)

    return Encoder()


WORKLOADS = {
    "mlp": Workload("MLP 784-256-10, batch 64", (64, 784), 10, _burn_mlp, _torch_mlp),
    "lenet": Workload("LeNet-5, batch 64 of 1x28x28", (64, 1, 28, 28), 10, _burn_lenet,
                      _torch_lenet),
    "transformer-encoder": Workload(
        "TransformerEncoder 2 layers, d 128, 4 heads, d_ff 512, GELU, batch 16 x seq 64",
        (16, 64, 128), 10, partial(_burn_encoder, SMALL_ENCODER),
        partial(_torch_encoder, SMALL_ENCODER)),
    "transformer-encoder-large": Workload(
        "TransformerEncoder 6 layers, d 512, 8 heads, d_ff 2048, GELU, batch 32 x seq 256",
        (32, 256, 512), 10, partial(_burn_encoder, LARGE_ENCODER),
        partial(_torch_encoder, LARGE_ENCODER), cpu_sized=False),
}
#: the workloads small enough for CPU runs
CPU_WORKLOADS = tuple(sorted(name for name, work in WORKLOADS.items() if work.cpu_sized))


def _data(work: Workload) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    x = rng.standard_normal(work.input_shape).astype(np.float32)
    rows = x.shape[0] * (x.shape[1] if len(work.input_shape) == 3 else 1)
    return x, rng.integers(0, work.classes, rows)


def torch_step_fn(work: Workload, device: str = "cpu") -> Callable[[], float]:
    """A closure running one torch training step of `work` on torch `device` ("cpu",
    "cuda"); it returns the loss (its `item()` waits for the device)."""
    import torch

    torch.manual_seed(0)
    model = work.torch_model().to(device)
    optim = torch.optim.Adam(model.parameters(), lr=LR, eps=EPSILON)
    x, y = (torch.from_numpy(a).to(device) for a in _data(work))
    return torch_classifier_step(model, optim, x, y)


def torch_classifier_step(model: Any, optim: Any, x: Any, y: Any) -> Callable[[], float]:
    """A closure running one torch step of `model` on (x, y): cross-entropy, backward and
    `optim`'s update; it returns the loss."""
    import torch

    def step() -> float:
        loss = torch.nn.functional.cross_entropy(model(x), y)
        optim.zero_grad(set_to_none=True)
        loss.backward()
        optim.step()
        return loss.item()

    return step


def burn_step_fn(work: Workload, backend: str = "numpy") -> Callable[[], float]:
    """A closure running one burn training step of `work` on `backend`+autodiff (after one
    warm-up step: kernels compiled, matmul strategies tuned); it returns the loss."""
    import burn.functional as F

    model, optim, x, y = _burn_training(work, backend)

    def step() -> float:
        loss = F.cross_entropy(model(x), y)
        optim.step(LR, model, loss.backward())
        return loss.item()

    step()
    return step


def burn_parts_fn(work: Workload, backend: str) -> Callable[[], tuple[float, ...]]:
    """`burn_step_fn`'s step, returning the seconds of its `PARTS` instead of the loss."""
    import burn.functional as F

    model, optim, x, y = _burn_training(work, backend)
    clock = time.perf_counter

    def step() -> tuple[float, ...]:
        start = clock()
        loss = F.cross_entropy(model(x), y)
        forward = clock()
        grads = loss.backward()
        backward = clock()
        optim.step(LR, model, grads)
        updated = clock()
        loss.item()
        return forward - start, backward - forward, updated - backward, clock() - updated

    step()
    return step


def _burn_training(work: Workload, backend: str) -> tuple[Any, Any, Any, Any]:
    """`work`'s model on `backend`+autodiff (weights from one seed on every backend), an Adam
    optimizer, and the inputs and targets there."""
    import burn
    from burn.optim import AdamConfig

    device = burn.Device(backend).autodiff()
    burn.seed(0, device)  # the initial weights of every backend from one seed
    model = work.burn_model(device)
    x, y = (burn.tensor(a, device=device) for a in _data(work))
    return model, AdamConfig(epsilon=EPSILON).init(), x, y


#: The parts of a burn step `parts_report` times: forward with the loss, backward, the Adam
#: update, and the loss's `item()` (which waits for the device's queued work).
PARTS = ("forward", "backward", "optimizer", "item")


def parts_report(name: str, threads: int, backends: list[str], steps: int = 300) -> str:
    """Where workload `name`'s burn step spends its time on each of `backends` (device specs,
    under autodiff; `threads`, the report's title: this process's thread count as its
    environment set it, as `run_workload` does): each part's min and median over
    `steps` steps, the backends interleaved step by step, and for a fusion device its fusion
    counters per step (over `steps` more steps of it alone); backends this machine lacks are
    listed with the reason."""
    import burn
    from burn.fusion import reset_stats, stats

    work = WORKLOADS[name]
    specs, missing = _available(backends)
    fns = {spec: burn_parts_fn(work, spec) for spec in specs}
    times: dict[str, list[tuple[float, ...]]] = {spec: [] for spec in fns}
    for _ in range(steps):
        for spec, fn in fns.items():
            parts = fn()
            times[spec].append((*parts, sum(parts)))
    header = "".join(f"{part:>20}" for part in (*PARTS, "step"))
    lines = [f"## {work.title}: step parts, {threads} thread(s), min / median of {steps} "
             "steps (us)", f"{'backend':<28}{header}"]
    for spec, rows in times.items():
        columns = np.asarray(rows) * 1e6
        cells = "".join(f"{np.min(c):9.1f} / {np.median(c):8.1f}" for c in columns.T)
        lines.append(f"{str(burn.Device(spec).autodiff()):<28}{cells}")
    for spec, fn in fns.items():
        if "fusion" in burn.Device(spec).decorators:
            reset_stats()
            for _ in range(steps):
                fn()
            done = stats()
            lines.append(f"fusion per step, {spec}: {done.ops_recorded / steps:.1f} ops "
                         f"recorded, {done.ops_eager / steps:.1f} run at once, "
                         f"{done.flushes / steps:.1f} flushes, "
                         f"{done.kernels_launched / steps:.1f} kernels")
    return "\n".join([*lines, *missing])


def _available(backends: list[str]) -> tuple[list[str], list[str]]:
    """`backends` this machine runs, and a line for each other one naming the reason
    (`suites.unavailable_reason`), listed under a report."""
    from burn_bench.suites import unavailable_reason

    reasons = {spec: unavailable_reason(spec) for spec in backends}
    return ([spec for spec, reason in reasons.items() if reason is None],
            [f"burn {spec}: unavailable ({reason})" for spec, reason in reasons.items()
             if reason is not None])


def cpu_backends() -> list[str]:
    """The CPU backends this machine runs: numpy, and the cube backend `cpu` where there is a
    C compiler and burn-cube."""
    import burn

    return [b.name for b in burn.available_backends() if b.available and b.name in CPU_BACKENDS]


def torch_candidate(device: str) -> str:
    """The name of the torch step on torch `device` in a report: "torch eager step" on the
    CPU (the name of the CPU-only reports before), "torch eager step on cuda" on a GPU."""
    return "torch eager step" if device == "cpu" else f"torch eager step on {device}"


def measure(name: str, threads: int, backends: list[str] | None = None) -> str:
    """The report of workload `name` at `threads` threads (in this process), on `backends`
    (device specs, each run under autodiff; None: `cpu_backends()`), each burn step against
    the torch step on its kind of device (`ops.torch_device`); backends this machine lacks
    are listed as unavailable, with the reason, under the table."""
    import torch

    import burn
    from burn_bench.ops import torch_device
    from burn_bench.timing import Candidate, measure_interleaved, report

    torch.set_num_threads(threads)
    work = WORKLOADS[name]
    specs, missing = _available(backends or cpu_backends())
    devices = {spec: torch_device(torch, spec) for spec in specs}
    results = measure_interleaved([
        *(Candidate(torch_candidate(where), torch_step_fn(work, where))
          for where in dict.fromkeys(devices.values())),
        *(Candidate(f"burn {burn.Device(spec).autodiff()} step", burn_step_fn(work, spec),
                    vs=torch_candidate(devices[spec])) for spec in specs),
    ], min_time=0.3, rounds=7)
    title = f"{work.title}: training step (Adam), {threads} thread(s)"
    return "\n".join([report(title, results), *missing])


def run_workload(name: str, backends: list[str] | None = None) -> str:
    """Measure workload `name` at 1 and 2 threads, each in a fresh process, on `backends`
    (None: `cpu_backends()`); both reports."""
    chosen = ["--backends", ",".join(backends)] if backends else []
    return run_each("burn_bench.training", [name, *chosen], f"{name} bench")


def main(argv: list[str] | None = None) -> None:
    """`python -m burn_bench.training NAME --threads N [--backends a,b] [--parts]`: one
    report (`--parts`: `parts_report` instead of the steps against torch), in this process
    where its thread variables are N already, else in a child with them set
    (`threads.rerun_with_threads`: a report titled 1 thread would time burn's cpu kernels on
    every core otherwise)."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("name", choices=sorted(WORKLOADS))
    parser.add_argument("--threads", type=int, required=True)
    parser.add_argument("--backends", help="comma-separated device specs (default: the CPU "
                        "backends)")
    parser.add_argument("--parts", action="store_true", help="time each part of burn's step "
                        "(forward, backward, optimizer, item) per backend, no torch")
    parser.add_argument("--steps", type=int, default=300, help="steps timed with --parts")
    args = parser.parse_args(argv)
    if rerun_with_threads("burn_bench.training", argv, args.threads):
        return
    backends = args.backends.split(",") if args.backends else None
    if args.parts:
        print(parts_report(args.name, args.threads, backends or cpu_backends(), args.steps))
        return
    print(measure(args.name, args.threads, backends))


if __name__ == "__main__":
    main()
