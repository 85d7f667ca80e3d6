"""The cube backends' vision ops (cpu, wgpu, cuda): burn-cube kernels for connected
components, erosion / dilation and filter2d; the defaults for the rest, for dtypes the kernels
do not take, and on decorated devices (Autodiff differentiates the default path)."""

from __future__ import annotations

import numpy as np

import burn
from burn import Tensor
from burn_vision.border import BorderMode
from burn_vision.cube import labelling
from burn_vision.cube.window import FILTER_DTYPES, MORPH_DTYPES, window
from burn_vision.default import connected as _connected
from burn_vision.extension import VisionOps, register_vision_ops
from burn_vision.stats import ConnectedStats, Connectivity

#: the backends these ops register for
CUBE_BACKENDS = ("cpu", "wgpu", "cuda")


def _plain(x: Tensor) -> bool:
    """True when `x` is on an undecorated device (its primitive is a cube tensor)."""
    return not x.device.decorators


class CubeVisionOps(VisionOps):
    """burn-cube kernels: sequential union-find labelling with statistics on the cpu, label
    equivalence on GPUs; one window kernel family for filter2d and morphology."""

    def connected_components(self, img: Tensor, connectivity: Connectivity,
                             compact: bool) -> Tensor:
        if not _plain(img) or img.numel() == 0:
            return super().connected_components(img, connectivity, compact)
        if img.device.name == "cpu":
            return labelling.label_cpu(img, connectivity, stats=False)[0]
        labels, _ = labelling.label_gpu(img, connectivity)
        return _connected.finish_labels(labels.cast("int64"), img, compact)

    def connected_components_with_stats(self, img: Tensor, connectivity: Connectivity,
                                        compact: bool) -> tuple[Tensor, ConnectedStats]:
        if _plain(img) and img.numel() and img.device.name == "cpu":
            labels, stats = labelling.label_cpu(img, connectivity, stats=True)
            assert stats is not None
            return labels, stats
        return super().connected_components_with_stats(img, connectivity, compact)

    def morph(self, x: Tensor, erode: bool, mask: np.ndarray, anchor: tuple[int, int],
              border: BorderMode, value: float | bool) -> Tensor:
        if not _plain(x) or x.dtype not in MORPH_DTYPES:
            return super().morph(x, erode, mask, anchor, border, value)
        return window(x, "erode" if erode else "dilate", mask, None, anchor, border, value)

    def filter2d(self, x: Tensor, kernel: Tensor, anchor: tuple[int, int], border: BorderMode,
                 value: float) -> Tensor:
        if not _plain(x) or x.dtype not in FILTER_DTYPES:
            return super().filter2d(x, kernel, anchor, border, value)
        mask = np.asarray(kernel.to_numpy().reshape((-1,) + kernel.shape[-2:]).any(axis=0))
        if not mask.any():  # no tap to sum (as the NumPy path, which skips zero taps)
            return burn.zeros(x.shape, dtype=x.dtype, device=x.device)
        return window(x, "filter", mask, kernel, anchor, border, value)


for _name in CUBE_BACKENDS:
    register_vision_ops(_name, CubeVisionOps())
