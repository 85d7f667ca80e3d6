"""Timing helpers shared by the suites: per-call times of interleaved batches (min, median,
max)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Measurement:
    """Seconds per call of one candidate: `seconds` is the best batch mean, `median` and
    `worst` the median and slowest of the batch means (equal to `seconds` when not given)."""

    name: str
    seconds: float
    #: name of the candidate this one is compared with in reports (None: not compared).
    vs: str | None = None
    median: float = 0.0
    worst: float = 0.0

    def __post_init__(self) -> None:
        if not self.median:
            object.__setattr__(self, "median", self.seconds)
        if not self.worst:
            object.__setattr__(self, "worst", self.seconds)

    def ratio_to(self, other: Measurement) -> float:
        """How many times faster this candidate is than `other` (> 1 means faster)."""
        return other.seconds / self.seconds


@dataclass(frozen=True)
class Candidate:
    """One thing to time: a label, the call, the candidate it is compared with, and how many
    calls of the thing timed one `fn` call makes (its times are per such call)."""

    name: str
    fn: Callable[[], object]
    vs: str | None = None
    calls: int = 1


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
    return measure_interleaved([Candidate(name, fn, vs)], min_time=min_time, rounds=repeats)[0]


def measure_interleaved(candidates: list[Candidate], *, min_time: float = 0.2,
                        rounds: int = 7) -> list[Measurement]:
    """Time several candidates in alternating rounds (one batch of each per round), so that
    drifts in machine load hit them alike, each round starting one candidate further on, so
    that none always runs right after the same other (a library's threads still spinning
    after its batch slow whatever runs next on a 2-core machine); each keeps the min, median
    and max batch means.

    Args:
        candidates: what to time.
        min_time: seconds each batch runs at least.
        rounds: number of rounds.
    Returns:
        One Measurement per candidate, in order.
    """
    numbers = [_calibrate(c.fn, min_time) for c in candidates]
    means: list[list[float]] = [[] for _ in candidates]
    for r in range(rounds):
        for k in range(len(candidates)):
            i = (r + k) % len(candidates)
            means[i].append(_batch_mean(candidates[i].fn, numbers[i]) / candidates[i].calls)
    return [Measurement(c.name, min(m), c.vs, statistics.median(m), max(m))
            for c, m in zip(candidates, means, strict=True)]


def _calibrate(fn: Callable[[], object], min_time: float) -> int:
    """Calls per batch so that a batch of `fn` (warmed up here) lasts about `min_time` s."""
    fn()
    number = 1
    while (elapsed := _batch_mean(fn, number) * number) < min_time / 4:
        number *= 4
    return max(1, int(number * min_time / max(elapsed, 1e-9)))


def _batch_mean(fn: Callable[[], object], number: int) -> float:
    start = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - start) / number


def report(title: str, results: list[Measurement]) -> str:
    """A table of per-call times (min, median, max batch means), and for each candidate with a
    `vs` its time ratio against that candidate (min/median, > 1: slower) measured in the same
    run."""
    by_name = {r.name: r for r in results}
    width = max([36, *(len(r.name) + 2 for r in results)])
    lines = [f"## {title}", f"{'candidate':<{width}}{'min':>12}{'median':>12}{'max':>12}"
             "   time ratio (min/median)"]
    for r in results:
        ratio = ""
        if r.vs:
            ref = by_name[r.vs]
            ratio = f"{r.seconds / ref.seconds:.2f}x / {r.median / ref.median:.2f}x of {r.vs}"
        lines.append(f"{r.name:<{width}}{_fmt(r.seconds):>12}{_fmt(r.median):>12}"
                     f"{_fmt(r.worst):>12}   {ratio}")
    return "\n".join(lines)


def _fmt(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:.2f} us"
    return f"{seconds * 1e3:.3f} ms"
