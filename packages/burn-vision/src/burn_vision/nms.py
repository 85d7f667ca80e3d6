"""Non-maximum suppression (torchvision.ops.nms / batched_nms, OpenCV's NMSBoxes)."""

from __future__ import annotations

import burn
from burn import Tensor
from burn.dtype import Kind
from burn.errors import ShapeError, ValueRangeError
from burn_vision._checks import image_arg, positive_int
from burn_vision.extension import vision_ops


def nms(boxes: Tensor, scores: Tensor, iou_threshold: float,
        score_threshold: float | None = None, max_output: int | None = None) -> Tensor:
    """Greedy NMS: visit boxes by decreasing score, keep one unless it overlaps a kept box
    with IoU > `iou_threshold` (as torchvision: the IoU computed in the boxes' dtype, compared
    with the threshold as a double, so an IoU of 1/3 rounded up in float32 exceeds 1/3).

    Args:
        boxes: float [N, 4] as (x1, y1, x2, y2) with x1 <= x2 and y1 <= y2.
        scores: float [N].
        iou_threshold: in [0, 1].
        score_threshold: drop boxes whose score is not above it first (OpenCV's
            score_threshold); None keeps all (torchvision).
        max_output: keep at most this many (the best); None for all.
    Returns:
        int64 [K], indices of the kept boxes by decreasing score; equal scores keep the lower
        index first (a stable order, where torchvision leaves ties unspecified).
    Raises:
        DTypeError: for non-float boxes or scores. ShapeError: for boxes not [N, 4] or scores
            not [N]. ValueRangeError: for x2 < x1 or y2 < y1, an iou_threshold outside [0, 1]
            or max_output < 1.
    """
    boxes, scores = _check("nms", boxes, scores, iou_threshold, max_output)
    return vision_ops(boxes.device).nms(boxes, scores, iou_threshold, score_threshold,
                                        max_output)


def batched_nms(boxes: Tensor, scores: Tensor, classes: Tensor, iou_threshold: float,
                score_threshold: float | None = None, max_output: int | None = None) -> Tensor:
    """NMS within each class independently (torchvision.ops.batched_nms): boxes of different
    classes never suppress each other.

    Args:
        boxes, scores, iou_threshold, score_threshold, max_output: as `nms`.
        classes: int [N], the class of each box.
    Returns:
        int64 [K], kept indices by decreasing score.
    Raises:
        as `nms`; ShapeError / DTypeError for classes not int [N].
    """
    op = "batched_nms"
    boxes, scores = _check(op, boxes, scores, iou_threshold, max_output)
    classes = image_arg(op, "classes", classes, (Kind.INT,), 1, 1, "int [N]")
    if classes.shape[0] != boxes.shape[0]:
        raise ShapeError(op, "classes must be int [N] for boxes [N, 4]", classes=classes.shape,
                         boxes=boxes.shape)
    if boxes.shape[0] == 0:
        return burn.zeros((0,), dtype=burn.int64, device=boxes.device)
    # shift each class to its own region of the plane so that classes never overlap.
    extent = float(boxes.abs().max().item()) * 2 + 1
    shift = classes.to_device(boxes.device).cast(boxes.dtype).reshape(-1, 1) * extent
    return vision_ops(boxes.device).nms(boxes + shift, scores, iou_threshold, score_threshold,
                                        max_output)


def _check(op: str, boxes: object, scores: object, iou_threshold: float,
           max_output: int | None) -> tuple[Tensor, Tensor]:
    b = image_arg(op, "boxes", boxes, (Kind.FLOAT,), 2, 2, "float [N, 4] (x1, y1, x2, y2)")
    if b.shape[1] != 4:
        raise ShapeError(op, "boxes must be float [N, 4] (x1, y1, x2, y2)", boxes=b.shape)
    s = image_arg(op, "scores", scores, (Kind.FLOAT,), 1, 1, "float [N]")
    if s.shape[0] != b.shape[0]:
        raise ShapeError(op, "scores must be float [N] for boxes [N, 4]", scores=s.shape,
                         boxes=b.shape)
    s = s.to_device(b.device)
    if not 0.0 <= iou_threshold <= 1.0:
        raise ValueRangeError(op, "iou_threshold must be in [0, 1]", iou_threshold=iou_threshold)
    if max_output is not None:
        positive_int(op, "max_output", max_output)
    if b.shape[0] and bool(((b[:, 2] < b[:, 0]).logical_or(b[:, 3] < b[:, 1])).any().item()):
        raise ValueRangeError(op, "boxes must have x1 <= x2 and y1 <= y2 (x1, y1, x2, y2)",
                              boxes=b.shape)
    return b, s
