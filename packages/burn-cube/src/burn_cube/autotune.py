"""Autotuning: time candidate launch configurations on real buffers, keep the fastest.

Results are keyed by (name, device, shape bucket = size rounded up to a power of two) and
persisted as JSON in ``autotune.json`` next to the compile cache, so later processes skip the
search. Tuned functions run once per candidate (plus its timed runs): they must be idempotent.
"""

from __future__ import annotations

import functools
import json
import math
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from burn_cube.cache import atomic_write, cache_dir
from burn_cube.runtime.base import Runtime


def bucket(size: int) -> int:
    """The next power of two >= ``size`` (1 for empty sizes)."""
    return 1 << max(0, int(size) - 1).bit_length()


class Autotuner:
    """Times candidates and remembers the winner.

    Args:
        path: JSON file of results; defaults to ``<cache dir>/autotune.json``.
        repeats: Least timing rounds over the candidates (each one's best timing counts),
            after one warm-up run of each.
        seconds: Rounds go on past `repeats` until they took this long, up to `MAX_ROUNDS`:
            candidates of ~100 us then get dozens of timings, so one busy moment of the
            machine (another process's threads) does not decide for good.
    """

    def __init__(self, path: Path | None = None, repeats: int = 3,
                 seconds: float = 0.01) -> None:
        self.path = path or cache_dir() / "autotune.json"
        self.repeats = repeats
        self.seconds = seconds
        self.results: dict[str, Any] = self._read()

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text())
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            warnings.warn(f"burn-cube: ignoring unreadable autotune file {self.path}: {exc}",
                          RuntimeWarning, stacklevel=2)
            return {}
        return data if isinstance(data, dict) else {}

    def tune(self, name: str, device: str, size: int, candidates: Sequence[Any],
             run: Callable[[Any], None], sync: Callable[[], None] | None = None) -> Any:
        """The fastest candidate for this (name, device, size bucket).

        Args:
            name: What is tuned (kernel or function name).
            device: Device identity.
            size: Problem size (bucketed to the next power of two).
            candidates: JSON-serializable configurations.
            run: Runs one configuration (to completion where `sync` is None).
            sync: Waits for the device's queued work. Given, a timing after the first is
                `QUEUED` runs queued back to back, then one sync, per run: what a launch costs
                in a busy queue (the device's time for big work, the host's for small), where
                a synchronized run adds the host's work and the launch latency to each. A
                candidate whose runs take less than `QUEUED_SECONDS` is timed over as many
                runs as fill it (up to `MAX_QUEUED`), so the sync's latency does not blur
                close candidates; one whose runs take longer over one run.

        Every candidate runs once first (a warm-up: compiles), then the candidates are timed
        in rounds (`repeats` or more, see `seconds`), each round timing each candidate once
        (the first round over one run each, later ones over `_queued_runs`), and the best
        timing of each counts: a device whose clocks rise while the first candidates run
        favours none of them. From round `PRUNE_AFTER` on, a candidate whose runs take
        `PRUNE_SECONDS` or more and over `PRUNE_RATIO` times the best one's is timed no more,
        and the rounds end where one candidate is left: on a slow device (a CPU emulating a
        GPU: llvmpipe) an edited model's new product shapes were tuned over 110 runs of 11
        candidates, 12 of its first step's 14 seconds.

        Returns:
            The winning candidate (cached in memory and on disk).
        """
        key = f"{name}|{device}|{bucket(size)}"
        known = self.results.get(key)
        if known in candidates:
            return known
        for candidate in candidates:
            run(candidate)
        if sync is not None:
            sync()
        timings = [float("inf")] * len(candidates)
        queued = [1] * len(candidates)
        racing = list(range(len(candidates)))
        start = time.perf_counter()
        for rounds in range(1, MAX_ROUNDS + 1):
            for i in racing:
                timings[i] = min(timings[i], _timed(candidates[i], run, sync, queued[i]))
                queued[i] = _queued_runs(timings[i])
            if rounds >= PRUNE_AFTER:
                racing = _still_racing(racing, timings)
            if len(racing) == 1 or (rounds >= self.repeats
                                    and time.perf_counter() - start >= self.seconds):
                break
        winner = candidates[min(range(len(candidates)), key=timings.__getitem__)]
        self.results = {**self._read(), key: winner}
        atomic_write(self.path, json.dumps(self.results, indent=1, sort_keys=True).encode())
        return winner


