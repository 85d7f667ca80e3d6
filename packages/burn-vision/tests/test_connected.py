"""Connected components against scikit-image (exact, compact raster labels) and OpenCV
(labels up to renumbering, statistics)."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
from conftest import check
from skimage.measure import label as sk_label

import burn
from burn.errors import DTypeError, ShapeError, ValueRangeError
from burn_vision import (
    ConnectedStatsOptions,
    connected_components,
    connected_components_with_stats,
)


def _images(rng: np.random.Generator) -> list[np.ndarray]:
    rnd = rng.random((3, 23, 31)) < 0.45
    snake = np.zeros((1, 9, 9), dtype=bool)
    snake[0, ::2, :] = True
    snake[0, 1::4, -1] = True
    snake[0, 3::4, 0] = True
    return [rnd, snake, np.ones((2, 4, 5), bool), np.zeros((2, 4, 5), bool),
            np.ones((1, 1, 1), bool), np.zeros((1, 1, 1), bool)]


@pytest.mark.parametrize("connectivity", [4, 8])
def test_labels_match_scikit_image(path: str, rng: np.random.Generator,
                                   connectivity: int) -> None:
    for img in _images(rng):
        labels = connected_components(burn.tensor(img), connectivity)
        expected = np.stack([sk_label(i, connectivity=connectivity // 4) for i in img])
        check(labels, expected.astype(np.int64), burn.int64)


@pytest.mark.parametrize("connectivity", [4, 8])
def test_stats_match_opencv(path: str, rng: np.random.Generator, connectivity: int) -> None:
    for img in _images(rng)[:3]:
        labels, stats = connected_components_with_stats(burn.tensor(img), connectivity)
        assert stats.area.dtype == burn.int64 and stats.max_label.shape == (img.shape[0],)
        ours = labels.to_numpy()
        for k in range(img.shape[0]):
            n, ref, st, _ = cv2.connectedComponentsWithStats(
                img[k].astype(np.uint8), connectivity=connectivity, ltype=cv2.CV_32S)
            assert int(stats.max_label[k].item()) == n - 1
            # the same partition: one OpenCV label per burn label and back.
            pairs = np.unique(np.stack([ours[k].ravel(), ref.ravel()]), axis=1)
            assert len(set(pairs[0])) == len(set(pairs[1])) == pairs.shape[1]
            fg = pairs[:, pairs[0] > 0]
            order = fg[1][np.argsort(fg[0])]  # OpenCV label of burn labels 1..n-1
            assert len(order) == n - 1
            area = stats.area.to_numpy()[k]
            np.testing.assert_array_equal(area[1:n], st[order, 4])
            assert area[0] == st[0, 4]
            fg = slice(1, n)
            for ours_stat, ref_stat in ((stats.left, st[order, 0]), (stats.top, st[order, 1]),
                                        (stats.right, st[order, 0] + st[order, 2] - 1),
                                        (stats.bottom, st[order, 1] + st[order, 3] - 1)):
                np.testing.assert_array_equal(ours_stat.to_numpy()[k, fg], ref_stat)


def test_non_compact_labels_partition_like_compact(path: str, rng: np.random.Generator) -> None:
    img = burn.tensor(rng.random((2, 12, 14)) < 0.5)
    loose, _ = connected_components_with_stats(img, 8, ConnectedStatsOptions(False))
    compact = connected_components(img, 8).to_numpy()
    assert loose.shape == compact.shape and loose.dtype == burn.int64
    for k in range(2):
        pairs = np.unique(np.stack([loose.to_numpy()[k].ravel(), compact[k].ravel()]), axis=1)
        assert len(set(pairs[0])) == len(set(pairs[1])) == pairs.shape[1] > 2


def test_absent_labels_and_empty_images(path: str) -> None:
    img = np.zeros((2, 3, 3), dtype=bool)
    img[0, 0, 0] = img[0, 2, 2] = True
    labels, stats = connected_components_with_stats(burn.tensor(img), 8)
    check(stats.area, np.array([[7, 1, 1], [9, 0, 0]]), burn.int64)
    check(stats.max_label, np.array([2, 0]), burn.int64)
    check(stats.right, np.array([[2, 0, 2], [2, 0, 0]]), burn.int64)
    for shape in [(0, 4, 4), (2, 0, 3), (1, 3, 0)]:
        empty = burn.tensor(np.zeros(shape, dtype=bool))
        check(connected_components(empty), np.zeros(shape, np.int64), burn.int64)
        _, s = connected_components_with_stats(empty)
        assert s.area.shape == (shape[0], 1) and s.max_label.shape == (shape[0],)


def test_non_contiguous_input(path: str, rng: np.random.Generator) -> None:
    base = rng.random((2, 20, 16)) < 0.5
    view = burn.tensor(base).permute(0, 2, 1)[:, ::2, :]
    expected = np.stack([sk_label(i, connectivity=2) for i in base.transpose(0, 2, 1)[:, ::2]])
    check(connected_components(view), expected.astype(np.int64), burn.int64)


def test_bad_input() -> None:
    with pytest.raises(DTypeError, match=r"img must be a bool tensor bool \[B, H, W\]"):
        connected_components(burn.zeros((1, 3, 3)))
    with pytest.raises(ShapeError, match=r"img must be shaped bool \[B, H, W\]"):
        connected_components(burn.zeros((3, 3), dtype=burn.bool_))
    with pytest.raises(ValueRangeError, match="connectivity"):
        connected_components_with_stats(burn.zeros((1, 3, 3), dtype=burn.bool_), 6)  # type: ignore[arg-type]
    with pytest.raises(DTypeError, match="burn.Tensor"):
        connected_components(np.zeros((1, 3, 3), bool))  # type: ignore[arg-type]
