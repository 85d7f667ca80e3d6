"""Progress display: a rich live bar on a terminal, plain periodic lines otherwise (CI logs)."""

from __future__ import annotations

import sys
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, TextIO

MetricsFn = Callable[[], dict[str, float]]


def format_metrics(metrics: dict[str, float]) -> str:
    """`name=value` pairs, 4 significant digits."""
    return " ".join(f"{name}={value:.4g}" for name, value in metrics.items())


class ProgressDisplay(ABC):
    """Shows the progress of each epoch of each split."""

    @abstractmethod
    def start(self, split: str, epoch: int, epochs: int, total: int) -> None:
        """An epoch of `split` starts with `total` batches."""

    @abstractmethod
    def update(self, done: int, metrics: MetricsFn) -> None:
        """`done` batches are finished; `metrics()` gives the running values (call it only
        when displaying)."""

    @abstractmethod
    def end(self, metrics: dict[str, float]) -> None:
        """The epoch ended with `metrics`."""

    @abstractmethod
    def close(self) -> None:
        """Training ended (release the terminal)."""


class PlainProgress(ProgressDisplay):
    """One line every `interval` seconds and one per finished epoch.

    Args:
        interval: seconds between progress lines within an epoch.
        stream: where to write (stdout when None).
    """

    def __init__(self, interval: float = 10.0, stream: TextIO | None = None) -> None:
        self.interval = interval
        self.stream = stream
        self._label, self._total, self._start, self._last = "", 0, 0.0, 0.0

    def _print(self, text: str) -> None:
        print(text, file=self.stream or sys.stdout, flush=True)

    def start(self, split: str, epoch: int, epochs: int, total: int) -> None:
        self._label, self._total = f"[{split} {epoch}/{epochs}]", total
        self._start = self._last = time.perf_counter()

    def update(self, done: int, metrics: MetricsFn) -> None:
        now = time.perf_counter()
        if now - self._last >= self.interval:
            self._last = now
            self._print(f"{self._label} batch {done}/{self._total} {format_metrics(metrics())}")

    def end(self, metrics: dict[str, float]) -> None:
        elapsed = time.perf_counter() - self._start
        self._print(f"{self._label} done in {elapsed:.2f}s {format_metrics(metrics)}")

    def close(self) -> None:
        """Nothing to release."""


class RichProgress(ProgressDisplay):
    """A rich live progress bar per epoch and split (metrics refreshed 5 times a second)."""

    def __init__(self) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self._progress = Progress(TextColumn("{task.description}"), BarColumn(),
                                  MofNCompleteColumn(), TimeElapsedColumn(),
                                  TimeRemainingColumn(), TextColumn("{task.fields[metrics]}"))
        self._progress.start()
        self._task: Any = None
        self._total, self._last = 0, 0.0

    def start(self, split: str, epoch: int, epochs: int, total: int) -> None:
        self._task = self._progress.add_task(f"{split} {epoch}/{epochs}", total=total,
                                             metrics="")
        self._total, self._last = total, 0.0

    def update(self, done: int, metrics: MetricsFn) -> None:
        now = time.perf_counter()
        if now - self._last >= 0.2:
            self._last = now
            self._progress.update(self._task, completed=done,
                                  metrics=format_metrics(metrics()))

    def end(self, metrics: dict[str, float]) -> None:
        self._progress.update(self._task, completed=self._total,
                              metrics=format_metrics(metrics))

    def close(self) -> None:
        self._progress.stop()


def make_progress(progress: bool | ProgressDisplay) -> ProgressDisplay | None:
    """The display for the Learner's `progress` argument: rich when installed and stdout is a
    terminal, plain lines otherwise, None when disabled."""
    if isinstance(progress, ProgressDisplay):
        return progress
    if not progress:
        return None
    if sys.stdout.isatty():
        try:
            return RichProgress()
        except ImportError:
            pass
    return PlainProgress()
