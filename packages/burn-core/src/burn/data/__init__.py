"""Data loading (after Burn's ``burn::data::dataloader``): batchers turn dataset items into
tensors, `DataLoader` iterates over a dataset in (shuffled) batches with worker threads or
processes. Any object with ``__len__`` and ``get_many`` or ``__getitem__`` is a dataset (e.g. a
``burn_dataset.Dataset``); burn-core does not depend on burn-dataset."""

from burn.data.batcher import (
    Batcher,
    StackBatcher,
    StagedBatcher,
    collate,
    default_batcher,
    to_device,
)
from burn.data.errors import DataLoaderError, DataLoaderTimeoutError
from burn.data.loader import DataLoader, IndexedDataset, WorkerType, fetch

__all__ = [
    "Batcher",
    "DataLoader",
    "DataLoaderError",
    "DataLoaderTimeoutError",
    "IndexedDataset",
    "StackBatcher",
    "StagedBatcher",
    "WorkerType",
    "collate",
    "default_batcher",
    "fetch",
    "to_device",
]
