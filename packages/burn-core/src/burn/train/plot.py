"""Training curves: one PNG with a panel per metric and a line per split (matplotlib, Agg)."""

from __future__ import annotations

import logging
import math
import os
from pathlib import Path

from burn.record.files import atomic_path
from burn.train.summary import History

log = logging.getLogger("burn.train")


def plot_history(history: History, path: str | os.PathLike[str]) -> Path | None:
    """Draw `history` ({split: [row per epoch with "epoch" and metrics]}) to a PNG, written
    atomically.

    Args:
        history: the rows of each split.
        path: the PNG file.
    Returns:
        The path, or None when matplotlib is not installed (a notice is logged) or there is
        nothing to draw.
    """
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        log.info("matplotlib is not installed: no training-curve plot "
                 "(pip install 'burn-core[train]')")
        return None
    names = list(dict.fromkeys(k for rows in history.values() for row in rows
                               for k in row if k != "epoch"))
    if not names:
        return None
    cols = min(3, len(names))
    rows_n = math.ceil(len(names) / cols)
    fig = Figure(figsize=(4 * cols, 3 * rows_n), layout="constrained")
    FigureCanvasAgg(fig)
    for i, name in enumerate(names):
        ax = fig.add_subplot(rows_n, cols, i + 1)
        for split, rows in history.items():
            points = [(row["epoch"], row[name]) for row in rows if name in row]
            if points:
                ax.plot(*zip(*points, strict=True), marker="o", label=split)
        ax.set_title(name)
        ax.set_xlabel("epoch")
        ax.legend()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=100)
    return path