#: Most timing rounds of one tuning.
MAX_ROUNDS = 50
#: Runs queued back to back in one timing of a tuner given `sync`, at least, for a candidate
#: whose runs take less than `QUEUED_SECONDS` (one that takes longer: one run a timing).
QUEUED = 3
#: Seconds of queued runs one timing covers where its candidate's runs are short: more runs,
#: up to `MAX_QUEUED`. (On an H100, the attention scores' product timed 114 us a run on
#: cuBLAS after dense copies and 159 us on a tile, 20 runs queued; three queued runs gave
#: 143-223 us and 173-185 us: close enough for the tile to win inside a training step. With
#: 9-13 queued runs: 157-166 and 161-166 us, and the tuner took cuBLAS.)
QUEUED_SECONDS = 0.002
MAX_QUEUED = 64


#: Timing rounds after which clearly slower candidates drop out (two: one slow first timing,
#: as while a GPU's clocks rise, drops none).
PRUNE_AFTER = 2
#: A candidate drops out where its best run takes this many times the best candidate's and at
#: least `PRUNE_SECONDS` (shorter ones stay: their runs cost little, and their timings are
#: the noisiest).
PRUNE_RATIO = 2.0
PRUNE_SECONDS = 0.001


def _queued_runs(seconds: float) -> int:
    """Runs one timing queues for a candidate whose best run took `seconds`: one from
    `QUEUED_SECONDS` on (a sync's latency is small beside it), else `QUEUED` or as many as
    fill `QUEUED_SECONDS` (at most `MAX_QUEUED`)."""
    if seconds >= QUEUED_SECONDS:
        return 1
    if seconds * QUEUED >= QUEUED_SECONDS:
        return QUEUED
    return min(MAX_QUEUED, math.ceil(QUEUED_SECONDS / max(seconds, 1e-9)))


def _still_racing(racing: list[int], timings: list[float]) -> list[int]:
    """The candidates of `racing` (indices into `timings`, their best seconds a run) not
    clearly slower than the best one (`PRUNE_RATIO`, `PRUNE_SECONDS`)."""
    bound = PRUNE_RATIO * min(timings[i] for i in racing)
    return [i for i in racing if timings[i] <= bound or timings[i] < PRUNE_SECONDS]


def _timed(candidate: Any, run: Callable[[Any], None], sync: Callable[[], None] | None,
           queued: int = QUEUED) -> float:
    """Seconds of one run of `candidate`: one synchronized run, or with `sync` the mean of
    `queued` queued runs and one sync."""
    start = time.perf_counter()
    if sync is None:
        run(candidate)
        return time.perf_counter() - start
    for _ in range(queued):
        run(candidate)
    sync()
    return (time.perf_counter() - start) / queued


@functools.cache
def default_tuner() -> Autotuner:
    """The process-wide autotuner."""
    return Autotuner()


def autotune(candidates: Sequence[dict[str, Any]],
             size: Callable[..., int]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator for a launch function ``fn(runtime, *args, **config)``.

    Args:
        candidates: Keyword configurations to try (e.g. ``{"cube_dim": 128}``).
        size: Maps ``(*args, **kwargs)`` (without the runtime) to the problem size.

    Returns:
        A decorator; the wrapped function picks the tuned configuration itself.
    """
    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def wrapper(rt: Runtime, *args: Any, **kwargs: Any) -> Any:
            def run(config: dict[str, Any]) -> None:
                fn(rt, *args, **kwargs, **config)
                rt.sync()

            config = default_tuner().tune(
                f"{fn.__module__}.{fn.__qualname__}", f"{rt.name}:{rt.properties.device}",
                size(*args, **kwargs), candidates, run)
            return fn(rt, *args, **kwargs, **config)

        return wrapper

    return decorate
