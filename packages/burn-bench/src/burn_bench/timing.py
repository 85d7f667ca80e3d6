"""Timing helpers shared by the suites: best-of-batches per-call times, interleaved."""

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


@dataclass(frozen=True)
class Candidate:
    """One thing to time: a label, the call, and the candidate it is compared with."""

    name: str
    fn: Callable[[], object]
    vs: str | None = None


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
    drifts in machine load hit them alike; each keeps its best batch mean.

    Args:
        candidates: what to time.
        min_time: seconds each batch runs at least.
        rounds: number of rounds.
    Returns:
        One Measurement per candidate, in order.
    """
    numbers = [_calibrate(c.fn, min_time) for c in candidates]
    best = [float("inf")] * len(candidates)
    for _ in range(rounds):
        for i, (candidate, number) in enumerate(zip(candidates, numbers, strict=True)):
            best[i] = min(best[i], _batch_mean(candidate.fn, number))
    return [Measurement(c.name, b, c.vs) for c, b in zip(candidates, best, strict=True)]


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
