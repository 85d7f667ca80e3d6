"""The ``Runtime`` interface every backend implements, and the arrays it hands out."""

from __future__ import annotations

import functools
import math
import sys
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from burn_cube.errors import LaunchError
from burn_cube.ir.nodes import KernelIR
from burn_cube.types import DType


@dataclass(frozen=True)
class Properties:
    """What a runtime's device supports.

    Args:
        name: Runtime name (``cpu``, ``wgpu``, ``cuda``).
        device: Human-readable device description.
        target: Code-generation target (``c``, ``wgsl``, ``cuda``).
        dtypes: Names of the dtypes tensors and scalars may have.
        max_cube_dim: Most units per cube.
        max_cube_count: Most cubes per dimension.
        plane_size: Units per plane (subgroup); 0 when plane ops are unavailable.
        max_tensors: Most tensor parameters one kernel may take; 0 when there is no limit.
        max_unit_loop: Most iterations a unit's loops run in all, past which the device ends
            them without an error (Mesa's llvmpipe: 65535); 0 when there is no such bound.
    """

    name: str
    device: str
    target: str
    dtypes: frozenset[str]
    max_cube_dim: int
    max_cube_count: tuple[int, int, int]
    plane_size: int
    max_tensors: int = 0
    max_unit_loop: int = 0


class DeviceArray:
    """A tensor owned by a runtime: contiguous, or a strided view of another array's storage.

    Args:
        runtime: The owning runtime.
        handle: The runtime's buffer object (a view shares its base's).
        shape: Shape.
        dtype: Element dtype.
        strides: Strides in elements (None: C order); 0 broadcasts a dimension.
        offset: Element index of the first element in the storage.
        base: The array whose storage a view reads (None for an owning array).
    """

    __slots__ = ("runtime", "handle", "shape", "dtype", "_strides", "offset", "base", "address",
                 "shared", "__weakref__")

    def __init__(self, runtime: Runtime, handle: Any, shape: tuple[int, ...], dtype: DType,
                 strides: tuple[int, ...] | None = None, offset: int = 0,
                 base: DeviceArray | None = None):
        self.runtime = runtime
        self.handle = handle
        self.shape = shape
        self.dtype = dtype
        self._strides = strides
        self.offset = offset
        self.base = base
        #: the storage's device address where the runtime has one (cached by the runtime).
        self.address: int | None = None
        #: whether the storage was handed to another library (a DLPack export): never pooled.
        self.shared = False

    @property
    def size(self) -> int:
        """Number of elements."""
        return math.prod(self.shape)

    @property
    def strides(self) -> tuple[int, ...]:
        """Strides in elements (C order unless this is a strided view)."""
        if self._strides is not None:
            return self._strides
        strides = _C_STRIDES.get(self.shape)
        if strides is None:
            out, acc = [], 1
            for dim in reversed(self.shape):
                out.append(acc)
                acc *= dim
            strides = tuple(reversed(out))
            if len(_C_STRIDES) >= 4096:
                _C_STRIDES.clear()
            _C_STRIDES[self.shape] = strides
        return strides

    @property
    def extent(self) -> int:
        """Number of elements of the underlying storage."""
        return self.base.extent if self.base is not None else self.size

    @property
    def is_view(self) -> bool:
        """Whether this array reads another array's storage with its own layout."""
        return self.base is not None

    def view(self, shape: tuple[int, ...], strides: tuple[int, ...], offset: int = 0
             ) -> DeviceArray:
        """A strided view of this array's storage, read in place by kernels (use ``index_of``
        in the kernel to address its logical elements).

        Args:
            shape: Shape of the view.
            strides: Element strides (>= 0; 0 broadcasts the dimension).
            offset: Storage index of the view's first element.

        Returns:
            The view (it keeps this array alive).

        Raises:
            LaunchError: Negative strides or offset, or elements outside the storage.
        """
        shape, strides = tuple(map(int, shape)), tuple(map(int, strides))
        if len(shape) != len(strides) or offset < 0 or (shape and (
                min(shape) < 0 or min(strides) < 0)):
            raise LaunchError(f"bad view of a {self.shape} {self.dtype} array: shape {shape}, "
                              f"strides {strides}, offset {offset} (non-negative, one stride "
                              "per dimension)")
        last = offset
        for dim, stride in zip(shape, strides, strict=True):
            last += (dim - 1) * stride
        if 0 not in shape and last >= self.extent:
            raise LaunchError(f"view with shape {shape}, strides {strides}, offset {offset} "
                              f"reaches element {last} of a storage of {self.extent}")
        root = self.base if self.base is not None else self
        return DeviceArray(self.runtime, self.handle, shape, self.dtype, strides, offset, root)

    def view_unchecked(self, shape: tuple[int, ...], strides: tuple[int, ...], offset: int
                       ) -> DeviceArray:
        """``view`` without its checks, for callers that derive the layout from this one's
        (a broadcast, a flattening) and so stay inside the storage.

        Args:
            shape: Shape of the view (a tuple of ints).
            strides: Element strides (a tuple of ints).
            offset: Storage index of the view's first element.

        Returns:
            The view.
        """
        root = self.base if self.base is not None else self
        return DeviceArray(self.runtime, self.handle, shape, self.dtype, strides, offset, root)

    @property
    def nbytes(self) -> int:
        """Size in bytes."""
        return self.size * self.dtype.numpy.itemsize

    def numpy(self) -> np.ndarray:
        """Copy back to a numpy array."""
        return self.runtime.download(self)

    def __repr__(self) -> str:
        layout = f", strides={self.strides}, offset={self.offset}" if self.is_view else ""
        return f"DeviceArray({self.runtime.name}, shape={self.shape}, dtype={self.dtype}{layout})"


