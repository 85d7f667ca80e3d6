"""The NumPy backend: Burn's eager reference backend on plain `np.ndarray` primitives.

Ops are grouped by family in mixins (creation, elementwise, layout, indexing, reduction,
module ops); `NumpyBackend` composes them with the protocol's `Backend`, numpy's MemoryError
raised as AllocationError (`allocation.py`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from burn.backend.protocol import Backend, Shape
from burn.device import Device
from burn.dtype import DType

from ._common import FROM_NUMPY
from .allocation import guard_allocations
from .creation import CreationOps
from .elementwise import ElementwiseOps
from .indexing import IndexingOps
from .layout import LayoutOps
from .module_ops import NumpyModuleOps
from .reduction import ReductionOps


@guard_allocations
class NumpyBackend(CreationOps, ElementwiseOps, LayoutOps, IndexingOps, ReductionOps,
                   NumpyModuleOps, Backend):
    """Eager backend on numpy arrays (float16 / bfloat16 computed in float32 where needed)."""

    name = "numpy"
    is_autodiff = False

    def __init__(self, seed: int | None = None) -> None:
        from .memory import keep_freed_memory

        self._initial_seed = seed
        self._device: Device | None = None
        keep_freed_memory()  # freed arrays stay in the process (see memory.py)

    def shape(self, x: np.ndarray) -> Shape:
        return x.shape

    def dtype(self, x: np.ndarray) -> DType:
        return FROM_NUMPY[x.dtype]

    def device_of(self, x: Any) -> Device:
        """Always `Device("numpy")` (numpy arrays carry no device index)."""
        device = self._device
        if device is None:
            device = self._device = Device("numpy")
        return device

    def memory_stats(self) -> dict[str, int]:
        return {}


__all__ = ["NumpyBackend"]
