"""`MnistDataset` and `FashionMnistDataset`: 28x28 grayscale digits / clothes, from IDX files."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Literal

import numpy as np

from burn_dataset.dataset import Dataset
from burn_dataset.errors import CorruptFileError, SchemaMismatchError
from burn_dataset.source.download import RemoteFile, cache_dir, fetch_files
from burn_dataset.source.idx import read_idx

Split = Literal["train", "test"]


@dataclass(frozen=True)
class MnistItem:
    """One image and its class.

    Attributes:
        image: uint8 array of shape (28, 28).
        label: class index in ``[0, 10)``.
    """

    image: np.ndarray
    label: int


class MnistDataset(Dataset[MnistItem]):
    """The MNIST handwritten digits (60,000 train, 10,000 test images).

    Files are looked up in ``root`` (default ``cache_dir() / "mnist"``) and downloaded there,
    checksummed, when missing and ``download`` is True (and ``$BURN_DATASET_OFFLINE`` is not
    set: then a missing file raises at once).

    Args:
        split: ``"train"`` or ``"test"``.
        root: directory of the IDX files.
        download: allow downloading missing files.

    Raises:
        DatasetUnavailableError: files missing and not downloadable (names them and ``root``).
        CorruptFileError: an IDX file is malformed or truncated.
        SchemaMismatchError: images and labels disagree in count.
    """

    NAME: ClassVar[str] = "mnist"
    MIRRORS: ClassVar[tuple[str, ...]] = (
        "https://ossci-datasets.s3.amazonaws.com/mnist/",
        "https://storage.googleapis.com/cvdf-datasets/mnist/",
    )
    FILES: ClassVar[dict[str, tuple[RemoteFile, RemoteFile]]] = {
        "train": (
            RemoteFile("train-images-idx3-ubyte.gz", "f68b3c2dcbeaaa9fbdd348bbdeb94873", "md5"),
            RemoteFile("train-labels-idx1-ubyte.gz", "d53e105ee54ea40749a09fcbcd1e9432", "md5"),
        ),
        "test": (
            RemoteFile("t10k-images-idx3-ubyte.gz", "9fb629c4189551a2d022fa330f9573f3", "md5"),
            RemoteFile("t10k-labels-idx1-ubyte.gz", "ec29112dd5afa0611ce80d1b7f02629c", "md5"),
        ),
    }
    CLASSES: ClassVar[tuple[str, ...]] = tuple(str(d) for d in range(10))

    def __init__(
        self,
        split: Split = "train",
        root: str | os.PathLike[str] | None = None,
        download: bool = True,
    ) -> None:
        if split not in self.FILES:
            raise ValueError(f"split must be one of {sorted(self.FILES)}, got {split!r}")
        self.root = Path(root) if root is not None else cache_dir() / self.NAME
        images_path, labels_path = fetch_files(self.FILES[split], self.root, self.MIRRORS,
                                               download)
        self.images = read_idx(images_path)
        self.labels = read_idx(labels_path)
        _check_arrays(images_path, self.images, labels_path, self.labels)

    def __len__(self) -> int:
        return len(self.labels)

    def _get(self, index: int) -> MnistItem:
        return MnistItem(self.images[index], int(self.labels[index]))


def _check_arrays(images_path: Path, images: np.ndarray, labels_path: Path,
                  labels: np.ndarray) -> None:
    """Validate the shapes and dtypes of an images/labels pair."""
    if images.ndim != 3 or images.dtype != np.uint8:
        raise CorruptFileError(
            f"{images_path}: expected uint8 images of shape (N, H, W), got {images.dtype} "
            f"{images.shape}"
        )
    if labels.ndim != 1 or labels.dtype != np.uint8:
        raise CorruptFileError(
            f"{labels_path}: expected uint8 labels of shape (N,), got {labels.dtype} "
            f"{labels.shape}"
        )
    if len(images) != len(labels):
        raise SchemaMismatchError(
            f"{images_path} has {len(images)} images but {labels_path} has {len(labels)} labels"
        )


class FashionMnistDataset(MnistDataset):
    """Fashion-MNIST: Zalando's 28x28 clothing images, same layout as MNIST."""

    NAME = "fashion-mnist"
    MIRRORS = ("http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/",)
    FILES = {
        "train": (
            RemoteFile("train-images-idx3-ubyte.gz", "8d4fb7e6c68d591d4c3dfef9ec88bf0d", "md5"),
            RemoteFile("train-labels-idx1-ubyte.gz", "25c81989df183df01b3e8a0aad5dffbe", "md5"),
        ),
        "test": (
            RemoteFile("t10k-images-idx3-ubyte.gz", "bef4ecab320f06d8554ea6380940ec79", "md5"),
            RemoteFile("t10k-labels-idx1-ubyte.gz", "bb300cfdad3c16e7a12a480ee83cd310", "md5"),
        ),
    }
    CLASSES = ("T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt",
               "Sneaker", "Bag", "Ankle boot")