#: C-order strides by shape (launches ask for an owning array's strides often).
_C_STRIDES: dict[tuple[int, ...], tuple[int, ...]] = {}

#: References to a dying pooled array's buffer while `PooledArray.__del__` looks at it (the
#: array's, the local name's and `sys.getrefcount`'s own): more means something else still
#: holds the buffer (a numpy or CuPy view, an export, or a dying view of the array: a view
#: lets go of its base before its own reference to the buffer).
_RECLAIM_REFS = 3
#: References to a held buffer that only the pool keeps (its entry's and `sys.getrefcount`'s).
_HELD_REFS = 2
#: Most held buffers kept per shape and dtype.
_HELD_PER_KEY = 8
_refcount = sys.getrefcount


class BufferPool:
    """Buffers of dead arrays kept by shape and dtype for a runtime's `empty` to hand out
    again, with their addresses, up to `limit` bytes (work is in order on one queue, so a
    buffer whose last readers are queued may be rewritten by work queued after them). Where a
    buffer would pass the limit, the buffers of the shapes kept least recently make room for
    it: a program whose shapes change (another phase, batch size or sequence length) pools
    its new shapes instead of keeping the old ones for good.

    Args:
        limit: The most bytes kept.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        Entries = dict[tuple[tuple[int, ...], str], list[tuple[Any, int | None]]]
        #: (shape, dtype name) -> free (buffer, address) pairs.
        self.free: Entries = {}
        #: (shape, dtype name) -> (buffer, address) pairs of dead arrays whose buffer something
        #: else still held; handed out once only the pool holds them.
        self.held: Entries = {}
        #: bytes kept, and buffers handed out again.
        self.bytes = 0
        self.reused = 0
        #: (shape, dtype name) -> when a buffer of it was last kept (a count of `keep`s).
        self.kept_at: dict[tuple[tuple[int, ...], str], int] = {}
        self.keeps = 0

    def take(self, shape: tuple[int, ...], dtype: DType) -> tuple[Any, int | None] | None:
        """A free (buffer, address) of that shape and dtype, or None."""
        key = (shape, dtype.name)
        free = self.free.get(key)
        if free:
            try:
                found = free.pop()
            except IndexError:  # another thread took the last one
                pass
            else:
                self.bytes -= found[0].nbytes
                self.reused += 1
                return found
        held = self.held.get(key)
        return self._reclaim(held) if held else None

    def array(self, runtime: Runtime, shape: tuple[int, ...], dtype: DType
              ) -> PooledArray | None:
        """A `runtime` array over a free buffer of that shape and dtype (its address known, as
        kept), or None: a pooling runtime's `empty` before it allocates."""
        found = self.take(shape, dtype)
        if found is None:
            return None
        array = PooledArray(runtime, found[0], shape, dtype)
        array.address = found[1]
        return array

    def _reclaim(self, held: list[tuple[Any, int | None]]) -> tuple[Any, int | None] | None:
        """The first of `held`'s buffers that only the pool holds now, taken out (the others
        keep their order), or None."""
        for _ in range(len(held)):
            try:
                entry = held.pop(0)
            except IndexError:
                break
            if _refcount(entry[0]) <= _HELD_REFS:
                self.bytes -= entry[0].nbytes
                self.reused += 1
                return entry
            held.append(entry)
        return None

    def keep(self, shape: tuple[int, ...], dtype: DType, buffer: Any, address: int | None,
             held: bool = False) -> None:
        """Keep a dead array's buffer, where the pool is full making room by dropping the
        buffers of the shapes kept least recently; `held`: something else still holds it
        (`take` hands it out once nothing does)."""
        nbytes = buffer.nbytes
        if not nbytes:
            return
        key = (shape, dtype.name)
        pool = self.held if held else self.free
        entries = pool.get(key)
        if held and entries is not None and len(entries) >= _HELD_PER_KEY:
            return
        if self.bytes + nbytes > self.limit and not self._room(nbytes, key):
            return
        if entries is None:
            entries = pool.setdefault(key, [])
        entries.append((buffer, address))
        self.bytes += nbytes
        self.kept_at[key] = self.keeps = self.keeps + 1

    def _room(self, nbytes: int, keep: tuple[tuple[int, ...], str]) -> bool:
        """Whether `nbytes` more fit once the buffers of the shapes kept least recently (not
        `keep`'s, the shape being kept) are dropped as needed."""
        if nbytes > self.limit:
            return False
        for key in sorted(self.kept_at, key=self.kept_at.__getitem__):
            if key == keep:
                continue
            for pool in (self.free, self.held):
                entries = pool.get(key)
                while entries and self.bytes + nbytes > self.limit:
                    try:
                        buffer = entries.pop()[0]
                    except IndexError:  # another thread took the last one
                        break
                    self.bytes -= buffer.nbytes
            if not self.free.get(key) and not self.held.get(key):
                self.kept_at.pop(key, None)
            if self.bytes + nbytes <= self.limit:
                return True
        return False

    def clear(self) -> None:
        """Drop every kept buffer (the allocator underneath gets them back)."""
        self.free.clear()
        self.held.clear()
        self.kept_at.clear()
        self.bytes = 0


