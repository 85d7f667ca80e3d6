"""2-D correlation with burn ops: border padding, then a depthwise convolution."""

from __future__ import annotations

import burn.functional as F
from burn import Tensor
from burn_vision.border import BorderMode, pad2d


def filter2d(x: Tensor, kernel: Tensor, anchor: tuple[int, int], border: BorderMode,
             value: float) -> Tensor:
    """Correlate the last two dims of float `x` with `kernel` (OpenCV's filter2D).

    Args:
        x: [..., H, W]; with a per-channel kernel, [..., C, H, W].
        kernel: [kh, kw] for every plane, or [C, kh, kw] per channel (dim -3 of x).
        anchor: (x, y) of the kernel's reference point.
        border: how pixels outside are read; value: the "constant" fill.
    Returns:
        same shape as x.
    """
    kh, kw = kernel.shape[-2:]
    ax, ay = anchor
    shape = x.shape
    h, w = shape[-2:]
    padded = pad2d(x, ay, kh - 1 - ay, ax, kw - 1 - ax, border, value)
    hp, wp = padded.shape[-2:]
    if kernel.ndim == 2:
        out = F.conv2d(padded.reshape(-1, 1, hp, wp), kernel.reshape(1, 1, kh, kw))
    else:
        c = kernel.shape[0]
        out = F.conv2d(padded.reshape(-1, c, hp, wp), kernel.reshape(c, 1, kh, kw), groups=c)
    return out.reshape(shape[:-2] + (h, w))
