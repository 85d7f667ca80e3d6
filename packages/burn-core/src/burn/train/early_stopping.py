"""`EarlyStopping`: stop training when a metric stops improving."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from burn.train.monitor import Mode, Monitor


@dataclass
class EarlyStopping:
    """Stop after `patience` epochs without an improvement of `metric` on `split` by more
    than `min_delta`. Epochs count from the first one seen until a value improves (Burn's:
    a metric NaN from the start, which never improves, stops training after `patience`
    epochs).

    Args:
        metric: the metric name.
        split: "valid" or "train".
        mode: "min" or "max".
        patience: epochs without improvement tolerated.
        min_delta: the smallest change that counts as an improvement.
    """

    metric: str = "loss"
    split: str = "valid"
    mode: Mode = "min"
    patience: int = 3
    min_delta: float = 0.0
    _monitor: Monitor = field(init=False, repr=False)
    _first_epoch: int | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.patience < 1:
            raise ValueError(f"EarlyStopping: patience must be >= 1, got {self.patience}")
        self._monitor = Monitor(self.metric, self.split, self.mode, self.min_delta)

    def should_stop(self, epoch: int, metrics: dict[str, dict[str, float]]) -> bool:
        """Record `epoch`'s metrics ({split: {name: value}}); True when training should stop."""
        self._monitor.update(epoch, metrics)
        if self._first_epoch is None:
            self._first_epoch = epoch
        best = self._monitor.best_epoch
        return epoch - (self._first_epoch if best is None else best) >= self.patience

    def state_dict(self) -> dict[str, Any]:
        """The monitor's state and the first epoch seen."""
        return {**self._monitor.state_dict(), "first_epoch": self._first_epoch}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Resume from `state_dict()`'s result."""
        self._monitor.load_state_dict(state)
        self._first_epoch = state.get("first_epoch")
