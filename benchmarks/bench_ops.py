"""asv benchmarks generated from burn-bench's op suites and the "asv" profile of
benchmarks.toml: one class per bench, parametrised over (backend, dtype, candidate), the
candidate being burn or a reference (torch, numpy) timed on the same data; and the training
steps of burn-bench's training workloads (`TimeTrainStep`).

A backend missing on the machine, or a reference without the op, raises NotImplementedError in
`setup`, which asv records as skipped (n/a)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import burn
from burn_bench import config
from burn_bench.ops import BUILDERS
from burn_bench.runner import same_threads
from burn_bench.suites import unavailable_reason
from burn_bench.training import CPU_WORKLOADS, WORKLOADS, burn_step_fn, torch_step_fn

ROOT = Path(__file__).resolve().parents[1]
PROFILE = config.profile(config.read(ROOT / config.FILE), "asv", ROOT / config.FILE)


class _OpBench:
    """Base of the generated classes: `bench` names the op suite."""

    bench = ""
    params = (PROFILE.backends, PROFILE.dtypes, ["burn", *PROFILE.compare])
    param_names = ("backend", "dtype", "candidate")
    rounds = PROFILE.rounds  # asv's own repeat count

    def setup(self, backend: str, dtype: str, candidate: str) -> None:
        """Build the calls; NotImplementedError (asv: skipped) when they cannot run here."""
        reason = unavailable_reason(backend)
        if reason is not None:
            raise NotImplementedError(f"{backend}: {reason}")
        calls = BUILDERS[self.bench](PROFILE.size, dtype, burn.Device(backend))
        if candidate not in calls:
            raise NotImplementedError(f"{self.bench}: no {candidate} reference")
        self.call = calls[candidate]
        self.threads = same_threads(PROFILE.threads)
        self.threads.__enter__()
        self.call()  # warm-up

    def teardown(self, backend: str, dtype: str, candidate: str) -> None:
        """Restore the thread counts `setup` set."""
        if hasattr(self, "threads"):
            self.threads.__exit__(None, None, None)

    def time_op(self, backend: str, dtype: str, candidate: str) -> Any:
        """One call of the candidate (burn calls synchronise their device)."""
        return self.call()


def _class_name(bench: str) -> str:
    return "Time" + "".join(part.capitalize() for part in bench.replace("_", "-").split("-"))


for _bench in PROFILE.benches:
    if _bench in BUILDERS:
        globals()[_class_name(_bench)] = type(_class_name(_bench), (_OpBench,), {"bench": _bench})


class TimeTrainStep:
    """One training step (forward, cross_entropy, backward, Adam) of burn-bench's training
    workloads, burn on numpy+autodiff against the same PyTorch model, on one thread."""

    params = (list(CPU_WORKLOADS), ["burn", "torch"])
    param_names = ("workload", "candidate")
    timeout = 180  # seconds: the encoder's calibration passed asv's default 60 s under load

    def setup(self, workload: str, candidate: str) -> None:
        """Build the model and its step; NotImplementedError (skipped) without torch."""
        make = burn_step_fn if candidate == "burn" else torch_step_fn
        try:
            self.step = make(WORKLOADS[workload])
        except ImportError as exc:
            raise NotImplementedError(str(exc)) from exc
        self.threads = same_threads(1)
        self.threads.__enter__()
        self.step()  # warm-up

    def teardown(self, workload: str, candidate: str) -> None:
        """Restore the thread counts `setup` set."""
        if hasattr(self, "threads"):
            self.threads.__exit__(None, None, None)

    def time_step(self, workload: str, candidate: str) -> float:
        """One training step; returns the loss."""
        return self.step()
