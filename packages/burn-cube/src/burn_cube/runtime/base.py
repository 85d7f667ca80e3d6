"""The ``Runtime`` interface every backend implements, and the arrays it hands out."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

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
    """

    name: str
    device: str
    target: str
    dtypes: frozenset[str]
    max_cube_dim: int
    max_cube_count: tuple[int, int, int]
    plane_size: int


class DeviceArray:
    """A contiguous tensor owned by a runtime.

    Args:
        runtime: The owning runtime.
        handle: The runtime's buffer object.
        shape: Shape.
        dtype: Element dtype.
    """

    def __init__(self, runtime: Runtime, handle: Any, shape: tuple[int, ...], dtype: DType):
        self.runtime = runtime
        self.handle = handle
        self.shape = shape
        self.dtype = dtype

    @property
    def size(self) -> int:
        """Number of elements."""
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def strides(self) -> tuple[int, ...]:
        """Strides in elements (C order)."""
        out, acc = [], 1
        for dim in reversed(self.shape):
            out.append(acc)
            acc *= dim
        return tuple(reversed(out))

    @property
    def nbytes(self) -> int:
        """Size in bytes."""
        return self.size * self.dtype.numpy.itemsize

    def numpy(self) -> np.ndarray:
        """Copy back to a numpy array."""
        return self.runtime.download(self)

    def __repr__(self) -> str:
        return f"DeviceArray({self.runtime.name}, shape={self.shape}, dtype={self.dtype})"


def meta_value(array: DeviceArray, field: str, dim: int, lanes: int = 1) -> int:
    """A tensor's ``len``, ``shape[dim]`` or ``stride[dim]`` as the kernel sees it: counted in
    lines of ``lanes`` elements (the last dimension is the vectorized one)."""
    if field == "len":
        return array.size // lanes
    if field == "shape":
        last = dim == len(array.shape) - 1
        return array.shape[dim] // lanes if last else array.shape[dim]
    return array.strides[dim] // lanes if dim < len(array.shape) - 1 else 1


class Runtime(ABC):
    """One device and the way to compile for it and run on it."""

    name = ""

    @property
    @abstractmethod
    def properties(self) -> Properties:
        """What the device supports."""

    @abstractmethod
    def allocate(self, shape: tuple[int, ...], dtype: DType) -> DeviceArray:
        """A zero-initialised array.

        Args:
            shape: Shape.
            dtype: Element dtype.

        Returns:
            The array.
        """

    @abstractmethod
    def upload(self, array: np.ndarray) -> DeviceArray:
        """Copy a numpy array to the device."""

    @abstractmethod
    def download(self, array: DeviceArray) -> np.ndarray:
        """Copy a device array back to numpy (waits for pending work)."""

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

    @abstractmethod
    def memory_stats(self) -> dict[str, int]:
        """Allocator statistics (bytes in use, reserved, ...)."""
