"""The cube backends' vision ops (cpu, wgpu, cuda): burn-cube kernels for connected
components, erosion / dilation and filter2d; the defaults for the rest, for dtypes the kernels
do not take, and on decorated devices (Autodiff differentiates the default path)."""

from __future__ import annotations

from dataclasses import fields

import numpy as np

import burn
from burn import Tensor
from burn_vision.border import BorderMode
from burn_vision.cube import compaction, labelling
from burn_vision.cube.window import FILTER_DTYPES, MORPH_DTYPES, PASS_ROWS, window
from burn_vision.extension import VisionOps, register_vision_ops
from burn_vision.stats import ConnectedStats, Connectivity

#: the backends these ops register for
CUBE_BACKENDS = ("cpu", "wgpu", "cuda")


#: the kernels index with int32 (the cpu labelling's statistics table holds up to 2.5 entries
#: per pixel): larger tensors take the default path
MAX_ELEMENTS = 2**29


def _plain(x: Tensor) -> bool:
    """True when `x` is on an undecorated device (its primitive is a cube tensor) and small
    enough for int32 indexes."""
    return not x.device.decorators and x.numel() <= MAX_ELEMENTS


def _undecorate(img: Tensor) -> bool:
    """True when labelling `img` should leave its decorators (Autodiff, Fusion): labels and
    statistics are integers with no gradient, and the default path is far slower than the
    kernels (its scatters on one line of indices), so the image goes to the undecorated
    device and the results come back (a host round trip)."""
    return bool(img.device.decorators) and 0 < img.numel() <= MAX_ELEMENTS


class CubeVisionOps(VisionOps):
    """burn-cube kernels: sequential union-find labelling with statistics on the cpu, label
    equivalence on GPUs (then `compaction`'s kernels: compact labels, statistics by atomics);
    one window kernel family for filter2d and morphology."""

    def connected_components(self, img: Tensor, connectivity: Connectivity,
                             compact: bool) -> Tensor:
        if _undecorate(img):
            base = self.connected_components(img.to_device(img.device.base), connectivity,
                                             compact)
            return base.to_device(img.device)
        if not _plain(img) or img.numel() == 0:
            return super().connected_components(img, connectivity, compact)
        if img.device.name == "cpu":
            return labelling.label_cpu(img, connectivity, stats=False)[0]
        labels, _ = labelling.label_gpu(img, connectivity)
        if not compact:
            return labels.cast(burn.int64)
        return compaction.compact(labels.reshape(-1), img.shape)[0]

    def connected_components_with_stats(self, img: Tensor, connectivity: Connectivity,
                                        compact: bool) -> tuple[Tensor, ConnectedStats]:
        """Compact labels whatever `compact` asks (they are distinct positive ids too)."""
        if _undecorate(img):
            base, base_stats = self.connected_components_with_stats(
                img.to_device(img.device.base), connectivity, compact)
            return base.to_device(img.device), ConnectedStats(
                *(getattr(base_stats, f.name).to_device(img.device) for f in fields(base_stats)))
        if not _plain(img) or not img.numel():
            return super().connected_components_with_stats(img, connectivity, compact)
        if img.device.name == "cpu":
            labels, stats = labelling.label_cpu(img, connectivity, stats=True)
            assert stats is not None
            return labels, stats
        flat, _ = labelling.label_gpu(img, connectivity)
        return compaction.compact_with_stats(flat.reshape(-1), img.shape)

    def morph(self, x: Tensor, erode: bool, mask: np.ndarray, anchor: tuple[int, int],
              border: BorderMode, value: float | bool) -> Tensor:
        if not _plain(x) or x.dtype not in MORPH_DTYPES:
            return super().morph(x, erode, mask, anchor, border, value)
        reduction = "erode" if erode else "dilate"
        kh, kw = mask.shape
        if mask.all() and kh > PASS_ROWS and kw > 1:  # a tall rectangle: a row, a column pass
            rows = window(x, reduction, mask[:1], None, (anchor[0], 0), border, value)
            return window(rows, reduction, mask[:, :1], None, (0, anchor[1]), border, value)
        return window(x, reduction, mask, None, anchor, border, value)

    def filter2d(self, x: Tensor, kernel: Tensor, anchor: tuple[int, int], border: BorderMode,
                 value: float) -> Tensor:
        if not _plain(x) or x.dtype not in FILTER_DTYPES:
            return super().filter2d(x, kernel, anchor, border, value)
        k = kernel.to_numpy().astype(np.float64)
        if k.ndim == 2:
            return _filter_planes(x, k, anchor, border, value)
        # per channel (dim -3): one launch family per channel, each with its weights
        channels = [_filter_planes(x.narrow(x.ndim - 3, c, 1), k[c], anchor, border, value)
                    for c in range(k.shape[0])]
        return burn.cat(channels, x.ndim - 3)


def _filter_planes(x: Tensor, k: np.ndarray, anchor: tuple[int, int], border: BorderMode,
                   value: float) -> Tensor:
    """filter2d of every plane of `x` [..., H, W] with one kernel [kh, kw], skipping zero
    taps (as the NumPy path and OpenCV)."""
    mask = k != 0
    if not mask.any():
        return burn.zeros(x.shape, dtype=x.dtype, device=x.device)
    return window(x, "filter", mask, k, anchor, border, value)

for _name in CUBE_BACKENDS:
    register_vision_ops(_name, CubeVisionOps())
