"""Training curves: one PNG with a panel per metric, train and valid on one axis, a marker at
each metric's best epoch and a line at an early stop (matplotlib, Agg)."""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from burn.record.files import atomic_path
from burn.train.summary import History

if TYPE_CHECKING:
    from matplotlib.figure import Figure

log = logging.getLogger("burn.train")

#: Metrics left out of the plot: per-epoch machine load, noise rather than a training curve
#: (the metric logs keep them).
NOISY_METRICS = frozenset({"items_per_sec", "cpu_percent", "memory_mib"})
#: A lower-is-better axis switches to a log scale when its values span more than this ratio.
LOG_SCALE_RATIO = 10.0


def history_figure(history: History, *,
                   higher_is_better: Mapping[str, bool | None] | None = None,
                   stopped_epoch: int | None = None) -> Figure:
    """The training-curve figure of `history` ({split: [row per epoch with "epoch" and
    metrics]}).

    Each metric (except `NOISY_METRICS`) gets a panel with one line per split; a star marks
    its best epoch (on "valid" when present, else "train"; none for a metric whose direction
    is None, such as the learning rate); a lower-is-better metric whose
    positive values span more than a decade gets a log-scale axis; `stopped_epoch` draws a
    dashed "early stop" line on every panel.

    Args:
        history: the rows of each split.
        higher_is_better: per metric name, its direction, or None for no best (default:
            lower is better).
        stopped_epoch: the epoch early stopping ended the run at, or None.
    Returns:
        The figure (with an Agg canvas; no panel when there is nothing to draw).
    Raises:
        ImportError: when matplotlib is not installed.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    directions = higher_is_better or {}
    names = [name for name in dict.fromkeys(k for rows in history.values() for row in rows
                                             for k in row if k != "epoch")
             if name not in NOISY_METRICS]
    cols = max(1, min(3, len(names)))
    rows_n = max(1, math.ceil(len(names) / cols))
    fig = Figure(figsize=(4.5 * cols, 3.2 * rows_n), layout="constrained")
    FigureCanvasAgg(fig)
    for i, name in enumerate(names):
        ax = fig.add_subplot(rows_n, cols, i + 1)
        higher = directions.get(name, False)
        curves = {split: [(row["epoch"], row[name]) for row in rows if name in row]
                  for split, rows in history.items()}
        curves = {split: points for split, points in curves.items() if points}
        for split, points in curves.items():
            ax.plot(*zip(*points, strict=True), marker="o", markersize=3, label=split)
        best_split = "valid" if "valid" in curves else next(iter(curves))
        finite = [p for p in curves[best_split] if math.isfinite(p[1])]
        if finite and higher is not None:
            epoch, value = (max if higher else min)(finite, key=lambda p: p[1])
            ax.plot([epoch], [value], linestyle="none", marker="*", markersize=14,
                    color="tab:red", label=f"best {best_split} (epoch {epoch:g})")
        if stopped_epoch is not None:
            ax.axvline(stopped_epoch, color="gray", linestyle="--",
                       label=f"early stop (epoch {stopped_epoch})")
        values = [v for points in curves.values() for _, v in points if math.isfinite(v)]
        if (not higher and values and min(values) > 0
                and max(values) / min(values) > LOG_SCALE_RATIO):
            ax.set_yscale("log")
        ax.set_title(name)
        ax.set_xlabel("epoch")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.legend(fontsize="small")
    return fig


def plot_history(history: History, path: str | os.PathLike[str], *,
                 higher_is_better: Mapping[str, bool | None] | None = None,
                 stopped_epoch: int | None = None) -> Path | None:
    """Draw `history_figure(history, ...)` to a PNG, written atomically.

    Args:
        history: the rows of each split.
        path: the PNG file.
        higher_is_better: per metric name, its direction, or None for no best (default:
            lower is better).
        stopped_epoch: the epoch early stopping ended the run at, or None.
    Returns:
        The path, or None when matplotlib is not installed (a notice is logged) or there is
        nothing to draw.
    """
    try:
        fig = history_figure(history, higher_is_better=higher_is_better,
                             stopped_epoch=stopped_epoch)
    except ImportError:
        log.info("matplotlib is not installed: no training-curve plot "
                 "(pip install 'burn-core[train]')")
        return None
    if not fig.axes:
        return None
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=100)
    return path
