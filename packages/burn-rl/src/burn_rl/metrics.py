"""RL metrics (episode return and length, exploration rate, loss, steps per second), shown by
burn.train's progress display and written by its `MetricLogger`, one row per log interval."""

from __future__ import annotations

import math
import os
import time
from collections import deque
from pathlib import Path

import numpy as np

from burn.train.logger import MetricLogger
from burn.train.plot import plot_history
from burn.train.progress import ProgressDisplay, make_progress


class EpisodeTracker:
    """Running return and length of each of `num_envs` environments' current episode.

    Args:
        num_envs: environments stepped together.
    """

    def __init__(self, num_envs: int) -> None:
        self._return = np.zeros(num_envs, np.float64)
        self._length = np.zeros(num_envs, np.int64)

    def step(self, reward: np.ndarray, done: np.ndarray) -> list[tuple[float, int]]:
        """Add one step; returns (return, length) of every episode that ended in it."""
        self._return += reward
        self._length += 1
        ended = [(float(self._return[i]), int(self._length[i])) for i in np.flatnonzero(done)]
        self._return[done] = 0.0
        self._length[done] = 0
        return ended


class RlMetrics:
    """Collects a run's metrics between log rows.

    Episode return and length are means over the last `window` finished episodes; loss and
    the other recorded values are means since the previous row; steps_per_second counts
    environment steps since the previous row.

    Args:
        window: finished episodes averaged for the return and length.
    """

    def __init__(self, window: int = 100) -> None:
        self.returns: deque[float] = deque(maxlen=window)
        self.lengths: deque[int] = deque(maxlen=window)
        self.episodes = 0
        self._values: dict[str, list[float]] = {}
        self._since = time.perf_counter()
        self._steps_since = 0

    def episodes_done(self, ended: list[tuple[float, int]]) -> None:
        """Add finished episodes' (return, length)."""
        for ret, length in ended:
            self.returns.append(ret)
            self.lengths.append(length)
        self.episodes += len(ended)

    def record(self, name: str, value: float) -> None:
        """Add a value (loss, exploration rate, ...) averaged into the next row."""
        self._values.setdefault(name, []).append(value)

    def steps(self, n: int) -> None:
        """`n` more environment steps were taken."""
        self._steps_since += n

    def mean_return(self) -> float:
        """Mean return of the last `window` episodes (nan before any)."""
        return float(np.mean(self.returns)) if self.returns else math.nan

    def row(self, reset: bool = True) -> dict[str, float]:
        """The current values; `reset` starts the next row's averages."""
        elapsed = time.perf_counter() - self._since
        row = {"episode_return": self.mean_return(),
               "episode_length": float(np.mean(self.lengths)) if self.lengths else math.nan,
               **{k: float(np.mean(v)) for k, v in self._values.items()},
               "steps_per_second": self._steps_since / elapsed if elapsed > 0 else math.nan}
        if reset:
            self._values = {}
            self._since, self._steps_since = time.perf_counter(), 0
        return row


#: The direction of each RL metric in the learning-curve plot (None: no best marker).
DIRECTIONS: dict[str, bool | None] = {
    "episode_return": True, "episode_length": None, "loss": False, "exploration": None,
    "steps_per_second": None, "env_steps": None, "entropy": None, "approx_kl": None}


class RlLog:
    """Shows and logs `RlMetrics` every `interval` environment steps through burn.train's
    progress display and metric logger, and draws the learning curve at the end.

    Args:
        metrics: the metrics collected by the training loop.
        total_steps: environment steps of the whole run.
        interval: environment steps per log row.
        artifact_dir: where `logs/train.csv` and `learning_curve.png` go (None: nowhere).
        progress: as the Learner's `progress` (True: rich or plain lines, False: none).
    """

    def __init__(self, metrics: RlMetrics, total_steps: int, interval: int,
                 artifact_dir: str | os.PathLike[str] | None = None,
                 progress: bool | ProgressDisplay = False) -> None:
        self.metrics = metrics
        self.interval = max(1, interval)
        self.rows_total = max(1, math.ceil(total_steps / self.interval))
        self.artifact_dir = Path(artifact_dir) if artifact_dir is not None else None
        self.logger = (MetricLogger(self.artifact_dir / "logs")
                       if self.artifact_dir is not None else None)
        self.display = make_progress(progress)
        self.history: list[dict[str, float]] = []
        self._row = 0
        self._started = False

    def tick(self, env_steps: int) -> None:
        """Called after every environment step: updates the display (rows are written by
        `write`, at the end of each interval)."""
        if self.display is None:
            return
        if not self._started:
            self.display.start("train", self._row + 1, self.rows_total, self.interval)
            self._started = True
        self.display.update(env_steps - self._row * self.interval,
                            lambda: self.metrics.row(reset=False))

    def write(self, env_steps: int, extra: dict[str, float] | None = None) -> dict[str, float]:
        """Write a row now (the end of an interval, or of the run)."""
        values = {"env_steps": float(env_steps), **self.metrics.row(), **(extra or {})}
        self._row = env_steps // self.interval
        self.history.append({"epoch": float(len(self.history) + 1), **values})
        if self.logger is not None:
            self.logger.log("train", len(self.history), values)
        if self.display is not None:
            self.display.end(values)
            self._started = False
        return values

    def close(self, plot: bool = True) -> Path | None:
        """Release the display; draw `learning_curve.png` (when there is an artifact dir).

        Returns:
            The PNG's path, or None when none was drawn.
        """
        if self.display is not None:
            self.display.close()
        if not plot or self.artifact_dir is None or not self.history:
            return None
        return plot_history({"train": self.history}, self.artifact_dir / "learning_curve.png",
                            higher_is_better=DIRECTIONS)
