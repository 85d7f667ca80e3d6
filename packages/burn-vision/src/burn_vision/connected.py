"""Connected-component labelling of bool images, with statistics (OpenCV's
connectedComponents / connectedComponentsWithStats, batched)."""

from __future__ import annotations

from burn import Tensor
from burn.dtype import Kind
from burn_vision._checks import choice, image_arg
from burn_vision.extension import vision_ops
from burn_vision.stats import ConnectedStats, ConnectedStatsOptions, Connectivity

_FORM = "bool [B, H, W]"


def connected_components(img: Tensor, connectivity: Connectivity = 8,
                         compact_labels: bool = True) -> Tensor:
    """Label the connected regions of true pixels.

    Args:
        img: bool [B, H, W].
        connectivity: 4 (edges) or 8 (edges and corners; OpenCV's default).
        compact_labels: number the components 1..n per image in raster order of their first
            pixel (scikit-image's order); False allows any distinct positive ids.
    Returns:
        int64 [B, H, W]; 0 marks the background.
    Raises:
        DTypeError: for a non-bool image. ShapeError: for a rank other than 3.
        ValueRangeError: for a connectivity other than 4 or 8.
    """
    op = "connected_components"
    img = _check(op, img, connectivity)
    return vision_ops(img.device).connected_components(img, connectivity, compact_labels)


def connected_components_with_stats(img: Tensor, connectivity: Connectivity = 8,
                                    options: ConnectedStatsOptions | None = None
                                    ) -> tuple[Tensor, ConnectedStats]:
    """Label the connected regions of true pixels and measure them.

    Args:
        img: bool [B, H, W].
        connectivity: 4 or 8.
        options: ConnectedStatsOptions (compact labels by default).
    Returns:
        (labels int64 [B, H, W], ConnectedStats with tensors [B, L + 1] indexed by label).
    Raises:
        DTypeError, ShapeError, ValueRangeError: as `connected_components`.
    """
    op = "connected_components_with_stats"
    img = _check(op, img, connectivity)
    compact = (options or ConnectedStatsOptions()).compact_labels
    return vision_ops(img.device).connected_components_with_stats(img, connectivity, compact)


def _check(op: str, img: object, connectivity: object) -> Tensor:
    x = image_arg(op, "img", img, (Kind.BOOL,), 3, 3, _FORM)
    choice(op, "connectivity", connectivity, (4, 8))
    return x
