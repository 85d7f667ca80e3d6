"""A restricted unpickler for torch checkpoints: it never runs code from the file.

`find_class` resolves only an allow-list of globals, each mapped to a local, side-effect-free
stand-in (tensor rebuilds become `TensorRef`s, later resolved into strided numpy views over the
storages' bytes); any other global raises `UnsafePickleError` before anything is called.
Pickle can only call what `find_class` (or `persistent_load`) returns, so nothing from the
file executes.
"""

from __future__ import annotations

import math
import pickle
from collections import OrderedDict
from dataclasses import dataclass
from typing import IO, Any

import ml_dtypes
import numpy as np

from burn.record.errors import UnsafePickleError


@dataclass(frozen=True)
class StorageType:
    """Stand-in for a `torch.*Storage` class: only its element type matters."""

    dtype: np.dtype


_STORAGE_DTYPES = {
    "DoubleStorage": np.float64, "FloatStorage": np.float32, "HalfStorage": np.float16,
    "BFloat16Storage": ml_dtypes.bfloat16, "LongStorage": np.int64, "IntStorage": np.int32,
    "ShortStorage": np.int16, "CharStorage": np.int8, "ByteStorage": np.uint8,
    "BoolStorage": np.bool_,
}


def strided(storage: np.ndarray, offset: int, size: tuple[int, ...],
            stride: tuple[int, ...]) -> np.ndarray:
    """A read-only view of `storage` as torch lays a tensor over it (bounds checked).

    Args:
        storage: the 1-d storage.
        offset: first element, in elements.
        size: the tensor shape.
        stride: strides in elements.
    Returns:
        The view.
    Raises:
        ValueError: for geometry reaching outside the storage.
    """
    size, stride = tuple(int(n) for n in size), tuple(int(s) for s in stride)
    if len(size) != len(stride) or min((offset, *size, *stride), default=0) < 0:
        raise ValueError(f"bad tensor geometry: offset {offset}, size {size}, stride {stride}")
    if math.prod(size) == 0:
        return np.empty(size, storage.dtype)
    end = offset + sum((n - 1) * s for n, s in zip(size, stride, strict=True)) + 1
    if end > storage.size:
        raise ValueError(f"tensor (offset {offset}, size {size}, stride {stride}) exceeds its "
                         f"storage of {storage.size} elements")
    item = storage.itemsize
    return np.lib.stride_tricks.as_strided(storage[offset:], size, [s * item for s in stride],
                                           writeable=False)


@dataclass(frozen=True)
class StorageRef:
    """A storage named by a pickle's persistent id (its bytes are read after unpickling).

    Attributes:
        dtype: the element type.
        key: the root storage's key in the checkpoint.
        numel: elements of this storage.
        start: its first element in the root storage (legacy storage views; else 0).
    """

    dtype: np.dtype
    key: str
    numel: int
    start: int = 0


@dataclass(frozen=True)
class TensorRef:
    """A tensor laid over a storage, as torch's `_rebuild_tensor_v2` describes it."""

    storage: StorageRef
    offset: int
    size: tuple[int, ...]
    stride: tuple[int, ...]

    def resolve(self, root: np.ndarray) -> np.ndarray:
        """The tensor as a read-only view of `root`, its storage's root array.

        Raises:
            ValueError: when the storage or the tensor reaches past the data.
        """
        ref = self.storage
        storage = root[ref.start:ref.start + ref.numel]
        if min(ref.start, ref.numel) < 0 or storage.size != ref.numel:
            raise ValueError(f"storage {ref.key} holds {root.size} elements, expected "
                             f"{ref.start} + {ref.numel}")
        return strided(storage, self.offset, self.size, self.stride)


def _rebuild_tensor_v2(storage: StorageRef, storage_offset: int, size: tuple[int, ...],
                       stride: tuple[int, ...], *_: Any) -> TensorRef:
    if not isinstance(storage, StorageRef):
        raise ValueError(f"tensor over a {type(storage).__name__}, not a storage")
    return TensorRef(storage, int(storage_offset), tuple(size), tuple(stride))


def _rebuild_parameter(data: TensorRef, *_: Any) -> TensorRef:
    return data


SAFE_GLOBALS: dict[tuple[str, str], Any] = {
    ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor_v2,
    ("torch._utils", "_rebuild_tensor"): _rebuild_tensor_v2,
    ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
    ("torch._utils", "_rebuild_parameter_with_state"): _rebuild_parameter,
    ("collections", "OrderedDict"): OrderedDict,
    ("torch", "Size"): tuple,
    **{("torch", name): StorageType(np.dtype(dt)) for name, dt in _STORAGE_DTYPES.items()},
}

class SafeUnpickler(pickle.Unpickler):
    """Unpickles torch pickles with only `SAFE_GLOBALS` resolvable; tensors come out as
    `TensorRef`s, and `storages` collects the dtype of every storage key seen.

    Args:
        file: the pickle stream.
        source: the checkpoint's name, for error messages.
    """

    def __init__(self, file: IO[bytes], source: str) -> None:
        super().__init__(file)
        self._source = source
        self.storages: dict[str, np.dtype] = {}

    def find_class(self, module: str, name: str) -> Any:
        try:
            return SAFE_GLOBALS[(module, name)]
        except KeyError:
            raise UnsafePickleError("load_pytorch", f"{self._source}: refusing to load a "
                                    "global outside the allow-list (nothing was run)",
                                    name=f"{module}.{name}") from None

    def persistent_load(self, pid: Any) -> StorageRef:
        """('storage', storage type, key, location, numel[, legacy view]) -> a StorageRef."""
        if not (isinstance(pid, tuple) and len(pid) in (5, 6) and pid[0] == "storage"
                and isinstance(pid[1], StorageType)):
            raise ValueError(f"unsupported persistent id {pid!r}")
        dtype, key = pid[1].dtype, str(pid[2])
        if self.storages.setdefault(key, dtype) != dtype:
            raise ValueError(f"storage {key} used with two dtypes")
        view = pid[5] if len(pid) == 6 else None
        if view is None:
            return StorageRef(dtype, key, int(pid[4]))
        _, start, numel = view
        return StorageRef(dtype, key, int(numel), int(start))
