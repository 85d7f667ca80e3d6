"""Tensors to and from pillow images, and a batch saved as one grid PNG."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np
from PIL import Image

import burn
from burn import Device, Tensor
from burn.dtype import Kind
from burn.errors import ShapeError
from burn_vision._checks import image_arg, positive_int


def to_pil(x: Tensor) -> Image.Image:
    """One image as a pillow image: float values in [0, 1] (clipped) or uint8 values.

    Args:
        x: float or uint8 [C, H, W] with C in (1, 3, 4), or [H, W].
    Returns:
        an "L", "RGB" or "RGBA" image.
    Raises:
        DTypeError: for other kinds. ShapeError: for other shapes.
    """
    op = "to_pil"
    t = image_arg(op, "x", x, (Kind.FLOAT, Kind.INT), 2, 3, "float or uint8 [C, H, W]")
    a = t.to_numpy()
    if t.kind == Kind.FLOAT:
        a = np.rint(np.clip(np.nan_to_num(a), 0.0, 1.0) * 255.0)
    elif t.dtype != burn.uint8:
        raise ShapeError(op, "integer images must be uint8 [C, H, W]", dtype=t.dtype)
    if a.ndim == 3:
        if a.shape[0] not in (1, 3, 4):
            raise ShapeError(op, "x must be [C, H, W] with C in (1, 3, 4)", x=t.shape)
        a = a[0] if a.shape[0] == 1 else a.transpose(1, 2, 0)
    return Image.fromarray(np.ascontiguousarray(a.astype(np.uint8)))


def from_pil(image: Image.Image, device: Device | str | None = None) -> Tensor:
    """A pillow image as float32 [C, H, W] in [0, 1] (C = 1 for "L", 3 for "RGB", 4 for
    "RGBA"; other modes are converted to RGB)."""
    if image.mode not in ("L", "RGB", "RGBA"):
        image = image.convert("RGB")
    a = np.asarray(image, dtype=np.float32) / 255.0
    a = a[None] if a.ndim == 2 else a.transpose(2, 0, 1)
    return burn.tensor(np.ascontiguousarray(a), device=device)


def make_grid(x: Tensor, nrow: int = 8, padding: int = 2, pad_value: float = 0.0) -> Tensor:
    """Tile a batch into one image (torchvision's make_grid without normalisation).

    Args:
        x: float [B, C, H, W].
        nrow: images per row.
        padding: pixels between and around the images.
        pad_value: fill of the padding.
    Returns:
        float [C, rows * (H + padding) + padding, nrow' * (W + padding) + padding].
    """
    op = "make_grid"
    x = image_arg(op, "x", x, (Kind.FLOAT,), 4, 4, "float [B, C, H, W]")
    positive_int(op, "nrow", nrow)
    b, c, h, w = x.shape
    cols = max(1, min(nrow, b))
    rows = -(-b // cols)
    if rows * cols > b:
        x = burn.cat([x, burn.full((rows * cols - b, c, h, w), pad_value, dtype=x.dtype,
                                   device=x.device)], 0)
    tiles = x.pad((padding, 0, padding, 0), pad_value)
    grid = tiles.reshape(rows, cols, c, h + padding, w + padding).permute(2, 0, 3, 1, 4)
    grid = grid.reshape(c, rows * (h + padding), cols * (w + padding))
    return grid.pad((0, padding, 0, padding), pad_value)


def save_grid(x: Tensor, path: str | os.PathLike[str], nrow: int = 8, padding: int = 2) -> Path:
    """Save a batch as one grid PNG, atomically (a temporary file renamed into place).

    Args:
        x: float [B, C, H, W] in [0, 1], C in (1, 3, 4).
        path: the PNG to write.
        nrow, padding: as `make_grid`.
    Returns:
        the path written.
    """
    target = Path(path)
    image = to_pil(make_grid(x, nrow, padding))
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp",
                               dir=target.parent if str(target.parent) else ".")
    try:
        with os.fdopen(fd, "wb") as f:
            image.save(f, format="PNG")
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target
