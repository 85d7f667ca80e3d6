"""filter2d, blurs and Sobel against OpenCV (every border), the blur augmentation, and
gradients under autodiff against torch's conv2d."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
import torch
from conftest import check

import burn
from burn.errors import DTypeError, ShapeError, ValueRangeError
from burn_vision import RandomGaussianBlur, box_blur, filter2d, gaussian_blur, sobel

_BORDERS = {"constant": cv2.BORDER_CONSTANT, "replicate": cv2.BORDER_REPLICATE,
            "reflect": cv2.BORDER_REFLECT, "reflect101": cv2.BORDER_REFLECT_101,
            "wrap": cv2.BORDER_WRAP}


def _cv_filter(plane: np.ndarray, kernel: np.ndarray, anchor: tuple[int, int],
               border: str) -> np.ndarray:
    """OpenCV's filter2D; for "wrap" (which filter2D refuses) copyMakeBorder, then the valid
    part of filter2D."""
    kh, kw = kernel.shape
    if border != "wrap":
        return cv2.filter2D(plane, -1, kernel, anchor=anchor, borderType=_BORDERS[border])
    ax, ay = anchor
    padded = cv2.copyMakeBorder(plane, ay, kh - 1 - ay, ax, kw - 1 - ax, cv2.BORDER_WRAP)
    full = cv2.filter2D(padded, -1, kernel, anchor=(0, 0), borderType=cv2.BORDER_CONSTANT)
    return full[:plane.shape[0], :plane.shape[1]]


@pytest.mark.parametrize("border", list(_BORDERS))
def test_filter2d_matches_opencv(path: str, rng: np.random.Generator, border: str) -> None:
    x = rng.random((2, 3, 9, 41)).astype(np.float32)  # wide: whole lanes and a tail
    general = rng.standard_normal((4, 5)).astype(np.float32)
    separable = np.outer(general[:, 0], general[0]).astype(np.float32)
    for kernel, anchor in [(general, (1, 3)), (separable, (2, 1)), (general[:1, :1], (0, 0))]:
        out = filter2d(burn.tensor(x), kernel, anchor, border)  # type: ignore[arg-type]
        expected = np.stack([[_cv_filter(p, kernel, anchor, border) for p in img] for img in x])
        check(out, expected, burn.float32, 1e-5)


def test_depthwise_kernel_and_non_contiguous(path: str, rng: np.random.Generator) -> None:
    x = rng.random((2, 3, 10, 8)).astype(np.float32)
    kernels = rng.standard_normal((3, 3, 3)).astype(np.float32)
    view = burn.tensor(x.transpose(0, 1, 3, 2).copy()).swap_dims(2, 3)
    out = filter2d(view, kernels)
    expected = np.stack([[cv2.filter2D(img[c], -1, kernels[c]) for c in range(3)] for img in x])
    check(out, expected, burn.float32, 1e-5)


def test_blurs_and_sobel_match_opencv(path: str, rng: np.random.Generator) -> None:
    x = rng.random((1, 1, 1, 1)).astype(np.float32)  # 1x1: every border reads the pixel
    check(gaussian_blur(burn.tensor(x), 3, 1.0), x, burn.float32, 1e-6)
    x = rng.random((2, 13, 11)).astype(np.float32)
    t = burn.tensor(x)
    check(gaussian_blur(t, (3, 5), (0.7, 1.3)),
          np.stack([cv2.GaussianBlur(p, (5, 3), sigmaX=1.3, sigmaY=0.7) for p in x]),
          burn.float32, 1e-6)
    check(box_blur(t, (3, 4), "replicate"),
          np.stack([cv2.blur(p, (4, 3), borderType=cv2.BORDER_REPLICATE) for p in x]),
          burn.float32, 1e-6)
    for dx, dy, size in [(1, 0, 3), (0, 1, 3), (1, 1, 5), (2, 1, 7)]:
        check(sobel(t, dx, dy, size),
              np.stack([cv2.Sobel(p, cv2.CV_32F, dx, dy, ksize=size) for p in x]),
              burn.float32, 1e-4)


def test_empty_image(path: str) -> None:
    empty = burn.zeros((0, 3, 4, 4))
    check(filter2d(empty, np.ones((3, 3))), np.zeros((0, 3, 4, 4), np.float32), burn.float32)


@pytest.mark.parametrize("border,torch_pad", [("reflect101", "reflect"),
                                              ("replicate", "replicate"),
                                              ("wrap", "circular")])
def test_gradient_matches_torch(border: str, torch_pad: str) -> None:
    rng = np.random.default_rng(2)
    x = rng.random((2, 3, 7, 6)).astype(np.float32)
    k = rng.standard_normal((3, 3, 3)).astype(np.float32)
    bx = burn.tensor(x, device="numpy+autodiff").require_grad()
    bk = burn.tensor(k, device="numpy+autodiff").require_grad()
    y = filter2d(bx, bk, border=border)  # type: ignore[arg-type]
    grads = (y * y).sum().backward()
    tx, tk = torch.tensor(x, requires_grad=True), torch.tensor(k, requires_grad=True)
    padded = torch.nn.functional.pad(tx, (1, 1, 1, 1), mode=torch_pad)
    ty = torch.nn.functional.conv2d(padded, tk[:, None], groups=3)
    (ty * ty).sum().backward()
    check(y, ty.detach().numpy(), burn.float32, 1e-5)
    check(bx.grad(grads), tx.grad.numpy(), burn.float32, 1e-4)
    check(bk.grad(grads), tk.grad.numpy(), burn.float32, 1e-4)


def test_random_blur_is_seeded_and_per_image(rng: np.random.Generator) -> None:
    x = burn.tensor(rng.random((6, 2, 8, 9)).astype(np.float32))
    a, b = RandomGaussianBlur(5, (0.5, 2.0), p=0.5, seed=3), RandomGaussianBlur(
        5, (0.5, 2.0), p=0.5, seed=3)
    out = a(x)
    check(out, b(x).to_numpy(), burn.float32)
    draws = np.random.default_rng(3)
    apply, sigmas = draws.random(6) < 0.5, draws.uniform(0.5, 2.0, 6)
    assert 0 < apply.sum() < 6
    for i in range(6):
        expected = gaussian_blur(x[i:i + 1], 5, float(sigmas[i])) if apply[i] else x[i:i + 1]
        check(out[i:i + 1], expected.to_numpy(), burn.float32, 1e-6)
    check(RandomGaussianBlur(3, p=0.0, seed=0)(x), x.to_numpy(), burn.float32)


def test_bad_input() -> None:
    x = burn.zeros((2, 3, 5, 5))
    with pytest.raises(DTypeError, match=r"x must be a float tensor"):
        filter2d(burn.zeros((5, 5), dtype=burn.int32), np.ones((3, 3)))
    with pytest.raises(ShapeError, match=r"kernel must be non-empty \[kh, kw\] or \[C, kh, kw\]"):
        filter2d(x, np.ones((0, 3)))
    with pytest.raises(ShapeError, match=r"per-channel kernel \[C, kh, kw\]"):
        filter2d(x, np.ones((4, 3, 3)))
    with pytest.raises(ValueRangeError, match="anchor"):
        filter2d(x, np.ones((3, 3)), anchor=(0, 3))
    with pytest.raises(ValueRangeError, match="size must be odd"):
        gaussian_blur(x, 4, 1.0)
    with pytest.raises(ValueRangeError, match="sigma must be > 0"):
        gaussian_blur(x, 3, 0.0)
    with pytest.raises(ValueRangeError, match="dx, dy"):
        sobel(x, 0, 0)
    with pytest.raises(ValueRangeError, match="p must be in"):
        RandomGaussianBlur(3, p=1.5)
