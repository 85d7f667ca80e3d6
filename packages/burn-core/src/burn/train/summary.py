"""`TrainingSummary`: what `Learner.fit` returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from burn.nn.module import Module

History = dict[str, list[dict[str, float]]]


@dataclass
class TrainingSummary:
    """The outcome of a `Learner.fit` run.

    Args:
        model: the trained model, ready for inference (`model.valid()`: on the training
            device without autodiff, eval mode).
        history: per split, one row per epoch: {"epoch": n, metric: value, ...}.
        epochs: epochs completed (resumed ones included).
        elapsed: wall-clock seconds of this run.
        interrupted: the run was stopped by Ctrl-C (a checkpoint was saved).
        stopped_early: early stopping ended the run.
        checkpoint: the latest checkpoint directory (None without checkpointing).
        best_checkpoint: the best checkpoint directory (None when not tracked).
        plot: the training-curve PNG (None when not drawn).
    """

    model: Module
    history: History = field(default_factory=dict)
    epochs: int = 0
    elapsed: float = 0.0
    interrupted: bool = False
    stopped_early: bool = False
    checkpoint: Path | None = None
    best_checkpoint: Path | None = None
    plot: Path | None = None

    def final_metrics(self) -> dict[str, dict[str, float]]:
        """The metrics of the last completed epoch, per split."""
        return {split: {k: v for k, v in rows[-1].items() if k != "epoch"}
                for split, rows in self.history.items() if rows}

    def __str__(self) -> str:
        final = self.final_metrics()
        names = list(dict.fromkeys(name for values in final.values() for name in values))
        status = ("interrupted" if self.interrupted else
                  "stopped early" if self.stopped_early else "finished")
        lines = [f"Training {status}: {self.epochs} epochs in {self.elapsed:.1f}s"]
        if names:
            width = max(len(n) for n in names)
            lines.append(f"{'metric':<{width}}  " + "  ".join(f"{s:>12}" for s in final))
            for name in names:
                cells = (f"{values[name]:>12.4g}" if name in values else f"{'-':>12}"
                         for values in final.values())
                lines.append(f"{name:<{width}}  " + "  ".join(cells))
        for label, path in (("checkpoint", self.checkpoint), ("best", self.best_checkpoint),
                            ("plot", self.plot)):
            if path is not None:
                lines.append(f"{label}: {path}")
        return "\n".join(lines)
