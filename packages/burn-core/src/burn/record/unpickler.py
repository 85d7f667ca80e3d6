"""A restricted unpickler for torch checkpoints: it never runs code from the file.

`find_class` resolves only an allow-list of globals, each mapped to a local, side-effect-free
and immutable stand-in (a BUILD on one raises, so one file cannot change how the next loads;
tensor rebuilds become `TensorRef`s, later resolved into strided numpy views over the
storages' bytes); any other global raises `UnsafePickleError` before anything is called.
Pickle can only call what `find_class` (or `persistent_load`) returns, so nothing from the
file executes.

Before unpickling, `scan` walks the opcodes (without building anything) so that no declared
length or memo index makes the unpickler allocate more than the file holds.
"""

from __future__ import annotations

import math
import pickle
import pickletools
import reprlib
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, Any, cast

import numpy as np

from burn.dtype import DType
from burn.record.errors import UnsafePickleError


class _Immutable:
    """Refuses pickle's BUILD (state set on an object the file did not create)."""

    __slots__ = ()

    def __setstate__(self, state: object) -> None:
        raise UnsafePickleError("load_pytorch", "refusing to set state on an allow-listed "
                                "global (BUILD on a stand-in)", stand_in=type(self).__name__)


@dataclass(frozen=True)
class StorageType(_Immutable):
    """Stand-in for a `torch.*Storage` class: only its element type matters, by numpy name
    (bfloat16 is ml_dtypes', imported by the first bfloat16 storage, not at import)."""

    name: str

    @property
    def dtype(self) -> np.dtype:
        """The element type."""
        return DType.bfloat16.numpy if self.name == "bfloat16" else np.dtype(self.name)


@dataclass(frozen=True)
class _Function(_Immutable):
    """Stand-in for an allow-listed callable (a class or function)."""

    call: Callable[..., Any]

    def __call__(self, *args: Any) -> Any:
        return self.call(*args)


_STORAGE_DTYPES = {
    "DoubleStorage": "float64", "FloatStorage": "float32", "HalfStorage": "float16",
    "BFloat16Storage": "bfloat16", "LongStorage": "int64", "IntStorage": "int32",
    "ShortStorage": "int16", "CharStorage": "int8", "ByteStorage": "uint8",
    "BoolStorage": "bool",
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
    if math.prod(size) > storage.size:
        raise ValueError(f"tensor of size {size} (stride {stride}) has more elements than its "
                         f"storage of {storage.size}: refusing to expand it")
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


SAFE_GLOBALS: dict[tuple[str, str], _Immutable] = {
    ("torch._utils", "_rebuild_tensor_v2"): _Function(_rebuild_tensor_v2),
    ("torch._utils", "_rebuild_tensor"): _Function(_rebuild_tensor_v2),
    ("torch._utils", "_rebuild_parameter"): _Function(_rebuild_parameter),
    ("torch._utils", "_rebuild_parameter_with_state"): _Function(_rebuild_parameter),
    ("collections", "OrderedDict"): _Function(OrderedDict),
    ("torch", "Size"): _Function(tuple),
    **{("torch", name): StorageType(dt) for name, dt in _STORAGE_DTYPES.items()},
}

_MEMO_PUTS = frozenset(("PUT", "BINPUT", "LONG_BINPUT"))


class BoundedReader:
    """A read-only view of `file` that never reads past `end` (so a declared length can never
    make a read allocate more than the file holds).

    Args:
        file: a seekable binary file.
        end: the absolute position reads stop at.
    """

    def __init__(self, file: IO[bytes], end: int) -> None:
        self._file, self._end = file, end

    def _left(self, n: int) -> int:
        left = max(self._end - self._file.tell(), 0)
        return left if n < 0 else min(n, left)

    def read(self, n: int = -1) -> bytes:
        return self._file.read(self._left(n))

    def readline(self, n: int = -1) -> bytes:
        return self._file.readline(self._left(n))

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        data = self.read(len(view))
        view[:len(data)] = data
        return len(data)

    def tell(self) -> int:
        return self._file.tell()

    def seek(self, position: int) -> int:
        return self._file.seek(position)


def scan(file: BoundedReader) -> None:
    """Walk one pickle's opcodes from the current position (building nothing), then rewind.

    Raises:
        ValueError: for a malformed or truncated pickle, or a memo index beyond the pickle's
            opcode count (pickle's memo table would grow to that index).
    """
    start = file.tell()
    count, top = 0, -1
    for opcode, arg, _ in pickletools.genops(cast(IO[bytes], file)):
        count += 1
        if opcode.name in _MEMO_PUTS and isinstance(arg, int):
            top = max(top, arg)
    if top >= count:
        raise ValueError(f"memo index {top} beyond the pickle's {count} opcodes")
    file.seek(start)

class SafeUnpickler(pickle.Unpickler):
    """Unpickles torch pickles with only `SAFE_GLOBALS` resolvable; tensors come out as
    `TensorRef`s, and `storages` collects the dtype of every storage key seen.

    Args:
        file: the pickle stream.
        source: the checkpoint's name, for error messages.
    """

    def __init__(self, file: BoundedReader, source: str) -> None:
        super().__init__(file)
        self._file = file
        self._source = source
        self.storages: dict[str, tuple[np.dtype, int]] = {}

    def load(self) -> Any:
        """Scan (see `scan`), then unpickle the next pickle of the file."""
        scan(self._file)
        return super().load()

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
            raise ValueError(f"unsupported persistent id {reprlib.repr(pid)}")
        dtype, key = pid[1].dtype, str(pid[2])
        if self.storages.setdefault(key, (dtype, int(pid[4]))) != (dtype, int(pid[4])):
            raise ValueError(f"storage {key} used with two dtypes or sizes")
        view = pid[5] if len(pid) == 6 else None
        if view is None:
            return StorageRef(dtype, key, int(pid[4]))
        _, start, numel = view
        return StorageRef(dtype, key, int(numel), int(start))
