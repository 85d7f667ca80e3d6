"""The burn-cube kernels of the cube backends, called directly: both labelling algorithms on
every cube device against scikit-image, the window kernels' interior / border split, and every
kernel generated as CUDA C and compiled by nvcc (sm_90)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest
from conftest import CUBE_DEVICES, check
from skimage.measure import label as sk_label

import burn
from burn_vision import (
    connected_components,
    connected_components_with_stats,
    erode,
    filter2d,
)
from burn_vision.cube import compaction, labelling, window
from burn_vision.cube.ops import CubeVisionOps
from burn_vision.extension import VisionOps, vision_ops


def _snake(h: int, w: int) -> np.ndarray:
    """One path winding through every other row: the worst case of label propagation."""
    img = np.zeros((h, w), dtype=bool)
    img[::2] = True
    img[1::4, -1] = True
    img[3::4, 0] = True
    return img


@pytest.fixture(params=CUBE_DEVICES)
def device(request: pytest.FixtureRequest) -> burn.Device:
    return burn.Device(request.param)


def _same_partition(labels: np.ndarray, expected: np.ndarray) -> None:
    """Each label of one image is one label of the other (background 0 in both)."""
    assert ((labels == 0) == (expected == 0)).all()
    pairs = np.unique(np.stack([labels.ravel(), expected.ravel()]), axis=1)
    assert len(set(pairs[0])) == len(set(pairs[1])) == pairs.shape[1]


@pytest.mark.parametrize("connectivity", [4, 8])
def test_label_equivalence_matches_scikit_image(device: burn.Device, connectivity: int,
                                                rng: np.random.Generator) -> None:
    images = np.stack([rng.random((33, 47)) < 0.55, _snake(33, 47)])
    labels, scans = labelling.label_gpu(burn.tensor(images, device=device),
                                        connectivity)  # type: ignore[arg-type]
    assert labels.shape == images.shape and labels.dtype == burn.int32
    ours = labels.to_numpy()
    for k, img in enumerate(images):
        expected = sk_label(img, connectivity=connectivity // 4)
        _same_partition(ours[k], expected)
        # each component is named by its first raster index + 1
        first = {lab: i + 1 for i, lab in reversed(list(enumerate(expected.ravel()))) if lab}
        assert all(ours[k].ravel()[i - 1] == i for i in first.values())
    assert scans > 2  # the snake needs several rounds


def _opencv_stats(img: np.ndarray, labels: np.ndarray, connectivity: int, slots: int
                  ) -> np.ndarray:
    """OpenCV's statistics of one image as rows (area, left, top, right, bottom) indexed by
    `labels` (OpenCV numbers 8-connected components in its own block order), `slots` rows
    (zeros past the count, and bounds 0 where the area is 0)."""
    import cv2

    n, cv_labels, st, _ = cv2.connectedComponentsWithStats(
        img.astype(np.uint8), connectivity=connectivity, ltype=cv2.CV_32S)
    ours = np.zeros(n, np.int64)
    ours[cv_labels.ravel()] = labels.ravel()  # OpenCV's label -> ours
    out = np.zeros((slots, 5), np.int64)
    out[ours] = np.stack([st[:, 4], st[:, 0], st[:, 1], st[:, 0] + st[:, 2] - 1,
                          st[:, 1] + st[:, 3] - 1], 1)
    out[out[:, 0] == 0, 1:] = 0
    return out


@pytest.mark.parametrize("shape", [(4, 13, 45), (1, 300, 301), (2, 1, 70)])
@pytest.mark.parametrize("connectivity", [4, 8])
def test_gpu_compaction_and_statistics(device: burn.Device, shape: tuple[int, int, int],
                                       connectivity: int, rng: np.random.Generator) -> None:
    """The GPU labelling's compaction (prefix counts of one, two and three levels: up to
    GROUP**2 pixels and past it) and atomic statistics (rows shorter than a segment, and not a
    multiple of one) on every cube device: labels equal scikit-image's, statistics OpenCV's;
    an all-foreground image (background area 0), an empty one (no labels) and a snake (one
    component over every other row) in the batch."""
    images = rng.random(shape) < 0.5
    if shape[0] == 4:
        images[1], images[2], images[3] = True, False, _snake(*shape[1:])
    lab, _ = labelling.label_gpu(burn.tensor(images, device=device), connectivity)  # type: ignore[arg-type]
    segment = 7 if shape[0] == 4 else compaction.SEGMENT  # several segments a row
    labels, stats = compaction.compact_with_stats(lab.reshape(-1), shape, segment)
    expected = np.stack([sk_label(i, connectivity=connectivity // 4) for i in images])
    check(labels, expected.astype(np.int64), burn.int64)
    check(stats.max_label, expected.reshape(shape[0], -1).max(1), burn.int64)
    slots = int(expected.max()) + 1
    fields = [stats.area, stats.left, stats.top, stats.right, stats.bottom]
    assert all(f.shape == (shape[0], slots) and f.dtype == burn.int64 for f in fields)
    ours = np.stack([f.to_numpy() for f in fields], 2)
    for k, img in enumerate(images):
        np.testing.assert_array_equal(ours[k], _opencv_stats(img, expected[k], connectivity,
                                                             slots))
    lab, _ = labelling.label_gpu(burn.tensor(images, device=device), connectivity)  # type: ignore[arg-type]
    plain, counts = compaction.compact(lab.reshape(-1), shape)
    check(plain, expected.astype(np.int64), burn.int64)
    check(counts, expected.reshape(shape[0], -1).max(1), burn.int32)


@pytest.mark.parametrize("decorators", ["+autodiff", "+fusion", "+fusion+autodiff"])
def test_decorated_devices_label_with_the_kernels(device: burn.Device, decorators: str,
                                                  rng: np.random.Generator,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Under Autodiff / Fusion the labels and statistics (integers, no gradient) come from the
    undecorated device's kernels, never from the default path, and land on the decorated
    device."""
    def refuse(*_: object) -> None:
        raise AssertionError("the default path ran")

    monkeypatch.setattr(VisionOps, "connected_components", refuse)
    monkeypatch.setattr(VisionOps, "connected_components_with_stats", refuse)
    images = rng.random((2, 19, 23)) < 0.5
    dev = burn.Device(f"{device}{decorators}")
    img = burn.tensor(images, device=dev)
    for connectivity in (4, 8):
        expected = np.stack([sk_label(i, connectivity=connectivity // 4) for i in images])
        labels, stats = connected_components_with_stats(img, connectivity)  # type: ignore[arg-type]
        assert labels.device == dev and stats.area.device == dev
        check(labels, expected.astype(np.int64), burn.int64)
        check(stats.max_label, expected.reshape(2, -1).max(1), burn.int64)
        for k in range(2):
            np.testing.assert_array_equal(stats.area.to_numpy()[k],
                                          np.bincount(expected[k].ravel(),
                                                      minlength=stats.area.shape[1]))
        plain = connected_components(img, connectivity)  # type: ignore[arg-type]
        assert plain.device == dev
        check(plain, expected.astype(np.int64), burn.int64)


def test_sequential_labelling_on_cpu(rng: np.random.Generator) -> None:
    images = np.stack([rng.random((40, 37)) < 0.5, _snake(40, 37), np.ones((40, 37), bool)])
    assert isinstance(vision_ops(burn.Device("cpu")), CubeVisionOps)
    for connectivity in (4, 8):
        labels, stats = labelling.label_cpu(burn.tensor(images, device="cpu"), connectivity,
                                            stats=True)
        expected = np.stack([sk_label(i, connectivity=connectivity // 4) for i in images])
        check(labels, expected.astype(np.int64), burn.int64)
        assert stats is not None
        check(stats.max_label, expected.reshape(3, -1).max(1), burn.int64)
        area = stats.area.to_numpy()
        for k in range(3):
            np.testing.assert_array_equal(
                area[k, :expected[k].max() + 1], np.bincount(expected[k].ravel()))


def test_provisional_capacity_holds_the_worst_case() -> None:
    for h, w in [(1, 1), (5, 7), (6, 6)]:
        checker = (np.indices((h, w)).sum(0) % 2 == 0)
        isolated = np.zeros((h, w), bool)
        isolated[::2, ::2] = True
        for connectivity, img in ((4, checker), (8, isolated)):
            count = int(sk_label(img, connectivity=connectivity // 4).max())
            assert count + 1 <= labelling.provisional_capacity(h, w, connectivity)  # type: ignore[arg-type]


@pytest.mark.parametrize("width", [1, 3, 20, window.CUBE_DIM + 9])
def test_window_interior_and_border_strips(device: burn.Device, width: int,
                                           rng: np.random.Generator) -> None:
    """No interior, a narrow one, one past a cube; windows of one kernel and, taller than
    PASS_ROWS, of row passes over two strips (and a tall rectangle as two 1-d passes)."""
    import cv2

    x = rng.random((2, window.STRIP_ROWS + 9, width)).astype(np.float32)
    t = burn.tensor(x, device=device)
    for shape in [(5, 5), (window.PASS_ROWS + 2, 7)]:
        kernel = rng.standard_normal(shape).astype(np.float32)
        check(filter2d(t, kernel), np.stack([cv2.filter2D(p, -1, kernel) for p in x]),
              burn.float32, 1e-5)
    rows = window.PASS_ROWS + 2
    for element in (np.array([[0, 1, 0], [1, 1, 1], [1, 1, 0]], np.uint8),
                    cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (5, rows)),
                    np.ones((rows, 3), np.uint8)):
        check(erode(t, element, border="reflect"), np.stack([
            cv2.erode(p, element, borderType=cv2.BORDER_REFLECT) for p in x]), burn.float32)


def _kernels() -> list[tuple[str, object, tuple[object, ...]]]:
    """Every kernel the cube backends launch, with example arguments (specialized on the cpu
    runtime, as burn-cube's `Kernel.source` does)."""
    cpu = burn.Device("cpu")
    img = burn.tensor(np.zeros((1, 4, 4), bool), device=cpu)
    i32 = burn.tensor(np.zeros((1, 4, 4), np.int32), device=cpu)
    flat = burn.tensor(np.zeros(16, np.int32), device=cpu)
    one = burn.tensor(np.zeros(1, np.int32), device=cpu)
    parent = burn.tensor(np.zeros((1, 9), np.int32), device=cpu)
    i64 = burn.tensor(np.zeros((1, 4, 4), np.int64), device=cpu)
    table = burn.tensor(np.zeros((5, 1, 3), np.int64), device=cpu)
    a = [t._prim.array for t in (img, i32, flat, one, parent, i64, table)]
    out = [("cc_init", labelling._init_kernel(), (a[0], a[2], 16)),
           ("cc_jump", labelling._jump_kernel(), (a[2], 16))]
    for c in (4, 8):
        out += [(f"cc_equiv{c}", labelling._scan_equivalence_kernel(c), (a[2], a[3], 4, 4)),
                (f"cc_scan{c}", labelling._scan_kernel(c), (a[0], a[1], a[4], a[3], 4, 4))]
    out.append(("cc_relabel", labelling._relabel_kernel(), (a[1], a[4], a[5], a[6], 4, 4, 3)))
    for roots in (True, False):
        for rescan in (True, False):
            out.append((f"cc_group_{roots}_{rescan}", compaction._group_kernel(roots, rescan),
                        (a[2], a[3], 16, 1)))
    wide = i64.reshape(-1)._prim.array
    out += [("cc_relabel_gpu", compaction._relabel_kernel(), (a[2], wide, 16)),
            ("cc_stats_gpu", compaction._stats_kernel(compaction.SEGMENT),
             (a[2], wide, *[a[2]] * 5, 4, 4, 3, 1, 4))]
    taps = ((0, 0), (0, 1), (1, 0), (1, 1))
    for dtype, data in ((burn.float32, np.float32), (burn.int64, np.int64), (burn.bool_, bool)):
        x = burn.tensor(np.zeros((1, 4, 4), data), device=cpu)._prim.array
        for reduction in window.REDUCTIONS:
            if reduction == "filter" and dtype != burn.float32:
                continue
            weights = (1.0,) * len(taps) if reduction == "filter" else ()
            fill = False if dtype == burn.bool_ else 0
            for mapped, accumulate in ((True, False), (False, False), (False, True)):
                maps = (a[2], a[2]) if mapped else ()
                args = (x, x, *maps, 0, 0, 1, fill, 0, 0, *weights)
                out.append((f"{reduction}_{dtype.value}_{mapped}_{accumulate}",
                            window._kernel(reduction, dtype, taps, mapped, accumulate), args))
    return out


@pytest.mark.needs_nvcc
def test_kernels_compile_as_cuda(tmp_path: Path) -> None:
    for name, kernel, args in _kernels():
        src = kernel.source("cuda", kernel.kernel.cube_dim, *args)  # type: ignore[attr-defined]
        path = tmp_path / f"{name}.cu"
        path.write_text(src)
        proc = subprocess.run(["nvcc", "-c", "-arch=sm_90", "-std=c++17", "-o",
                               str(tmp_path / f"{name}.o"), str(path)],
                              capture_output=True, text=True)
        assert proc.returncode == 0, f"{name}: {proc.stderr[:2000]}"
