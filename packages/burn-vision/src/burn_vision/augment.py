"""Blur augmentations applied per image with a probability, reproducible from a seed."""

from __future__ import annotations

import numpy as np

import burn
import burn.functional as F
from burn import Tensor
from burn.dtype import Kind
from burn.errors import ValueRangeError
from burn_vision._checks import image_arg, probability
from burn_vision.border import BorderMode, check_border, pad2d
from burn_vision.filters import gaussian_kernel1d


class RandomGaussianBlur:
    """Blur each image of a batch with probability `p`, with a sigma drawn uniformly from
    `sigma` per image (torchvision's GaussianBlur inside RandomApply). Decisions come from a
    numpy generator seeded with `seed`, so a run is reproducible on any device.

    Args:
        size: odd kernel size.
        sigma: (low, high) range of sigmas, 0 < low <= high.
        p: probability of blurring an image.
        seed: seed of the generator (None: fresh entropy).
        border: border mode (default "reflect101").
    Raises:
        ValueRangeError: for an even size, a bad sigma range, p outside [0, 1] or an
            unknown border.
    """

    def __init__(self, size: int, sigma: tuple[float, float] = (0.1, 2.0), p: float = 0.5,
                 seed: int | None = None, border: BorderMode = "reflect101") -> None:
        op = "RandomGaussianBlur"
        if size < 1 or size % 2 == 0:
            raise ValueRangeError(op, "size must be odd and >= 1", size=size)
        if not 0 < sigma[0] <= sigma[1]:
            raise ValueRangeError(op, "sigma must be (low, high) with 0 < low <= high",
                                  sigma=sigma)
        check_border(op, border)
        self.size, self.sigma, self.border = size, sigma, border
        self.p = probability(op, "p", p)
        self.rng = np.random.default_rng(seed)

    def __call__(self, x: Tensor) -> Tensor:
        """Args:
            x: float [N, C, H, W].
        Returns:
            same shape; images not drawn are returned unchanged.
        """
        x = image_arg("RandomGaussianBlur", "x", x, (Kind.FLOAT,), 4, 4, "float [N, C, H, W]")
        n, c, h, w = x.shape
        apply = self.rng.random(n) < self.p
        sigmas = self.rng.uniform(self.sigma[0], self.sigma[1], n)
        if not apply.any() or x.numel() == 0:
            return x
        # one depthwise convolution blurs every image with its own kernel.
        kernels = np.stack([np.outer(g, g) for g in
                            (gaussian_kernel1d(self.size, s) for s in sigmas)])
        weight = burn.tensor(np.repeat(kernels, c, axis=0)[:, None], dtype=x.dtype,
                             device=x.device)
        r = self.size // 2
        padded = pad2d(x, r, r, r, r, self.border).reshape(1, n * c, h + 2 * r, w + 2 * r)
        blurred = F.conv2d(padded, weight, groups=n * c).reshape(n, c, h, w)
        mask = burn.tensor(apply.reshape(n, 1, 1, 1), device=x.device)
        return burn.where(mask, blurred, x)
