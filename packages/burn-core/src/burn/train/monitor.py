"""`Monitor`: tracks the best value of one metric of one split (for best checkpoints and early
stopping)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

Mode = Literal["min", "max"]


@dataclass
class Monitor:
    """The best value seen of `metric` on `split`.

    Args:
        metric: the metric name (e.g. "loss").
        split: "train" or "valid".
        mode: "min" when lower is better, "max" when higher is better.
        min_delta: how much better than the best a value must be to count as an improvement.
    """

    metric: str = "loss"
    split: str = "valid"
    mode: Mode = "min"
    min_delta: float = 0.0
    best: float | None = field(default=None, init=False)
    best_epoch: int | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        if self.mode not in ("min", "max"):
            raise ValueError(f"Monitor: mode must be 'min' or 'max', got {self.mode!r}")
        if self.min_delta < 0:
            raise ValueError(f"Monitor: min_delta must be >= 0, got {self.min_delta}")

    def read(self, metrics: dict[str, dict[str, float]]) -> float:
        """The monitored value in `metrics` ({split: {name: value}}).

        Raises:
            KeyError: when the split or the metric is missing.
        """
        try:
            return metrics[self.split][self.metric]
        except KeyError:
            raise KeyError(f"Monitor: no metric {self.metric!r} on split {self.split!r}; "
                           f"have { {s: sorted(m) for s, m in metrics.items()} }") from None

    def update(self, epoch: int, metrics: dict[str, dict[str, float]]) -> bool:
        """Record `epoch`'s metrics; True when the monitored value improved on the best."""
        value = self.read(metrics)
        if math.isnan(value):
            return False
        sign = 1.0 if self.mode == "min" else -1.0
        if self.best is not None and sign * (self.best - value) <= self.min_delta:
            return False
        self.best, self.best_epoch = value, epoch
        return True

    def state_dict(self) -> dict[str, Any]:
        """The best value and its epoch."""
        return {"best": self.best, "best_epoch": self.best_epoch}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Resume from `state_dict()`'s result."""
        self.best, self.best_epoch = state["best"], state["best_epoch"]
