"""`RunningMeanStd`: running mean and variance (Chan et al.'s parallel update), for observation
and reward normalisation."""

from __future__ import annotations

from typing import Any

import numpy as np


class RunningMeanStd:
    """Mean and variance of every value seen so far, per element of `shape`.

    Args:
        shape: the shape of one sample.
    """

    def __init__(self, shape: tuple[int, ...]) -> None:
        self.mean = np.zeros(shape, np.float64)
        self.var = np.ones(shape, np.float64)
        self.count = 1e-4

    def update(self, batch: np.ndarray) -> None:
        """Add a batch of samples [n, *shape]."""
        batch_mean, batch_var, n = batch.mean(0), batch.var(0), batch.shape[0]
        delta = batch_mean - self.mean
        total = self.count + n
        self.mean = self.mean + delta * n / total
        self.var = (self.var * self.count + batch_var * n
                    + delta ** 2 * self.count * n / total) / total
        self.count = total

    def normalize(self, x: np.ndarray, clip: float = 10.0) -> np.ndarray:
        """(x - mean) / sqrt(var + 1e-8), clipped to [-clip, clip], as float32."""
        return np.clip((x - self.mean) / np.sqrt(self.var + 1e-8), -clip, clip).astype(np.float32)

    def state_dict(self) -> dict[str, Any]:
        """JSON-ready statistics."""
        return {"mean": self.mean.tolist(), "var": self.var.tolist(), "count": self.count}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore `state_dict()`'s result."""
        self.mean = np.asarray(state["mean"], np.float64)
        self.var = np.asarray(state["var"], np.float64)
        self.count = float(state["count"])