class PooledArray(DeviceArray):
    """An owning array from a pooling runtime's `empty` (its `buffers`, a `BufferPool`): its
    buffer returns to the pool when it dies, to be handed out once nothing else holds it (never
    once `shared`: a DLPack export holds the memory without a reference Python can count)."""

    __slots__ = ()

    def __del__(self) -> None:
        """Keep the buffer in the runtime's pool (held while something else holds it)."""
        try:
            handle = self.handle
            if self.base is not None or self.shared:
                return
            held = _refcount(handle) > _RECLAIM_REFS  # counted before `handle` is an argument
            runtime: Any = self.runtime
            runtime.buffers.keep(self.shape, self.dtype, handle, self.address, held)
        except Exception:  # noqa: S110 - at interpreter exit the module may be torn down
            pass


def batch_offsets(batch: tuple[int, ...], strides: Sequence[tuple[int, ...]]) -> np.ndarray:
    """The element offset of every matrix of each operand from its first one's, batch
    indices in row-major order (what batched products read their matrices by: the cpu gemm's
    batch, cuBLAS's pointer arrays).

    Args:
        batch: the batch dims.
        strides: per operand, its element strides over those dims (0 where broadcast).
    Returns:
        [operands, prod(batch)] int64 offsets.
    """
    offsets = np.zeros((len(strides), *batch), np.int64)
    for dim, size in enumerate(batch):
        step = np.arange(size, dtype=np.int64).reshape((size,) + (1,) * (len(batch) - 1 - dim))
        for operand, stride in zip(offsets, strides, strict=True):
            operand += step * stride[dim]
    return offsets.reshape(len(strides), -1)


def gather_view(storage: np.ndarray, view: DeviceArray) -> np.ndarray:
    """The elements of a view, as a new contiguous array, from its base's downloaded storage."""
    flat = storage.reshape(-1)
    item = flat.itemsize
    return np.lib.stride_tricks.as_strided(
        flat[view.offset:], view.shape, tuple(s * item for s in view.strides)).copy()


def meta_value(array: DeviceArray, field: str, dim: int, lanes: int = 1) -> int:
    """A tensor's ``len``, ``shape[dim]``, ``stride[dim]``, ``offset`` or ``extent`` as the
    kernel sees it: counted in lines of ``lanes`` elements (the last dimension is the
    vectorized one)."""
    if field == "len":
        return array.size // lanes
    if field == "offset":
        return array.offset // lanes
    if field == "extent":
        return array.extent // lanes
    if field == "shape":
        last = dim == len(array.shape) - 1
        return array.shape[dim] // lanes if last else array.shape[dim]
    return array.strides[dim] // lanes if dim < len(array.shape) - 1 else array.strides[dim]


