"""2-D affine transforms (rotation, scale, translation, shear, composition) applied through
grid sampling, and resizing."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

import burn
import burn.functional as F
from burn import Tensor
from burn.backend.options import GridSampleMode, GridSamplePadding, InterpolateMode
from burn.dtype import Kind
from burn.errors import ValueRangeError
from burn_vision._checks import image_arg, pair

_FLOAT = (Kind.FLOAT,)


@dataclass(frozen=True)
class Transform2d:
    """An affine map of pixel coordinates (x right, y down, pixel centres at integers), as a
    3x3 matrix. `a @ b` applies b first, then a; `a.then(b)` applies a, then b.

    Attributes:
        matrix: float64 [3, 3] with last row (0, 0, 1).
    """

    matrix: np.ndarray

    @staticmethod
    def identity() -> Transform2d:
        """The identity map."""
        return Transform2d(np.eye(3))

    @staticmethod
    def translation(tx: float, ty: float) -> Transform2d:
        """Move by (tx, ty) pixels."""
        return Transform2d(np.array([[1.0, 0, tx], [0, 1, ty], [0, 0, 1]]))

    @staticmethod
    def scale(sx: float, sy: float | None = None, center: Sequence[float] = (0.0, 0.0)
              ) -> Transform2d:
        """Scale by (sx, sy) (sy defaults to sx) about `center` (x, y)."""
        s = np.diag([sx, sx if sy is None else sy, 1.0])
        return Transform2d(s)._about(center)

    @staticmethod
    def rotation(angle: float, center: Sequence[float] = (0.0, 0.0)) -> Transform2d:
        """Rotate by `angle` degrees about `center` (x, y); positive turns counter-clockwise as
        seen on screen (OpenCV's getRotationMatrix2D)."""
        c, s = math.cos(math.radians(angle)), math.sin(math.radians(angle))
        return Transform2d(np.array([[c, s, 0.0], [-s, c, 0.0], [0, 0, 1]]))._about(center)

    @staticmethod
    def shear(shx: float, shy: float = 0.0, center: Sequence[float] = (0.0, 0.0)
              ) -> Transform2d:
        """Shear: x += shx * y and y += shy * x (about `center`)."""
        return Transform2d(np.array([[1.0, shx, 0], [shy, 1.0, 0], [0, 0, 1]]))._about(center)

    @staticmethod
    def from_matrix(matrix: Sequence[Sequence[float]] | np.ndarray) -> Transform2d:
        """From a 2x3 (OpenCV's warpAffine form) or 3x3 affine matrix.

        Raises:
            ValueRangeError: for another shape or a 3x3 whose last row is not (0, 0, 1).
        """
        m = np.asarray(matrix, dtype=np.float64)
        if m.shape == (2, 3):
            m = np.vstack([m, [0.0, 0.0, 1.0]])
        if m.shape != (3, 3) or not np.allclose(m[2], [0, 0, 1]):
            raise ValueRangeError("Transform2d.from_matrix", "need an affine matrix 2x3 or 3x3 "
                                  "with last row (0, 0, 1)", shape=m.shape)
        return Transform2d(m)

    def __matmul__(self, other: Transform2d) -> Transform2d:
        return Transform2d(self.matrix @ other.matrix)

    def then(self, other: Transform2d) -> Transform2d:
        """This map followed by `other`."""
        return other @ self

    def inverse(self) -> Transform2d:
        """The inverse map.

        Raises:
            ValueRangeError: for a singular transform.
        """
        if abs(np.linalg.det(self.matrix)) < 1e-12:
            raise ValueRangeError("Transform2d.inverse", "the transform is singular",
                                  matrix=self.matrix.tolist())
        return Transform2d(np.linalg.inv(self.matrix))

    def _about(self, center: Sequence[float]) -> Transform2d:
        cx, cy = center
        return Transform2d.translation(cx, cy) @ self @ Transform2d.translation(-cx, -cy)

    def apply(self, x: Tensor, size: tuple[int, int] | None = None,
              mode: GridSampleMode = "bilinear", padding: GridSamplePadding = "zeros"
              ) -> Tensor:
        """Warp images: output pixel p takes the input at `inverse(p)` (OpenCV's warpAffine
        with this matrix, and scikit-image's warp), differentiable with respect to x.

        Args:
            x: float [N, C, H, W].
            size: output (height, width); default the input's.
            mode: "bilinear" or "nearest".
            padding: "zeros", "border" or "reflection" outside the input.
        Returns:
            float [N, C, height, width].
        Raises:
            DTypeError / ShapeError: for x not float [N, C, H, W]. ValueRangeError: for a
                singular transform, a bad size, mode or padding.
        """
        op = "Transform2d.apply"
        x = image_arg(op, "x", x, _FLOAT, 4, 4, "float [N, C, H, W]")
        n, _, h, w = x.shape
        oh, ow = (h, w) if size is None else pair(op, "size", size)
        inv = self.inverse().matrix
        ys, xs = np.meshgrid(np.arange(oh, dtype=np.float64), np.arange(ow, dtype=np.float64),
                             indexing="ij")
        src_x = inv[0, 0] * xs + inv[0, 1] * ys + inv[0, 2]
        src_y = inv[1, 0] * xs + inv[1, 1] * ys + inv[1, 2]
        grid = np.stack([_normalise(src_x, w), _normalise(src_y, h)], -1)
        g = burn.tensor(np.broadcast_to(grid, (n, oh, ow, 2)).copy(), dtype=x.dtype,
                        device=x.device)
        return F.grid_sample_2d(x, g, mode, padding, align_corners=True)


def _normalise(coord: np.ndarray, n: int) -> np.ndarray:
    """Pixel coordinates to grid_sample's [-1, 1] with align_corners=True (a 1-pixel axis maps
    its only pixel to 0)."""
    return coord * (2.0 / (n - 1)) - 1.0 if n > 1 else coord * 2.0


def resize(x: Tensor, size: int | tuple[int, int], mode: InterpolateMode = "bilinear"
           ) -> Tensor:
    """Resample images to `size` with half-pixel centres and no antialiasing (OpenCV's
    resize with INTER_LINEAR / INTER_CUBIC; "nearest" is torch's legacy nearest, which is
    OpenCV's INTER_NEAREST).

    Args:
        x: float [N, C, H, W].
        size: (height, width) or one int, each >= 1.
        mode: "nearest", "bilinear" or "bicubic".
    Returns:
        float [N, C, height, width].
    Raises:
        DTypeError / ShapeError: for x not float [N, C, H, W]. ValueRangeError: for a bad
            size or mode.
    """
    op = "resize"
    x = image_arg(op, "x", x, _FLOAT, 4, 4, "float [N, C, H, W]")
    return F.interpolate(x, pair(op, "size", size), mode=mode)
