"""Records of connected-component statistics and their options."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from burn import Tensor

Connectivity = Literal[4, 8]


@dataclass(frozen=True)
class ConnectedStatsOptions:
    """Options of `connected_components_with_stats`.

    Args:
        compact_labels: number the components 1..n in raster order of their first pixel (as
            OpenCV and scikit-image); False lets a backend return any distinct positive ids
            (faster on GPUs; the NumPy backend returns compact labels either way).
    """

    compact_labels: bool = True


@dataclass(frozen=True)
class ConnectedStats:
    """Per-label statistics, int64 tensors [B, L + 1] indexed by label (L: the largest label
    of the batch); index 0 describes the background (pixels labelled 0), as OpenCV's stats.
    Bounds are inclusive pixel coordinates; a label absent from an image has area 0 and
    bounds 0.

    Attributes:
        area: pixels per label.
        left, top, right, bottom: bounding box (x min, y min, x max, y max).
        max_label: [B], the largest label of each image (0 when it has no foreground).
    """

    area: Tensor
    left: Tensor
    top: Tensor
    right: Tensor
    bottom: Tensor
    max_label: Tensor
