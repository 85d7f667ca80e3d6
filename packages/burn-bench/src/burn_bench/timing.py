"""Timing helpers shared by the suites: best-of-repeats per-call time."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Measurement:
    """Seconds per call of one candidate (the best of several repeats)."""

    name: str
    seconds: float
    #: name of the candidate this one is compared with in reports (None: not compared).
    vs: str | None = None

    def ratio_to(self, other: Measurement) -> float:
        """How many times faster this candidate is than `other` (> 1 means faster)."""
        return other.seconds / self.seconds


def measure(name: str, fn: Callable[[], object], *, vs: str | None = None,
            min_time: float = 0.2, repeats: int = 5) -> Measurement:
    """Time `fn` as the best mean over `repeats` batches, each running at least `min_time` s.

    Args:
        name: label of the candidate.
        fn: the call to time (warmed up first).
        vs: the candidate to compare with in the report.
        min_time: seconds each batch runs at least.
        repeats: number of batches; the best is kept.
    Returns:
        The Measurement.
    """
    fn()
    number = 1
    while True:  # calibrate the batch size
        start = time.perf_counter()
        for _ in range(number):
            fn()
        elapsed = time.perf_counter() - start
        if elapsed >= min_time / 4:
            break
        number *= 4
    number = max(1, int(number * min_time / max(elapsed, 1e-9)))
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - start) / number)
    return Measurement(name, best, vs)


def report(title: str, results: list[Measurement]) -> str:
    """A table of per-call times, and for each candidate with a `vs` its speed ratio against
    that candidate (> 1: faster) measured in the same run."""
    by_name = {r.name: r for r in results}
    lines = [f"## {title}", f"{'candidate':<36}{'per call':>12}   speed ratio"]
    for r in results:
        ratio = f"{r.ratio_to(by_name[r.vs]):.2f}x vs {r.vs}" if r.vs else ""
        lines.append(f"{r.name:<36}{_fmt(r.seconds):>12}   {ratio}")
    return "\n".join(lines)


def _fmt(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:.2f} us"
    return f"{seconds * 1e3:.3f} ms"
