"""NMS against torchvision.ops.nms / batched_nms, a greedy reference written with torch ops
(torchvision's semantics, with a stable order for equal scores) and OpenCV's NMSBoxes."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
import torch
import torchvision.ops
from conftest import check

import burn
from burn.errors import DTypeError, ShapeError, ValueRangeError
from burn_vision import batched_nms, nms


def _reference(boxes: np.ndarray, scores: np.ndarray, threshold: float) -> np.ndarray:
    """Greedy NMS with torch ops: by decreasing score (stable), drop boxes with IoU >
    threshold against a kept one."""
    b, s = torch.from_numpy(boxes), torch.from_numpy(scores)
    area = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
    removed = torch.zeros(len(b), dtype=torch.bool)
    keep = []
    for i in torch.argsort(s, descending=True, stable=True).tolist():
        if removed[i]:
            continue
        keep.append(i)
        lo, hi = torch.maximum(b[i, :2], b[:, :2]), torch.minimum(b[i, 2:], b[:, 2:])
        inter = (hi - lo).clamp(min=0).prod(1)
        union = area[i] + area - inter
        removed |= torch.where(union > 0, inter / torch.where(union > 0, union, 1), 0) > threshold
    return np.asarray(keep, dtype=np.int64)


def _boxes(rng: np.random.Generator, n: int, ties: bool = False) -> tuple[np.ndarray, np.ndarray]:
    xy = rng.random((n, 2)) * 100
    wh = rng.random((n, 2)) * 30
    boxes = np.concatenate([xy, xy + wh], 1).astype(np.float32)
    scores = rng.random(n).astype(np.float32)
    return boxes, (np.round(scores * 4) / 4 if ties else scores).astype(np.float32)


@pytest.mark.parametrize("ties", [False, True])
def test_matches_greedy_reference(path: str, rng: np.random.Generator, ties: bool) -> None:
    for n, threshold in [(1, 0.5), (7, 0.3), (300, 0.5), (300, 0.0), (300, 1.0)]:
        boxes, scores = _boxes(rng, n, ties)
        check(nms(burn.tensor(boxes), burn.tensor(scores), threshold),
              _reference(boxes, scores, threshold), burn.int64)


@pytest.mark.parametrize("threshold", [0.0, 0.3, 0.5, 0.7, 1.0])
def test_matches_torchvision(path: str, rng: np.random.Generator, threshold: float) -> None:
    # distinct scores: torchvision leaves the order of equal scores unspecified
    for n in (1, 20, 500):
        boxes, scores = _boxes(rng, n)
        expected = torchvision.ops.nms(torch.from_numpy(boxes), torch.from_numpy(scores),
                                       threshold).numpy()
        check(nms(burn.tensor(boxes), burn.tensor(scores), threshold), expected, burn.int64)


def test_integer_grid_boxes_match_torchvision(path: str, rng: np.random.Generator) -> None:
    # boxes on a coarse grid overlap with IoUs such as 3/10 and 1/3 whose float32 rounds
    # above the threshold's value: torchvision compares them with the threshold as a double
    xy = rng.integers(0, 6, (300, 2))
    boxes = np.concatenate([xy, xy + rng.integers(0, 4, (300, 2))], 1).astype(np.float32)
    scores = rng.permutation(300).astype(np.float32) / 300
    for threshold in (0.3, 1 / 3, 0.5, 0.7):
        expected = torchvision.ops.nms(torch.from_numpy(boxes), torch.from_numpy(scores),
                                       threshold).numpy()
        check(nms(burn.tensor(boxes), burn.tensor(scores), threshold), expected, burn.int64)


def test_batched_matches_torchvision(path: str, rng: np.random.Generator) -> None:
    boxes, scores = _boxes(rng, 400)
    classes = rng.integers(0, 5, 400)
    expected = torchvision.ops.batched_nms(torch.from_numpy(boxes), torch.from_numpy(scores),
                                           torch.from_numpy(classes), 0.4).numpy()
    out = batched_nms(burn.tensor(boxes), burn.tensor(scores), burn.tensor(classes), 0.4)
    check(out, expected, burn.int64)


def test_matches_opencv_nmsboxes(path: str, rng: np.random.Generator) -> None:
    boxes, scores = _boxes(rng, 400)
    xywh = np.concatenate([boxes[:, :2], boxes[:, 2:] - boxes[:, :2]], 1)
    expected = np.asarray(cv2.dnn.NMSBoxes(xywh.tolist(), scores.tolist(), 0.3, 0.45),
                          dtype=np.int64).reshape(-1)
    out = nms(burn.tensor(boxes), burn.tensor(scores), 0.45, score_threshold=0.3)
    check(out, expected, burn.int64)
    check(nms(burn.tensor(boxes), burn.tensor(scores), 0.45, 0.3, max_output=5), expected[:5],
          burn.int64)


def test_identical_and_degenerate_boxes(path: str) -> None:
    boxes = np.array([[0, 0, 10, 10]] * 3 + [[5, 5, 5, 5], [5, 5, 5, 5]], dtype=np.float32)
    scores = np.array([0.5, 0.9, 0.9, 0.1, 0.2], dtype=np.float32)
    # equal scores keep the lower index; zero-area boxes never overlap anything.
    check(nms(burn.tensor(boxes), burn.tensor(scores), 0.5), np.array([1, 4, 3]), burn.int64)
    check(nms(burn.zeros((0, 4)), burn.zeros((0,)), 0.5), np.zeros(0, np.int64), burn.int64)
    check(nms(burn.tensor(boxes), burn.tensor(scores), 0.5, score_threshold=1.0),
          np.zeros(0, np.int64), burn.int64)


def test_non_contiguous_input(path: str, rng: np.random.Generator) -> None:
    boxes, scores = _boxes(rng, 50)
    view = burn.tensor(np.ascontiguousarray(boxes.T)).transpose(0, 1)
    check(nms(view, burn.tensor(scores), 0.4), _reference(boxes, scores, 0.4), burn.int64)


def test_batched_keeps_classes_apart(path: str, rng: np.random.Generator) -> None:
    boxes, scores = _boxes(rng, 200)
    classes = rng.integers(0, 3, 200)
    out = batched_nms(burn.tensor(boxes), burn.tensor(scores), burn.tensor(classes), 0.5)
    kept = []
    for c in range(3):
        idx = np.flatnonzero(classes == c)
        kept.extend(idx[_reference(boxes[idx], scores[idx], 0.5)])
    expected = np.asarray(sorted(kept, key=lambda i: (-scores[i], i)), dtype=np.int64)
    check(out, expected, burn.int64)


def test_bad_input() -> None:
    boxes, scores = burn.zeros((3, 4)), burn.zeros((3,))
    with pytest.raises(ShapeError, match=r"boxes must be float \[N, 4\] \(x1, y1, x2, y2\)"):
        nms(burn.zeros((3, 5)), scores, 0.5)
    with pytest.raises(DTypeError, match="boxes must be a float tensor"):
        nms(burn.zeros((3, 4), dtype=burn.int32), scores, 0.5)
    with pytest.raises(ShapeError, match=r"scores must be float \[N\]"):
        nms(boxes, burn.zeros((4,)), 0.5)
    with pytest.raises(ValueRangeError, match="x1 <= x2 and y1 <= y2"):
        nms(burn.tensor([[5.0, 0, 1, 1]]), burn.zeros((1,)), 0.5)
    with pytest.raises(ValueRangeError, match="iou_threshold"):
        nms(boxes, scores, 1.5)
    with pytest.raises(ValueRangeError, match="max_output"):
        nms(boxes, scores, 0.5, max_output=0)
    with pytest.raises(ShapeError, match=r"classes must be int \[N\]"):
        batched_nms(boxes, scores, burn.zeros((2,), dtype=burn.int64), 0.5)
