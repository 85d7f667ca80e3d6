"""Morphology against OpenCV on float, int and bool images, with borders, anchors and
iterations; gradients under autodiff."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
import torch
from conftest import CUBE_DEVICES, check

import burn
from burn.errors import ShapeError, ValueRangeError
from burn_vision import MORPH_OPS, erode, morphology, structuring_element

_CV_OPS = dict(zip(MORPH_OPS, (cv2.MORPH_ERODE, cv2.MORPH_DILATE, cv2.MORPH_OPEN,
                               cv2.MORPH_CLOSE, cv2.MORPH_GRADIENT, cv2.MORPH_TOPHAT,
                               cv2.MORPH_BLACKHAT), strict=True))
_BORDERS = {"constant": cv2.BORDER_CONSTANT, "replicate": cv2.BORDER_REPLICATE,
            "reflect": cv2.BORDER_REFLECT, "reflect101": cv2.BORDER_REFLECT_101}
_ODD = np.array([[1, 0, 0], [1, 1, 0], [0, 1, 1]], dtype=np.uint8)


@pytest.mark.parametrize("shape", ["rect", "ellipse", "cross"])
def test_structuring_elements_match_opencv(shape: str) -> None:
    code = {"rect": cv2.MORPH_RECT, "ellipse": cv2.MORPH_ELLIPSE, "cross": cv2.MORPH_CROSS}
    for size in [(1, 1), (3, 3), (5, 7), (7, 5), (4, 6), (2, 1), (9, 9)]:
        expected = cv2.getStructuringElement(code[shape], size[::-1]).astype(bool)
        check(structuring_element(shape, size), expected, burn.bool_)  # type: ignore[arg-type]


@pytest.mark.parametrize("op", MORPH_OPS)
@pytest.mark.parametrize("dtype", ["float32", "uint8", "bool"])
def test_ops_match_opencv(path: str, rng: np.random.Generator, op: str, dtype: str) -> None:
    img = rng.random((2, 11, 45))  # wide: whole lanes and a tail on the cube backends
    data = {"float32": img.astype(np.float32), "uint8": (img * 255).astype(np.uint8),
            "bool": img > 0.5}[dtype]
    for kernel, anchor, border, iterations in [
            (np.ones((3, 5), np.uint8), None, "constant", 1),
            (_ODD, (0, 1), "replicate", 2),
            (structuring_element("ellipse", 5).to_numpy().astype(np.uint8), None, "reflect101", 1),
            (np.ones((4, 2), np.uint8), (1, 3), "reflect", 1)]:
        # the cube backends hold no uint8: its values as int32 there
        held = data.astype(np.int32) if path in CUBE_DEVICES and dtype == "uint8" else data
        x = burn.tensor(held)
        out = morphology(x, op, kernel, anchor, iterations, border)  # type: ignore[arg-type]
        cv_anchor = (-1, -1) if anchor is None else anchor
        # int32 does not saturate: OpenCV on the values as float32 (exact) for it
        planes = data.astype(np.uint8) if dtype == "bool" else (
            held.astype(np.float32) if held.dtype == np.int32 else data)
        expected = np.stack([cv2.morphologyEx(p, _CV_OPS[op], kernel, anchor=cv_anchor,
                                              iterations=iterations,
                                              borderType=_BORDERS[border]) for p in planes])
        check(out, expected.astype(held.dtype), x.dtype)


def test_constant_border_value_and_int_dtypes(path: str, rng: np.random.Generator) -> None:
    data = rng.integers(-50, 50, (9, 8)).astype(np.int32)
    out = erode(burn.tensor(data), np.ones((3, 3)), border_value=-7)
    expected = cv2.erode(data.astype(np.float32), np.ones((3, 3)), borderValue=-7)
    check(out, expected.astype(np.int32), burn.int32)


def test_edge_cases(path: str) -> None:
    one = burn.tensor(np.array([[2.5]], dtype=np.float32))
    check(morphology(one, "gradient", np.ones((3, 3))), np.zeros((1, 1), np.float32),
          burn.float32)
    empty = burn.tensor(np.zeros((2, 0, 5), dtype=np.float32))
    check(erode(empty), np.zeros((2, 0, 5), np.float32), burn.float32)
    full = burn.tensor(np.ones((4, 4), dtype=bool))
    check(erode(full), np.ones((4, 4), bool), burn.bool_)
    check(morphology(full.logical_not(), "dilate"), np.zeros((4, 4), bool), burn.bool_)
    base = np.arange(60, dtype=np.float32).reshape(6, 10)
    view = burn.tensor(base).transpose(0, 1)[::2]
    check(erode(view), cv2.erode(np.ascontiguousarray(base.T[::2]), np.ones((3, 3))),
          burn.float32)


def test_gradient_matches_torch() -> None:
    data = np.random.default_rng(1).random((1, 1, 6, 7)).astype(np.float32)
    x = burn.tensor(data, device="numpy+autodiff").require_grad()
    y = morphology(x, "open", np.ones((3, 3)))
    grads = (y * y).sum().backward()
    t = torch.tensor(data, requires_grad=True)
    big = 1e30
    eroded = -torch.nn.functional.max_pool2d(torch.nn.functional.pad(-t, (1, 1, 1, 1),
                                                                     value=-big), 3, 1)
    opened = torch.nn.functional.max_pool2d(torch.nn.functional.pad(eroded, (1, 1, 1, 1),
                                                                    value=-big), 3, 1)
    (opened * opened).sum().backward()
    check(y, opened.detach().numpy(), burn.float32, 1e-6)
    check(x.grad(grads), t.grad.numpy(), burn.float32, 1e-5)


def test_bad_input() -> None:
    x = burn.zeros((5, 5))
    with pytest.raises(ValueRangeError, match="even kernel needs an explicit anchor"):
        erode(x, np.ones((2, 3)))
    with pytest.raises(ShapeError, match=r"kernel must be a non-empty 2-d mask \[kh, kw\]"):
        erode(x, np.ones((0, 3)))
    with pytest.raises(ShapeError, match="non-empty"):
        erode(x, np.zeros((3, 3)))
    with pytest.raises(ValueRangeError, match="anchor"):
        erode(x, np.ones((3, 3)), anchor=(3, 0))
    with pytest.raises(ValueRangeError, match="op must be one of"):
        morphology(x, "thin")  # type: ignore[arg-type]
    with pytest.raises(ValueRangeError, match="border"):
        erode(x, border="mirror")  # type: ignore[arg-type]
    with pytest.raises(ValueRangeError, match="iterations"):
        erode(x, iterations=0)
    with pytest.raises(ShapeError, match=r"\[\.\.\., H, W\]"):
        erode(burn.zeros((5,)))