def direct_range(dtype: DType) -> tuple[type, Any, Any]:
    """The Python numbers a launch may pack into a scalar parameter of `dtype` as they are
    (the same bytes as `scalar_converter`'s result): (type, low, high); floats of f64 but
    NaN, of f32 within its finite range, ints of an integer dtype within its range (none for
    other dtypes)."""
    if dtype.name == "f64":
        return float, -math.inf, math.inf
    if dtype.name == "f32":
        top = float(np.finfo(np.float32).max)
        return float, -top, top
    bounds = int_range(dtype)
    return (int, *bounds) if bounds is not None else (_Never, 0, 0)


class _Never:
    """A type no launch argument has (`direct_range` of dtypes whose numbers always convert)."""


def scalar_converter(dtype: DType, kernel: str, name: str) -> Callable[[Any], Any]:
    """The check and conversion of scalar argument ``name`` of ``dtype`` at a launch: a
    Python number (or numpy scalar) becomes the numpy scalar passed to the kernel.

    Returns:
        The converter; it raises ``LaunchError`` for a value that is not a number, a float
        for an integer dtype, or an integer out of the dtype's range. A number past a float
        dtype's largest finite value rounds to an infinity, NaN stays NaN (quietly: numpy
        warns of the overflow).
    """
    numpy_type = dtype.numpy.type
    low, high = int_range(dtype) or (None, None)
    finite = largest_finite(dtype)

    def convert(value: Any) -> Any:
        kind = type(value)
        if kind is float or kind is bool or (kind is int and low is None):
            if kind is bool or (low is None and -finite <= value <= finite):
                return numpy_type(value)
        elif kind is int and low <= value <= high:  # type: ignore[operator]
            return numpy_type(value)
        if isinstance(value, np.ndarray | DeviceArray) or not isinstance(
                value, int | float | bool | np.generic):
            raise LaunchError(f"`{name}` must be a {dtype} scalar, got {type(value).__name__}",
                              kernel)
        if low is not None and (isinstance(value, float | np.floating) or
                                not low <= int(value) <= high):  # type: ignore[operator]
            raise LaunchError(f"`{name}` = {value!r} does not fit {dtype}", kernel)
        with np.errstate(over="ignore", invalid="ignore"):
            return numpy_type(value)

    return convert


@functools.cache
def largest_finite(dtype: DType) -> float:
    """The largest finite value of a float dtype (infinity for the others)."""
    if not dtype.is_float:
        return math.inf
    if dtype.numpy.kind != "f":  # bfloat16: ml_dtypes' finfo (numpy's may not know it)
        import ml_dtypes

        return float(ml_dtypes.finfo(dtype.numpy).max)
    return float(np.finfo(dtype.numpy).max)


def int_range(dtype: DType) -> tuple[int, int] | None:
    """The values of an integer dtype (None for floats and bool)."""
    if not dtype.is_integer:
        return None
    info = np.iinfo(dtype.numpy)
    return int(info.min), int(info.max)


