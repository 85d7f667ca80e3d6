"""Dataset transforms: lazy views that map, slice, shuffle, sample, window or concatenate."""

from burn_dataset.transform.composed import ComposedDataset
from burn_dataset.transform.mapper import MapperDataset
from burn_dataset.transform.partial import PartialDataset
from burn_dataset.transform.sampler import SamplerDataset
from burn_dataset.transform.selection import SelectionDataset
from burn_dataset.transform.shuffled import ShuffledDataset
from burn_dataset.transform.split import train_valid_split
from burn_dataset.transform.window import WindowsDataset

__all__ = [
    "ComposedDataset",
    "MapperDataset",
    "PartialDataset",
    "SamplerDataset",
    "SelectionDataset",
    "ShuffledDataset",
    "WindowsDataset",
    "train_valid_split",
]
