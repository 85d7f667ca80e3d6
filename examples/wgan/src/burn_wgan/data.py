"""The training images: MNIST's train split, else scikit-learn's 8x8 digits (offline)."""

from __future__ import annotations

import numpy as np

from burn_dataset import DatasetUnavailableError, MnistDataset


def load_images(limit: int, download: bool) -> tuple[np.ndarray, str]:
    """Up to `limit` training images scaled to [-1, 1] (the generator's tanh range), and the
    name of their source. Without the MNIST files (and no way to download them) it prints how
    to get them and uses scikit-learn's 1,797 8x8 digits.

    Args:
        limit: at most this many images.
        download: allow downloading MNIST when it is not in the cache.
    Returns:
        (float32 images [n, side, side], source name).
    Raises:
        DatasetUnavailableError: neither MNIST nor scikit-learn is available.
    """
    try:
        mnist = MnistDataset("train", download=download)
        n = min(limit, len(mnist))
        images = np.stack([mnist[i].image for i in range(n)]).astype(np.float32) / 255.0
        return images * 2 - 1, "MNIST"
    except DatasetUnavailableError as e:
        print(f"MNIST is not available ({e}; $BURN_DATASET_CACHE/mnist is the cache dir, or run "
              f"once online to download it). Falling back to scikit-learn's 8x8 digits.",
              flush=True)
    try:
        from sklearn.datasets import load_digits
    except ModuleNotFoundError as e:
        raise DatasetUnavailableError(f"the digits fallback needs scikit-learn ({e}): "
                                      f"pip install scikit-learn") from e
    images = load_digits().images[:limit].astype(np.float32) / 16.0
    return images * 2 - 1, "scikit-learn digits (8x8)"
