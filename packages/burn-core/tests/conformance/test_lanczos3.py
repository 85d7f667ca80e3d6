"""interpolate(mode="lanczos3") against a per-pixel implementation of Burn's definition:
each output pixel sums the 6 x 6 input pixels around its source coordinate (those inside the
image) with weights L(dy) L(dx), L(t) = sinc(t) sinc(t / 3), divided by the weights' sum."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import burn
import burn.functional as F

from .reference import FLOATS, GRAD_DTYPES, T, check_backward, check_forward, op_param, rand


def _weight(t: float) -> float:
    if t == 0:
        return 1.0
    if abs(t) >= 3:
        return 0.0
    return math.sin(math.pi * t) * math.sin(math.pi * t / 3) / (math.pi * t * math.pi * t / 3)


def _source(o: int, n_in: int, n_out: int, align: bool) -> float:
    if align:
        return o * (n_in - 1) / max(n_out - 1, 1)
    return (o + 0.5) * n_in / n_out - 0.5


def _kernel(in_hw: tuple[int, int], out_hw: tuple[int, int], align: bool) -> np.ndarray:
    """K[oh, ow, ih, iw]: the weight of input pixel (ih, iw) in output pixel (oh, ow)."""
    k = np.zeros(out_hw + in_hw)
    for oh in range(out_hw[0]):
        sy = _source(oh, in_hw[0], out_hw[0], align)
        for ow in range(out_hw[1]):
            sx = _source(ow, in_hw[1], out_hw[1], align)
            total = 0.0
            for iy in range(math.floor(sy) - 2, math.floor(sy) + 4):
                for ix in range(math.floor(sx) - 2, math.floor(sx) + 4):
                    if 0 <= iy < in_hw[0] and 0 <= ix < in_hw[1]:
                        w = _weight(sy - iy) * _weight(sx - ix)
                        k[oh, ow, iy, ix] += w
                        total += w
            if total:
                k[oh, ow] /= total
    return k


def _ref(size: tuple[int, int], align: bool):  # type: ignore[no-untyped-def]
    def fn(x: torch.Tensor) -> torch.Tensor:
        k = torch.from_numpy(_kernel(tuple(x.shape[2:]), size, align)).to(x.dtype)
        return torch.einsum("ncij,pqij->ncpq", x, k)
    return fn


CASES = [((5, 7), (9, 4)), ((6, 6), (3, 3)), ((4, 5), (4, 5)), ((1, 3), (2, 6))]


@pytest.mark.parametrize("name,dtype", [op_param("interpolate", d, id=f"lanczos3-{d}")
                                        for d in FLOATS])
def test_lanczos3(name: str, dtype: str, device: burn.Device, rng: np.random.Generator) -> None:
    for in_hw, out_hw in CASES:
        for align in (False, True):
            x = T(rand(rng, (2, 3, *in_hw), dtype), dtype, "transposed")
            check_forward(lambda a, s=out_hw, al=align: F.interpolate(a, s, "lanczos3", al),
                          _ref(out_hw, align), [x], device, upcast=True)
    x = T(rand(rng, (1, 2, 5, 7), dtype), dtype)  # scale 2: source steps of 1 / 2 = 5 / 10
    check_forward(lambda a: F.interpolate(a, mode="lanczos3", scale_factor=2.0),
                  _ref((10, 14), False), [x], device, upcast=True)


@pytest.mark.parametrize("name,dtype", [op_param("interpolate", d, id=f"lanczos3-bw-{d}")
                                        for d in GRAD_DTYPES])
def test_lanczos3_backward(name: str, dtype: str, grad_device: burn.Device,
                           rng: np.random.Generator) -> None:
    for in_hw, out_hw in CASES[:2]:
        x = T(rand(rng, (1, 2, *in_hw), dtype), dtype, "transposed")
        check_backward(lambda a, s=out_hw: F.interpolate(a, s, "lanczos3"), _ref(out_hw, False),
                       [x], grad_device, rng)
