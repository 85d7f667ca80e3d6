"""Dataset sources: in-memory rows, SQLite, dataframes, image folders, MNIST, fakes.

`DataframeDataset` (needs polars) and the image-folder classes (need pillow) are imported on
first access, so the rest works without those extras.
"""

from __future__ import annotations

import importlib
from typing import Any

from burn_dataset.source.download import RemoteFile, cache_dir, fetch_files
from burn_dataset.source.fake import FakeDataset
from burn_dataset.source.idx import read_idx, write_idx
from burn_dataset.source.in_memory import InMemoryDataset
from burn_dataset.source.mnist import FashionMnistDataset, MnistDataset, MnistItem
from burn_dataset.source.sqlite import SqliteDataset, SqliteDatasetWriter, list_splits

_LAZY = {
    "DataframeDataset": ("burn_dataset.source.dataframe", "polars"),
    "ImageFolderDataset": ("burn_dataset.source.image_folder", "vision"),
    "ImageItem": ("burn_dataset.source.image_folder", "vision"),
    "BoundingBox": ("burn_dataset.source.image_folder", "vision"),
    "Label": ("burn_dataset.source.image_folder", "vision"),
    "MultiLabel": ("burn_dataset.source.image_folder", "vision"),
    "SegmentationMask": ("burn_dataset.source.image_folder", "vision"),
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, extra = _LAZY[name]
    try:
        return getattr(importlib.import_module(module), name)
    except ModuleNotFoundError as e:
        raise ImportError(
            f"{name} needs {e.name!r}: pip install 'burn-dataset[{extra}]'"
        ) from e


__all__ = [
    "BoundingBox",
    "DataframeDataset",
    "FakeDataset",
    "FashionMnistDataset",
    "ImageFolderDataset",
    "ImageItem",
    "InMemoryDataset",
    "Label",
    "MnistDataset",
    "MnistItem",
    "MultiLabel",
    "RemoteFile",
    "SegmentationMask",
    "SqliteDataset",
    "SqliteDatasetWriter",
    "cache_dir",
    "fetch_files",
    "list_splits",
    "read_idx",
    "write_idx",
]
