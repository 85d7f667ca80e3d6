"""Colour conversions against OpenCV, normalisation against torch, Transform2d against
scikit-image's warp, resize against OpenCV, and their gradients under autodiff."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
import torch
from conftest import check
from skimage.transform import AffineTransform, warp

import burn
from burn.errors import DTypeError, ShapeError, ValueRangeError
from burn_vision import (
    Transform2d,
    denormalize,
    grayscale_to_rgb,
    hsv_to_rgb,
    normalize,
    resize,
    rgb_to_grayscale,
    rgb_to_hsv,
    rgb_to_ycbcr,
    ycbcr_to_rgb,
)

DEVICES = ["numpy", "numpy+autodiff"]


def _rgb(rng: np.random.Generator) -> np.ndarray:
    x = rng.random((2, 3, 6, 7)).astype(np.float32)
    x[0, :, 0, :4] = [[0.5] * 4, [0.5, 0.2, 0.7, 0.0], [0.5, 0.2, 0.7, 0.0]]  # greys, ties
    return x


def _cv(x: np.ndarray, code: int) -> np.ndarray:
    return np.stack([cv2.cvtColor(img.transpose(1, 2, 0).copy(), code).reshape(
        img.shape[1], img.shape[2], -1).transpose(2, 0, 1) for img in x])


@pytest.mark.parametrize("device", DEVICES)
def test_colour_matches_opencv(rng: np.random.Generator, device: str) -> None:
    x = _rgb(rng)
    t = burn.tensor(x, device=device)
    check(rgb_to_grayscale(t), _cv(x, cv2.COLOR_RGB2GRAY), burn.float32, 1e-6)
    hsv = _cv(x, cv2.COLOR_RGB2HSV)
    check(rgb_to_hsv(t), hsv, burn.float32, 1e-3)  # hue in degrees
    check(hsv_to_rgb(burn.tensor(hsv, device=device)), _cv(hsv, cv2.COLOR_HSV2RGB),
          burn.float32, 1e-5)
    ycrcb = _cv(x, cv2.COLOR_RGB2YCrCb)
    check(rgb_to_ycbcr(t), ycrcb[:, [0, 2, 1]], burn.float32, 1e-6)
    check(ycbcr_to_rgb(burn.tensor(ycrcb[:, [0, 2, 1]].copy(), device=device)),
          _cv(ycrcb, cv2.COLOR_YCrCb2RGB), burn.float32, 1e-6)
    check(grayscale_to_rgb(t[:, :1]), np.repeat(x[:, :1], 3, 1), burn.float32)


def test_normalize_round_trip_and_gradient(rng: np.random.Generator) -> None:
    x = _rgb(rng)
    mean, std = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
    t = burn.tensor(x, device="numpy+autodiff").require_grad()
    out = normalize(t, mean, std)
    ref = (torch.tensor(x) - torch.tensor(mean)[:, None, None]) / torch.tensor(std)[:, None, None]
    check(out, ref.numpy(), burn.float32, 1e-6)
    check(denormalize(out, mean, std), x, burn.float32, 1e-6)
    grads = out.sum().backward()
    check(t.grad(grads), np.broadcast_to(1 / np.array(std, np.float32)[:, None, None],
                                         x.shape), burn.float32, 1e-6)


@pytest.mark.parametrize("device", DEVICES)
def test_transform_matches_scikit_image(rng: np.random.Generator, device: str) -> None:
    x = rng.random((2, 1, 15, 21)).astype(np.float32)
    transform = (Transform2d.rotation(30, (10, 7)).then(Transform2d.scale(1.2, 0.9))
                 .then(Transform2d.shear(0.1, 0.05)).then(Transform2d.translation(2, -3)))
    out = transform.apply(burn.tensor(x, device=device))
    expected = np.stack([[warp(p.astype(np.float64), AffineTransform(
        matrix=transform.matrix).inverse, order=1, mode="constant", cval=0) for p in img]
        for img in x])
    check(out, expected.astype(np.float32), burn.float32, 1e-5)
    np.testing.assert_allclose(Transform2d.rotation(30, (10, 7)).matrix[:2],
                               cv2.getRotationMatrix2D((10, 7), 30, 1.0), atol=1e-12)
    composed = Transform2d.translation(1, 2) @ transform.inverse() @ transform
    np.testing.assert_allclose(composed.matrix, Transform2d.translation(1, 2).matrix, atol=1e-12)
    one = burn.tensor(np.full((1, 1, 1, 1), 0.25, np.float32), device=device)
    check(Transform2d.identity().apply(one), np.full((1, 1, 1, 1), 0.25, np.float32),
          burn.float32)


def test_transform_gradient_matches_torch(rng: np.random.Generator) -> None:
    x = rng.random((1, 2, 5, 6)).astype(np.float32)
    transform = Transform2d.rotation(20, (2.5, 2))
    t = burn.tensor(x, device="numpy+autodiff").require_grad()
    out = transform.apply(t, size=(4, 7))
    grads = (out * out).sum().backward()
    inv = transform.inverse().matrix
    ys, xs = np.meshgrid(np.arange(4.0), np.arange(7.0), indexing="ij")
    gx = (inv[0, 0] * xs + inv[0, 1] * ys + inv[0, 2]) * 2 / 5 - 1
    gy = (inv[1, 0] * xs + inv[1, 1] * ys + inv[1, 2]) * 2 / 4 - 1
    grid = torch.tensor(np.stack([gx, gy], -1)[None], dtype=torch.float32)
    tx = torch.tensor(x, requires_grad=True)
    ref = torch.nn.functional.grid_sample(tx, grid, align_corners=True)
    (ref * ref).sum().backward()
    check(out, ref.detach().numpy(), burn.float32, 1e-5)
    check(t.grad(grads), tx.grad.numpy(), burn.float32, 1e-5)


def test_resize_matches_opencv(rng: np.random.Generator) -> None:
    x = rng.random((1, 2, 12, 9)).astype(np.float32)
    for size in [(20, 17), (5, 4), (12, 9)]:
        expected = np.stack([[cv2.resize(p, size[::-1], interpolation=cv2.INTER_LINEAR)
                              for p in img] for img in x])
        check(resize(burn.tensor(x), size), expected, burn.float32, 1e-5)


def test_bad_input() -> None:
    with pytest.raises(ShapeError, match=r"x must be float \[\.\.\., 3, H, W\]"):
        rgb_to_hsv(burn.zeros((1, 4, 2, 2)))
    with pytest.raises(DTypeError, match="float tensor"):
        rgb_to_grayscale(burn.zeros((3, 2, 2), dtype=burn.uint8))
    with pytest.raises(ShapeError, match="one value per channel"):
        normalize(burn.zeros((3, 2, 2)), [0.5], [0.5])
    with pytest.raises(ValueRangeError, match="std must be nonzero"):
        normalize(burn.zeros((1, 2, 2)), [0.5], [0.0])
    with pytest.raises(ValueRangeError, match="singular"):
        Transform2d.scale(0.0).apply(burn.zeros((1, 1, 2, 2)))
    with pytest.raises(ValueRangeError, match="affine matrix"):
        Transform2d.from_matrix(np.ones((3, 3)))
    with pytest.raises(ShapeError, match=r"float \[N, C, H, W\]"):
        resize(burn.zeros((2, 2)), 3)
