"""Vision ops as a backend extension (Burn's `VisionOps`): a class whose methods are the
default implementations, written with burn tensor ops so every backend runs them, and a
registry from backend name to a subclass that overrides some of them with a faster path
(the NumPy backend's host kernels now; burn-cube kernels for cpu / wgpu / cuda later).

Methods receive validated arguments; the public functions of the op modules check them."""

from __future__ import annotations

import numpy as np

from burn import Device, Tensor
from burn_vision.border import BorderMode
from burn_vision.default import connected as _connected
from burn_vision.default import filters as _filters
from burn_vision.default import morphology as _morphology
from burn_vision.default import nms as _nms
from burn_vision.stats import ConnectedStats, Connectivity


class VisionOps:
    """Default vision ops for any backend; subclass and `register_vision_ops` to override."""

    def connected_components(self, img: Tensor, connectivity: Connectivity,
                             compact: bool) -> Tensor:
        """Labels int64 [B, H, W] of bool `img` [B, H, W]; 0 is the background."""
        return _connected.connected_components(img, connectivity, compact)

    def connected_components_with_stats(self, img: Tensor, connectivity: Connectivity,
                                        compact: bool) -> tuple[Tensor, ConnectedStats]:
        """Labels as `connected_components`, and their statistics."""
        labels = self.connected_components(img, connectivity, compact)
        return labels, _connected.connected_stats(labels)

    def morph(self, x: Tensor, erode: bool, mask: np.ndarray, anchor: tuple[int, int],
              border: BorderMode, value: float | bool) -> Tensor:
        """One erosion or dilation of `x` [..., H, W] by the true positions of `mask`."""
        return _morphology.morph(x, erode, mask, anchor, border, value)

    def filter2d(self, x: Tensor, kernel: Tensor, anchor: tuple[int, int], border: BorderMode,
                 value: float) -> Tensor:
        """Correlation of float `x` [..., H, W] with `kernel` [kh, kw] or [C, kh, kw]."""
        return _filters.filter2d(x, kernel, anchor, border, value)

    def nms(self, boxes: Tensor, scores: Tensor, iou_threshold: float,
            score_threshold: float | None, max_output: int | None) -> Tensor:
        """Indices int64 [K] of the boxes kept by greedy NMS, by decreasing score."""
        return _nms.nms(boxes, scores, iou_threshold, score_threshold, max_output)


_REGISTRY: dict[str, VisionOps] = {}
_DEFAULT = VisionOps()


def register_vision_ops(backend: str, ops: VisionOps) -> None:
    """Use `ops` for tensors on devices of the backend named `backend` (e.g. "numpy", "cpu",
    "cuda"), with or without decorators; the ops decide what they can do under a decorator."""
    _REGISTRY[backend] = ops


def vision_ops(device: Device) -> VisionOps:
    """The vision ops of `device`'s backend: the registered ones, else the defaults."""
    return _REGISTRY.get(device.name, _DEFAULT)
