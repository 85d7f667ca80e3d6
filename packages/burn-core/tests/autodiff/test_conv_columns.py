"""Autodiff on the NumPy backend keeps a conv's im2col columns for its backward: every
combination of tracked input / weight / bias gives torch's gradients, with columns kept and
with columns too large to keep."""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np
import pytest
import torch

import burn
import burn.functional as F

CONV = importlib.import_module("burn.backends.numpy.module.conv")


@pytest.mark.parametrize("keep", [True, False])
@pytest.mark.parametrize("need", ["xwb", "wb", "w", "b", "xw", "x"])
@pytest.mark.parametrize("groups,stride,padding", [(1, 1, 0), (2, 2, 1)])
def test_conv_grads_from_saved_columns(keep: bool, need: str, groups: int, stride: int,
                                       padding: int, monkeypatch: Any) -> None:
    if not keep:
        monkeypatch.setattr(CONV, "SAVED_COLUMNS_MAX", 0)
    device = burn.Device("numpy").autodiff()
    rng = np.random.default_rng(4)
    arrays = {"x": rng.standard_normal((3, 4, 9, 8)).astype(np.float32),
              "w": rng.standard_normal((6, 4 // groups, 3, 2)).astype(np.float32),
              "b": rng.standard_normal(6).astype(np.float32)}
    tensors = {k: burn.tensor(v, device=device) for k, v in arrays.items()}
    tensors = {k: t.require_grad() if k in need else t for k, t in tensors.items()}
    out = F.conv2d(tensors["x"], tensors["w"], tensors["b"], stride=stride, padding=padding,
                   groups=groups)
    g = rng.standard_normal(out.shape).astype(np.float32)
    grads = (out * burn.tensor(g, device=device)).sum().backward()
    ref = {k: torch.from_numpy(v.astype(np.float64)).requires_grad_(k in need)
           for k, v in arrays.items()}
    ty = torch.nn.functional.conv2d(ref["x"], ref["w"], ref["b"], stride=stride,
                                    padding=padding, groups=groups)
    assert out.shape == tuple(ty.shape)
    np.testing.assert_allclose(out.to_numpy(), ty.detach().numpy(), rtol=1e-4, atol=1e-4)
    ty.backward(torch.from_numpy(g.astype(np.float64)))
    for name in need:
        grad, expected = tensors[name].grad(grads), ref[name].grad
        assert grad is not None and expected is not None
        assert grad.shape == arrays[name].shape and grad.to_numpy().dtype == np.float32
        np.testing.assert_allclose(grad.to_numpy(), expected.numpy(), rtol=1e-4, atol=1e-4)


def test_backward_from_columns_refuses_columns_of_another_input() -> None:
    from burn.backend.options import ConvOptions
    from burn.errors import ShapeError

    x = np.ones((2, 3, 6, 6), np.float32)
    w = np.ones((4, 3, 3, 3), np.float32)
    options = ConvOptions((1, 1), (0, 0), (1, 1), 1)
    _, cols = CONV.conv_saving_columns(x, w, None, options)
    with pytest.raises(ShapeError, match="conv_backward"):
        CONV.conv_backward_from_columns(cols, (2, 3, 7, 7), np.dtype(np.float32), w, None,
                                        np.ones((2, 4, 5, 5), np.float32), options, True)
