"""Burn for Python datasets: the `Dataset` base class, sources and transforms.

Items are plain Python / numpy values; turning them into tensors is a Batcher's job
(burn-core). `DataframeDataset` needs the ``polars`` extra, image folders the ``vision`` extra.
"""

from __future__ import annotations

from importlib import metadata as _metadata
from typing import Any

from burn_dataset import source, transform
from burn_dataset.dataset import Dataset
from burn_dataset.errors import (
    ChecksumMismatchError,
    CorruptFileError,
    DatasetError,
    DatasetUnavailableError,
    InvalidAnnotationError,
    MalformedRowError,
    MissingColumnError,
    MissingSplitError,
    SchemaMismatchError,
)
from burn_dataset.source import (
    FakeDataset,
    FashionMnistDataset,
    InMemoryDataset,
    MnistDataset,
    MnistItem,
    SqliteDataset,
    SqliteDatasetWriter,
)
from burn_dataset.transform import (
    ComposedDataset,
    MapperDataset,
    PartialDataset,
    SamplerDataset,
    SelectionDataset,
    ShuffledDataset,
    WindowsDataset,
    train_valid_split,
)

__version__ = _metadata.version("burn-dataset")  # the one version: pyproject.toml


def __getattr__(name: str) -> Any:
    """The optional-dependency sources (polars, pillow), imported on first access."""
    if name in source._LAZY:
        return getattr(source, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "ChecksumMismatchError",
    "ComposedDataset",
    "CorruptFileError",
    "DataframeDataset",
    "Dataset",
    "DatasetError",
    "DatasetUnavailableError",
    "FakeDataset",
    "FashionMnistDataset",
    "ImageFolderDataset",
    "InMemoryDataset",
    "InvalidAnnotationError",
    "MalformedRowError",
    "MapperDataset",
    "MissingColumnError",
    "MissingSplitError",
    "MnistDataset",
    "MnistItem",
    "PartialDataset",
    "SamplerDataset",
    "SchemaMismatchError",
    "SelectionDataset",
    "ShuffledDataset",
    "SqliteDataset",
    "SqliteDatasetWriter",
    "WindowsDataset",
    "source",
    "train_valid_split",
    "transform",
]
