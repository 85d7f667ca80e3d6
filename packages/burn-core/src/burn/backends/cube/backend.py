"""`CubeBackend`: one backend over burn-cube's runtimes; `cpu`, `wgpu` and `cuda` devices.

A primitive is a `CubeTensor` (a device buffer, or a strided view of one, and a burn dtype).
Ops come from family modules (creation, elementwise, layout, ...); an op no family has a
kernel for yet runs on the host NumPy backend (`fallback.py`), counted in `fallbacks`.
"""

from __future__ import annotations

import math
import operator
import types
from collections import Counter
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from burn.backend.calling_op import calling_op
from burn.backend.protocol import Backend
from burn.device import Device
from burn.dtype import DType, from_numpy
from burn.errors import AllocationError
from burn.ir import OPS
from burn.ir.cube import CUBE_DTYPES, cube_dtype

from . import layout
from .checks import pending
from .creation import CubeCreationOps
from .cumulative import CubeCumulativeOps
from .elementwise import ELEMENTWISE_METHODS, MAX_PLANS
from .fallback import fallback_method
from .indexing import CubeIndexingOps
from .math import CubeMathOps
from .matmul import CubeMatmulOps
from .module.conv import CubeConvOps
from .module.pool import CubePoolOps
from .module.resize import CubeResizeOps
from .module.sample import CubeSampleOps
from .random import CubeRandomOps
from .reduction import CubeReductionOps
from .sort import CubeSortOps
from .tensor import CubeTensor, Shape, host_view, layout_key, strided_storage

#: Units per cube of the 1-d kernels (elementwise, copies, fills).
CUBE_DIM = 256
#: burn-cube dtype by the burn dtype's id (enum members hash in Python; allocations ask often).
_CUBE_BY_ID: dict[int, Any] = {}
#: numpy dtype -> (burn dtype, burn-cube dtype) of host results the cpu runtime holds as they
#: are (`CubeBackend.from_host`: every cpu matmul's product).
_HELD_AS_IS: dict[np.dtype, tuple[DType, Any]] = {}


def _layout_method(name: str, kind: str) -> Any:
    """The layout function `name` as the method `<kind>_<name>` (a copy of the function
    under that name: no call in between, ~0.15 us an op)."""
    fn = layout.LAYOUT[name]
    method = types.FunctionType(fn.__code__, fn.__globals__, f"{kind}_{name}", fn.__defaults__,
                                fn.__closure__)
    method.__qualname__ = method.__name__
    method.__kwdefaults__ = fn.__kwdefaults__
    method.__doc__ = fn.__doc__
    return method


