"""DropPath, DropBlock and the Gram loss against torch formulas (forward and backward under
autodiff), and the pillow / PNG helpers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import check
from PIL import Image

import burn
from burn.errors import DTypeError, ShapeError, ValueRangeError
from burn_vision import (
    DropBlock,
    DropPath,
    GramLoss,
    from_pil,
    gram_matrix,
    make_grid,
    save_grid,
    to_pil,
)

AD = "numpy+autodiff"


def test_drop_path_zeroes_whole_samples_and_scales(rng: np.random.Generator) -> None:
    x = burn.tensor(rng.random((64, 3, 4, 4)).astype(np.float32) + 0.5, device=AD).require_grad()
    burn.seed(1, AD)
    y = DropPath(0.25)(x)
    grads = y.sum().backward()
    out, a = y.to_numpy(), x.to_numpy()
    dropped = (out == 0).all(axis=(1, 2, 3))
    assert y.shape == x.shape and y.dtype == burn.float32
    assert 0 < dropped.sum() < 64
    np.testing.assert_allclose(out[~dropped], a[~dropped] / 0.75, rtol=1e-6)
    expected = np.where(dropped[:, None, None, None], 0.0, 1 / 0.75) * np.ones_like(a)
    check(x.grad(grads), expected.astype(np.float32), burn.float32, 1e-6)
    layer = DropPath(0.25)
    layer.eval()
    check(layer(x), a, burn.float32)


def test_drop_block_drops_blocks(rng: np.random.Generator) -> None:
    x = burn.tensor(np.ones((8, 2, 12, 12), np.float32), device=AD)
    burn.seed(2, AD)
    y = DropBlock(0.2, 3)(x).to_numpy()
    kept = y != 0
    assert 0.1 < 1 - kept.mean() < 0.35
    np.testing.assert_allclose(y[kept], kept.size / kept.sum(), rtol=1e-5)
    # every dropped pixel lies in a fully dropped 3x3 block.
    dropped = torch.tensor(~kept, dtype=torch.float32).reshape(16, 1, 12, 12)
    core = -torch.nn.functional.max_pool2d(-dropped, 3, 1)  # blocks fully dropped
    cover = torch.nn.functional.max_pool2d(torch.nn.functional.pad(core, (2, 2, 2, 2)), 3, 1)
    assert torch.equal(cover, dropped)


def test_gram_loss_matches_torch(rng: np.random.Generator) -> None:
    a, b = rng.random((2, 2, 3, 4, 5)).astype(np.float32)
    x = burn.tensor(a, device=AD).require_grad()
    loss = GramLoss()(x, burn.tensor(b, device=AD))
    grads = loss.backward()
    ta = torch.tensor(a, requires_grad=True)

    def gram(t: torch.Tensor) -> torch.Tensor:
        f = t.reshape(2, 3, 20)
        return f @ f.transpose(1, 2) / 60

    ref = ((gram(ta) - gram(torch.tensor(b))) ** 2).mean()
    ref.backward()
    check(gram_matrix(burn.tensor(a)), gram(torch.tensor(a)).numpy(), burn.float32, 1e-6)
    check(loss, ref.detach().numpy(), burn.float32, 1e-8)
    check(x.grad(grads), ta.grad.numpy(), burn.float32, 1e-7)


def test_pil_round_trip_and_grid(tmp_path: Path, rng: np.random.Generator) -> None:
    pixels = rng.integers(0, 256, (5, 7, 3), dtype=np.uint8)
    t = from_pil(Image.fromarray(pixels))
    check(t, pixels.transpose(2, 0, 1).astype(np.float32) / 255, burn.float32, 1e-7)
    np.testing.assert_array_equal(np.asarray(to_pil(t)), pixels)
    gray = to_pil(burn.tensor(pixels[None, :, :, 0]))
    assert gray.mode == "L"
    x = burn.tensor(rng.random((3, 1, 2, 2)).astype(np.float32))
    grid = make_grid(x, nrow=2, padding=1)
    expected = np.zeros((1, 7, 7), np.float32)
    for i in range(3):
        r, c = divmod(i, 2)
        expected[:, 1 + 3 * r:3 + 3 * r, 1 + 3 * c:3 + 3 * c] = x.to_numpy()[i]
    check(grid, expected, burn.float32)
    path = save_grid(x, tmp_path / "grid.png", nrow=2, padding=1)
    np.testing.assert_array_equal(np.asarray(Image.open(path)),
                                  np.rint(expected[0] * 255).astype(np.uint8))
    assert [p.name for p in tmp_path.iterdir()] == ["grid.png"]


def test_save_grid_leaves_nothing_on_error(tmp_path: Path) -> None:
    with pytest.raises(ShapeError, match=r"C in \(1, 3, 4\)"):
        save_grid(burn.zeros((2, 2, 3, 3)), tmp_path / "bad.png")
    assert list(tmp_path.iterdir()) == []


def test_bad_input() -> None:
    with pytest.raises(ValueRangeError, match=r"prob must be in \[0, 1\]"):
        DropPath(1.5)
    with pytest.raises(ValueRangeError, match="block_size"):
        DropBlock(0.1, 0)
    with pytest.raises(ShapeError, match=r"float \[N, C, H, W\]"):
        gram_matrix(burn.zeros((2, 3)))
    with pytest.raises(ShapeError, match="one shape"):
        GramLoss()(burn.zeros((1, 2, 3, 3)), burn.zeros((1, 2, 3, 4)))
    with pytest.raises(DTypeError, match="float or uint8"):
        to_pil(burn.zeros((3, 2, 2), dtype=burn.bool_))
