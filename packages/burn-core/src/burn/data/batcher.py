"""Batchers: turn a list of dataset items into a batch of tensors on a device.

`Batcher` is Burn's trait: ``batch(items, device) -> Batch``. A `StagedBatcher` splits that
into a numpy-only ``collate(items)`` (picklable output; process workers run it) and
``to_device(collated, device)`` (tensor creation, run where the tensors are used).
`StackBatcher` / `default_batcher` stack items like ``torch.utils.data.default_collate``.

`collate` takes the memory of its stacked arrays from `empty_array`, which process workers
point at shared memory so that batches are stacked straight into the block they travel in.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from typing import Any, Protocol, TypeVar, runtime_checkable

import numpy as np

from burn.device import Device
from burn.dtype import DType, as_dtype
from burn.frontend import tensor

# invariant: items come as a `list`, which is invariant in its element type
ItemT = TypeVar("ItemT")
BatchT_co = TypeVar("BatchT_co", covariant=True)

empty_array: ContextVar[Callable[[tuple[int, ...], np.dtype], np.ndarray]] = ContextVar(
    "empty_array", default=np.empty)
"""Allocator of the arrays `collate` stacks into: ``(shape, dtype) -> uninitialized array``."""


@runtime_checkable
class Batcher(Protocol[ItemT, BatchT_co]):
    """Turns items into a batch on a device (Burn's ``Batcher`` trait)."""

    def batch(self, items: list[ItemT], device: Device) -> BatchT_co:
        """Args:
            items: the dataset items of one batch, in order.
            device: where the batch's tensors go.

        Returns:
            The batch.
        """
        ...


@runtime_checkable
class StagedBatcher(Batcher[ItemT, BatchT_co], Protocol):
    """A Batcher in two stages, so that process workers can do the numpy part.

    ``batch(items, device)`` must equal ``to_device(collate(items), device)``.
    """

    def collate(self, items: list[ItemT]) -> Any:
        """Combine items into numpy arrays (no tensors; the result must be picklable)."""
        ...

    def to_device(self, collated: Any, device: Device) -> BatchT_co:
        """Turn the output of `collate` into the batch on ``device``."""
        ...


def _is_namedtuple(value: object) -> bool:
    return isinstance(value, tuple) and hasattr(value, "_fields")


def _is_dataclass_instance(value: object) -> bool:
    return dataclasses.is_dataclass(value) and not isinstance(value, type)


def _init_fields(value: object) -> list[str]:
    return [f.name for f in dataclasses.fields(value) if f.init]  # type: ignore[arg-type]


def collate(items: Sequence[Any]) -> Any:
    """Stack items into numpy arrays, following ``torch.utils.data.default_collate``.

    Rules, applied recursively on the first item's type: numpy arrays and numpy scalars are
    stacked keeping their dtype (uint8 stays uint8, float64 stays float64); Python bools,
    ints and floats become bool, int64 and float64 arrays (torch's rule); strings, bytes and
    paths stay a list; mappings become a dict of collated values; tuples, namedtuples, lists and
    dataclasses are collated field by field into the same type (torch turns plain tuples into
    lists; here they stay tuples).

    Args:
        items: a non-empty sequence of items of one structure.

    Returns:
        The collated structure.

    Raises:
        ValueError: for no item, arrays of different shapes or sequences of different lengths.
        TypeError: for items of another type (None, objects, string arrays).
    """
    if not items:
        raise ValueError("collate: no item to collate")
    first = items[0]
    if isinstance(first, np.ndarray | np.generic):
        if first.dtype.kind not in "biuf":
            raise TypeError(f"collate: numpy dtype {first.dtype} is not numeric")
        shapes = {np.shape(x) for x in items}
        if len(shapes) > 1:
            raise ValueError(f"collate: arrays of different shapes {sorted(shapes)}")
        out = empty_array.get()((len(items), *np.shape(first)), np.result_type(*items))
        return np.stack(items, out=out)
    if isinstance(first, bool | int | float):
        dtype = np.bool_ if isinstance(first, bool) else np.int64 if isinstance(
            first, int) else np.float64
        return np.array(items, dtype=dtype)
    if isinstance(first, str | bytes | os.PathLike):
        return list(items)
    if isinstance(first, Mapping):
        return {key: collate([item[key] for item in items]) for key in first}
    if _is_dataclass_instance(first):
        return dataclasses.replace(first, **{
            name: collate([getattr(item, name) for item in items])
            for name in _init_fields(first)
        })
    if isinstance(first, tuple | list):
        if len({len(item) for item in items}) > 1:
            raise ValueError("collate: sequences of different lengths in one batch")
        fields = [collate(column) for column in zip(*items, strict=True)]
        if _is_namedtuple(first):
            return type(first)(*fields)
        return tuple(fields) if isinstance(first, tuple) else fields
    raise TypeError(
        f"collate: items must be numpy arrays, numbers, strings, mappings, sequences or "
        f"dataclasses of them, got {type(first).__name__}"
    )


def map_leaves(fn: Callable[[Any], Any], value: Any) -> Any:
    """Apply ``fn`` to every leaf of a nest of dicts, tuples, namedtuples, lists and dataclasses.

    Args:
        fn: called on each leaf (anything that is not one of those containers).
        value: the nested structure.

    Returns:
        The same structure with ``fn(leaf)`` in place of each leaf.
    """
    if isinstance(value, dict):
        return {k: map_leaves(fn, v) for k, v in value.items()}
    if _is_dataclass_instance(value):
        return dataclasses.replace(value, **{
            name: map_leaves(fn, getattr(value, name)) for name in _init_fields(value)})
    if isinstance(value, tuple | list):
        fields = [map_leaves(fn, v) for v in value]
        return type(value)(*fields) if _is_namedtuple(value) else type(value)(fields)
    return fn(value)


def to_device(collated: Any, device: Device, float_dtype: DType | None = None) -> Any:
    """Turn every numpy array in a collated structure into a tensor on ``device``.

    Args:
        collated: output of `collate`.
        device: where the tensors go.
        float_dtype: dtype floating arrays are cast to; None keeps theirs.

    Returns:
        The same structure with tensors in place of arrays (strings are left as they are).
    """
    def leaf(value: Any) -> Any:
        if not isinstance(value, np.ndarray):
            return value
        cast = float_dtype if float_dtype is not None and value.dtype.kind == "f" else None
        return tensor(value, dtype=cast, device=device)

    return map_leaves(leaf, collated)


class StackBatcher:
    """Stacks items into tensors, as ``torch.utils.data.default_collate`` does (see `collate`).

    dtypes are kept (uint8 images stay uint8, float64 arrays stay float64, Python floats give
    float64) unless ``float_dtype`` is set. ``to_device`` copies the collated arrays into the
    backend (through its ``*_from_data``).

    Args:
        float_dtype: dtype every floating array is cast to (e.g. ``burn.float32``); None keeps
            each array's dtype.
    """

    def __init__(self, float_dtype: DType | str | None = None) -> None:
        self.float_dtype = None if float_dtype is None else as_dtype(float_dtype, "StackBatcher")

    def collate(self, items: list[Any]) -> Any:
        """Numpy stage: see `collate`."""
        return collate(items)

    def to_device(self, collated: Any, device: Device) -> Any:
        """Tensor stage: see `to_device`."""
        return to_device(collated, device, self.float_dtype)

    def batch(self, items: list[Any], device: Device) -> Any:
        """The collated items as tensors on ``device``."""
        return self.to_device(self.collate(items), device)

    def __repr__(self) -> str:
        return f"StackBatcher(float_dtype={self.float_dtype})"


default_batcher = StackBatcher()