class CubeBackend(CubeReductionOps, CubeCumulativeOps, CubeSortOps, CubeIndexingOps, CubeConvOps,
                  CubePoolOps, CubeResizeOps, CubeSampleOps, CubeMatmulOps, CubeMathOps,
                  CubeRandomOps, CubeCreationOps, Backend):
    """A backend on one burn-cube runtime device.

    Args:
        index: the device index (``cuda:1`` is index 1).
    """

    #: the burn-cube runtime ("cpu", "wgpu", "cuda").
    runtime_name: ClassVar[str] = ""
    is_autodiff = False

    def __init__(self, index: int = 0) -> None:
        import burn_cube
        from burn.backends.numpy import NumpyBackend  # the host fallback

        self.runtime = burn_cube.runtime(self.runtime_name, index)
        self._array = burn_cube.DeviceArray  # wraps host buffers of the cpu runtime
        self.index = index
        self.device = Device(f"{self.name}:{index}" if index else self.name)
        #: the host backend of ops without a kernel yet, and its device.
        host: Any = NumpyBackend  # its ops are made at import: mypy sees them abstract
        self.host = host()
        self.host_device = Device("numpy")
        #: op name -> calls that ran on the host fallback.
        self.fallbacks: Counter[str] = Counter()
        self._dtypes = self.runtime.properties.dtypes
        #: elementwise launches by op and argument layout (`elementwise.run_elementwise`).
        self.plans: dict[tuple[Any, ...], Any] = {}

    @classmethod
    def unavailable_reason(cls) -> str | None:
        """Why the runtime cannot run here (burn-cube's message), or None."""
        try:
            import burn_cube
            from burn_cube.errors import KernelError

            burn_cube.runtime(cls.runtime_name)
        except ImportError as exc:
            return f"burn-cube is not installed ({exc})"
        except KernelError as exc:
            return str(exc)
        return None

    # --- hooks ----------------------------------------------------------------------------
    #: a primitive's shape and dtype: its attributes, read in C (the frontend asks on every op).
    shape = staticmethod(operator.attrgetter("shape"))  # type: ignore[assignment]
    dtype = staticmethod(operator.attrgetter("dtype"))  # type: ignore[assignment]

    def device_of(self, x: Any) -> Device:
        return self.device

    def supports(self, dtype: DType) -> bool:
        """Dtypes burn-cube has that the runtime's device holds (WGSL: no 8-bit ints or
        bfloat16; f64 only where the adapter has it)."""
        name = CUBE_DTYPES.get(dtype)
        return name is not None and name.rstrip("_") in self._dtypes

    def exported(self, x: CubeTensor) -> Any:
        """The tensor's memory itself where an array library can hold it: a numpy view on
        the cpu, a CuPy view on cuda (zero-copy, writes are seen by the tensor); a host copy
        on wgpu. A sync point: a failed device check (an index out of range) raises first,
        and on cuda the runtime's stream has finished (a consumer reads on its own stream,
        which does not wait for the runtime's non-blocking one; its buffer never returns to
        the runtime's pool)."""
        pending(self).raise_pending()
        if self.runtime_name == "cpu" and x.dtype is not DType.bfloat16:
            return host_view(x.array)
        if self.runtime_name == "cuda" and x.dtype not in (DType.bfloat16, DType.bool):
            import cupy

            self.runtime.sync()
            (x.array.base if x.array.base is not None else x.array).shared = True
            return strided_storage(x, cupy.lib.stride_tricks.as_strided)
        return super().exported(x)

    # --- buffers and launches -------------------------------------------------------------
    def empty(self, shape: Shape, dtype: DType, op: str = "empty") -> CubeTensor:
        """A new dense tensor (contents undefined; on the cpu and cuda, a pooled buffer of a
        dead tensor where one of that shape and dtype is free).

        Args:
            shape: its shape.
            dtype: its dtype.
            op: the op whose result it is, named by the AllocationError.
        Raises:
            AllocationError: the device is out of memory (the process stays usable).
        """
        cube = _CUBE_BY_ID.get(id(dtype))
        if cube is None:
            cube = _CUBE_BY_ID[id(dtype)] = cube_dtype("empty", dtype)
        return self.alloc(shape if type(shape) is tuple else tuple(shape), dtype, cube, op)

    def alloc(self, shape: Shape, dtype: DType, cube: Any, op: str = "empty") -> CubeTensor:
        """`empty` with the shape a tuple of ints and `cube` the burn-cube dtype of `dtype`
        (the path of launches that know both); `op` names the op its AllocationError is of
        (the result of `add`: "add")."""
        try:
            return CubeTensor(self.runtime.empty(shape, cube), dtype)
        except Exception as exc:
            raise self._allocation_error(op, shape, dtype, exc) from exc

    def upload(self, data: np.ndarray) -> CubeTensor:
        """A device tensor holding a copy of host `data` (of a dtype this device holds).

        Raises:
            AllocationError: the device is out of memory.
        """
        dtype = from_numpy(data.dtype, "from_data")
        cube = cube_dtype("from_data", dtype)
        try:
            if self.runtime_name == "cpu":  # (on a cache line where large, as kernels' outputs)
                from burn_cube.runtime.cpu import line_aligned_empty

                arr = line_aligned_empty(data.shape, cube)
                np.copyto(arr, data, casting="unsafe")
                return CubeTensor(self._array(self.runtime, arr, arr.shape, cube), dtype)
            return CubeTensor(self.runtime.upload(np.array(data, cube.numpy, order="C")), dtype)
        except Exception as exc:
            raise self._allocation_error("from_data", data.shape, dtype, exc) from exc

    def _allocation_error(self, op: str, shape: Shape, dtype: DType,
                          exc: Exception) -> Exception:
        """`AllocationError` naming the op, shape, dtype and device for the runtime's
        allocation failures (out of memory, a buffer over the device's limit); `exc` itself
        for anything else."""
        from burn_cube.errors import KernelError

        if not isinstance(exc, MemoryError | KernelError) and \
                "OutOfMemory" not in type(exc).__name__:
            return exc
        op = calling_op(op)
        return AllocationError(op, "cannot allocate on the device", shape=tuple(shape),
                               dtype=dtype.value, device=str(self.device), reason=str(exc)[:200])

    def from_host(self, data: np.ndarray) -> CubeTensor:
        """A device tensor around a host result the caller gives up (no copy on the cpu)."""
        if self.runtime_name == "cpu" and data.flags.c_contiguous:
            found = _HELD_AS_IS.get(data.dtype)
            if found is None:
                dtype = from_numpy(data.dtype, "from_data")
                cube = cube_dtype("from_data", dtype)
                if data.dtype != cube.numpy:
                    return self.upload(data)
                found = _HELD_AS_IS[data.dtype] = (dtype, cube)
            return CubeTensor(self._array(self.runtime, data, data.shape, found[1]), found[0])
        return self.upload(data)

    def planned(self, key: tuple[Any, ...], make: Callable[[], Any]) -> Any:
        """The launch plan kept under `key` in `plans`, made by `make` on first use (all are
        dropped when `MAX_PLANS` are kept)."""
        plan = self.plans.get(key)
        if plan is None:
            plan = make()
            if len(self.plans) >= MAX_PLANS:
                self.plans.clear()
            self.plans[key] = plan
        return plan

    def launch(self, kernel: Any, units: int, *args: Any) -> None:
        """Launch a 1-d kernel (`CUBE_DIM` units per cube) over at least `units` units."""
        kernel.launch(self.runtime, (max(1, math.ceil(units / CUBE_DIM)), 1, 1), CUBE_DIM,
                      *args)

    def launch_planned(self, kernel: Any, units: int, *args: Any) -> None:
        """`launch`, planned once per kernel, cube count and layout of the array arguments
        (kept in `plans`): a repeated launch only passes the arrays and the numbers."""
        self._run_planned(kernel, (-(-units // CUBE_DIM) if units > CUBE_DIM else 1, 1, 1),
                          CUBE_DIM, args)

    def launch_cubes_planned(self, kernel: Any, cube_count: tuple[int, int, int],
                             cube_dim: Any, *args: Any) -> None:
        """`kernel.launch` over `cube_count` cubes of `cube_dim` units, planned once per
        kernel, cube count and layout of the array arguments (`launch_planned`)."""
        self._run_planned(kernel, cube_count, cube_dim, args)

    def _run_planned(self, kernel: Any, cube_count: tuple[int, int, int], cube_dim: Any,
                     args: tuple[Any, ...]) -> None:
        """The launch of `launch_cubes_planned`, its arguments as a tuple (the plan takes them
        so: no repacking between the two entry points)."""
        array = self._array
        key = (kernel, cube_count, *[(arg.shape if arg.base is None else layout_key(arg))
                                     if isinstance(arg, array) else None for arg in args])
        plan = self.plans.get(key)
        if plan is None:
            plan = self.planned(key, lambda: kernel.plan(self.runtime, cube_count, cube_dim,
                                                         *args))
        plan(args)


def _assemble(cls: type) -> None:
    """Give `cls` every op: elementwise kernels (where no family mixin has the op) and layout
    kernels, then the host fallback for the abstract ops still missing."""

    def abstract(name: str) -> bool:
        return getattr(getattr(cls, name), "__isabstractmethod__", False)

    for name, method in ELEMENTWISE_METHODS.items():
        if abstract(name) or getattr(cls, name) is getattr(Backend, name):
            setattr(cls, name, method)  # a family's own method wins over the lowering
    for name in layout.LAYOUT:
        for kind in ("float", "int", "bool"):
            if f"{kind}_{name}" in OPS:
                setattr(cls, f"{kind}_{name}", _layout_method(name, kind))
    for name, op in OPS.items():
        if abstract(name):
            setattr(cls, name, fallback_method(op))
    abstract_names: frozenset[str] = getattr(cls, "__abstractmethods__", frozenset())
    cls.__abstractmethods__ = frozenset(  # type: ignore[attr-defined]
        n for n in abstract_names if abstract(n))


_assemble(CubeBackend)


class CpuBackend(CubeBackend):
    """The host CPU through generated C (gcc/clang + OpenMP)."""

    name = "cpu"
    runtime_name = "cpu"

    @classmethod
    def unavailable_reason(cls) -> str | None:
        """No C compiler, else None."""
        try:
            from burn_cube.runtime.cpu import find_compiler

            find_compiler()
        except ImportError as exc:
            return f"burn-cube is not installed ({exc})"
        except Exception as exc:  # MissingCompilerError: say what to install
            return str(exc)
        return None


class WgpuBackend(CubeBackend):
    """A WebGPU adapter (Vulkan, Metal, DX12) through wgpu-py and WGSL."""

    name = "wgpu"
    runtime_name = "wgpu"

    def supports(self, dtype: DType) -> bool:
        """As `CubeBackend.supports`, without float64: WGSL has no f64 math functions, even
        on adapters that store f64."""
        return dtype is not DType.float64 and super().supports(dtype)


class CudaBackend(CubeBackend):
    """An NVIDIA GPU through CuPy and NVRTC."""

    name = "cuda"
    runtime_name = "cuda"
