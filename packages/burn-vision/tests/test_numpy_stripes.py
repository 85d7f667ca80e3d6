"""The NumPy fast paths run row stripes of a padded copy: with stripes of one or two rows, every
stripe meets a border case (constant rows, reflected rows, wrapped columns); results must still
equal OpenCV on batched images."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
from conftest import check
from test_filters import _BORDERS, _cv_filter

import burn
import burn_vision.numpy_stripes as stripes
from burn_vision import dilate, erode, filter2d


@pytest.fixture
def tiny_stripes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Stripes of max(1, 200 // (planes * padded width)) rows."""
    monkeypatch.setattr(stripes, "STRIPE_ELEMENTS", 200)


@pytest.mark.parametrize("border", list(_BORDERS))
def test_filter2d_in_stripes_matches_opencv(tiny_stripes: None, rng: np.random.Generator,
                                            border: str) -> None:
    x = rng.random((2, 17, 23)).astype(np.float32)
    kernel = rng.standard_normal((5, 5)).astype(np.float32)
    kernel[1, 2] = 0.0
    out = filter2d(burn.tensor(x), kernel, (1, 3), border)  # type: ignore[arg-type]
    expected = np.stack([_cv_filter(p, kernel, (1, 3), border) for p in x])
    check(out, expected, burn.float32, 1e-5)


def test_depthwise_filter2d_in_stripes(tiny_stripes: None, rng: np.random.Generator) -> None:
    x = rng.random((3, 11, 9)).astype(np.float64)
    kernels = rng.standard_normal((3, 3, 5))
    out = filter2d(burn.tensor(x), kernels, border="replicate")
    expected = np.stack([cv2.filter2D(x[c], -1, kernels[c], borderType=cv2.BORDER_REPLICATE)
                         for c in range(3)])
    check(out, expected, burn.float64, 1e-12)


@pytest.mark.parametrize("border", ["constant", "replicate", "reflect", "reflect101"])
@pytest.mark.parametrize("dtype", [np.float32, np.uint8])
def test_morphology_in_stripes_matches_opencv(tiny_stripes: None, rng: np.random.Generator,
                                              border: str, dtype: type) -> None:
    x = (rng.random((2, 15, 13)) * 200).astype(dtype)
    rect = np.ones((3, 5), np.uint8)
    cross = cv2.getStructuringElement(cv2.MORPH_CROSS, (5, 5))
    for op, cv_op, kernel, anchor in [(erode, cv2.erode, rect, (4, 0)),
                                      (dilate, cv2.dilate, cross, (2, 2))]:
        out = op(burn.tensor(x), kernel, anchor, border=border)  # type: ignore[operator]
        expected = np.stack([cv_op(p, kernel, anchor=anchor, borderType=_BORDERS[border])
                             for p in x])
        check(out, expected, burn.tensor(x).dtype)