class Runtime(ABC):
    """One device and the way to compile for it and run on it.

    Args:
        index: Device index (see ``devices``).

    Attributes:
        launches: kernels launched on this runtime so far (planned launches included; a
            kernel profiler's count, cheap enough to keep always).
    """

    name = ""
    launches = 0

    def __init__(self, index: int = 0) -> None:
        self.index = index

    @classmethod
    def devices(cls) -> list[str]:
        """Descriptions of the devices this runtime can use, in index order (one by default)."""
        return [cls.name]

    @property
    @abstractmethod
    def properties(self) -> Properties:
        """What the device supports."""

    def fits(self, shape: tuple[int, ...], dtype: DType) -> bool:
        """Whether an array of `shape` and `dtype` is within the device's fixed limits (its
        largest buffer, its whole memory): False where `empty` of it can never succeed,
        whatever is free. True here: host memory is the caller's to check."""
        return True

    @abstractmethod
    def allocate(self, shape: tuple[int, ...], dtype: DType) -> DeviceArray:
        """A zero-initialised array.

        Args:
            shape: Shape.
            dtype: Element dtype.

        Returns:
            The array.
        """

    def empty(self, shape: tuple[int, ...], dtype: DType) -> DeviceArray:
        """An array whose contents are undefined (runtimes that can skip the zero fill do;
        the cpu runtime hands out a pooled buffer of a dead array).

        Args:
            shape: Shape.
            dtype: Element dtype.

        Returns:
            The array.
        """
        return self.allocate(shape, dtype)

    def host_mapped(self, shape: tuple[int, ...], dtype: DType
                    ) -> tuple[DeviceArray, np.ndarray] | None:
        """A zero-initialised array in host memory that kernels write and the host reads in
        place, after `sync()` (no download), where the runtime has such memory; else None.

        Args:
            shape: Shape.
            dtype: Element dtype.

        Returns:
            The array and its numpy view, or None.
        """
        return None

    @abstractmethod
    def upload(self, array: np.ndarray) -> DeviceArray:
        """Copy a numpy array to the device."""

    def download(self, array: DeviceArray) -> np.ndarray:
        """Copy a device array (or the elements of a view) back to numpy (waits for pending
        work)."""
        if array.base is not None:
            return gather_view(self.download_storage(array.base), array)
        return self.download_storage(array)

    @abstractmethod
    def download_storage(self, array: DeviceArray) -> np.ndarray:
        """Copy an owning (non-view) device array back to numpy, waiting for pending work."""

    @abstractmethod
    def compile(self, kernel: KernelIR) -> Any:
        """Compile one kernel specialization into a launchable object."""

    @abstractmethod
    def launch(self, compiled: Any, kernel: KernelIR, cube_count: tuple[int, int, int],
               args: list[Any]) -> None:
        """Run a compiled kernel.

        Args:
            compiled: Result of ``compile``.
            kernel: Its IR (parameter layout).
            cube_count: Cubes along x, y, z.
            args: One per IR parameter: a DeviceArray or a numpy scalar.
        """

    def plan(self, compiled: Any, kernel: KernelIR, cube_count: tuple[int, int, int],
             args: list[Any]) -> Callable[[Any], None]:
        """A launcher of ``compiled`` for repeated launches with arguments laid out as ``args``.

        The launcher takes one argument per IR parameter: a DeviceArray whose storage replaces
        that of the array at its position in ``args`` (its layout, the shape, strides, offset
        and extent, is taken from ``args``: the caller keeps them equal), or a Python number
        for a scalar (checked and converted as ``scalar_converter`` does). By default it makes
        the views and calls ``launch``; runtimes override it to prepare the launch once.

        Args:
            compiled: Result of ``compile``.
            kernel: Its IR (parameter layout).
            cube_count: Cubes along x, y, z.
            args: Example runtime arguments (as for ``launch``).

        Returns:
            The launcher.
        """
        convert = [None if p.tensor else scalar_converter(p.dtype, kernel.name, p.name)
                   for p in kernel.params]
        # the views' layouts only: a plan must not keep the example arrays' storage alive
        layouts = [(a.shape, a.strides, a.offset) if isinstance(a, DeviceArray) and
                   a.base is not None else None for a in args]
        launch = self.launch

        def launcher(values: Any) -> None:
            out: list[Any] = []
            for value, conv, layout in zip(values, convert, layouts, strict=True):
                if conv is not None:
                    value = conv(value)
                elif layout is not None:
                    value = value.view_unchecked(*layout)
                elif value.base is not None:
                    value = value.base  # the example owned its storage: so does the launch
                out.append(value)
            launch(compiled, kernel, cube_count, out)

        return launcher

    def cached(self, identity: str, valid: Callable[[dict[str, str]], bool]
               ) -> tuple[Any, KernelIR] | None:
        """A compiled kernel from the persistent launch index, without lowering it.

        Args:
            identity: Hash of the kernel's source text and specialization.
            valid: Checks the entry's recorded global fingerprints against the current values.

        Returns:
            ``(compiled, interface-only IR)``, or None on a miss (the default: no index).
        """
        return None

    def remember(self, identity: str, kernel: KernelIR, compiled: Any) -> None:
        """Record ``compiled`` under ``identity`` for ``cached`` (no-op by default)."""
        return None

    @abstractmethod
    def sync(self) -> None:
        """Wait for all submitted work."""

    def flush(self) -> None:
        """Start the launches queued on the host without waiting for them (a no-op where a
        launch starts when it is made: the cpu runtime runs it, CUDA's stream queues it)."""
        return None

    @abstractmethod
    def memory_stats(self) -> dict[str, int]:
        """Allocator statistics (bytes in use, reserved, ...)."""
