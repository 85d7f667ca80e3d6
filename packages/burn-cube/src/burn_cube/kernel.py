"""Launchable kernels: the ``@kernel`` decorator and ``Kernel.from_ir``.

``Kernel`` (a decorated function): a launch first asks the runtime's launch index (keyed by the
kernel's source text and specialization) for a compiled kernel; only on a miss is the kernel
parsed, lowered and compiled. The frontend (``ast``) is imported on the first miss.

``IRKernel`` (``Kernel.from_ir``, a kernel built with ``burn_cube.ir.KernelBuilder``): one fixed
specialization, cached in memory across kernel objects and in the runtime's launch index by the
IR's structural hash, so equal IR built twice compiles once.
"""

from __future__ import annotations

import builtins
import inspect
import linecache
import math
import weakref
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from burn_cube.cache import cache_key
from burn_cube.errors import LaunchError
from burn_cube.ir.nodes import Buffer, KernelIR
from burn_cube.language.builtins import fingerprint
from burn_cube.runtime import DeviceArray, Runtime, runtime
from burn_cube.runtime.base import int_range, scalar_converter
from burn_cube.types import (
    ComptimeType,
    DType,
    ParamSpec,
    Tensor,
    TensorType,
    bool_,
    f32,
    from_numpy,
    i32,
    i64,
)

Specs = dict[str, ParamSpec]

Dims = int | tuple[int, ...]


def _dims(value: Dims, what: str, kernel: str) -> tuple[int, int, int]:
    dims = (value,) if isinstance(value, int | np.integer) else tuple(value)
    if not 1 <= len(dims) <= 3 or not all(isinstance(d, int | np.integer) for d in dims):
        raise LaunchError(f"{what} must be an int or a tuple of 1-3 ints, got {value!r}", kernel)
    if any(d < 1 for d in dims):
        raise LaunchError(f"{what} must be positive, got {value!r}", kernel)
    return tuple(int(d) for d in dims) + (1,) * (3 - len(dims))  # type: ignore[return-value]


def source_text(fn: Callable[..., Any]) -> str | None:
    """The source lines of a function (decorators to its last instruction), without tokenizing;
    None when the file cannot be read."""
    code = fn.__code__
    lines = linecache.getlines(code.co_filename)
    end = max((pos[1] for pos in code.co_positions() if pos[1] is not None),
              default=code.co_firstlineno)
    return "".join(lines[code.co_firstlineno - 1:end]) or None


_MISSING = object()


def _whole_lines(array: DeviceArray, lanes: int) -> bool:
    """Whether an array reads as whole lines of ``lanes`` elements: its last dimension a
    multiple of ``lanes`` and, for a view, a unit last stride with the other strides and the
    offset multiples of ``lanes``."""
    shape = array.shape
    if not shape or shape[-1] % lanes:
        return False
    if array.base is None:
        return True
    strides = array.strides
    if strides[-1] != 1 or array.offset % lanes:
        return False
    for stride in strides[:-1]:
        if stride % lanes:
            return False
    return True


class BaseKernel(ABC):
    """What every launchable kernel shares: argument checks, compile caching and launching.

    Args:
        name: Kernel name (in errors).
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self._compiled: weakref.WeakKeyDictionary[Runtime, dict[Any, tuple[Any, KernelIR]]] = (
            weakref.WeakKeyDictionary())
        #: ``lowered``: specializations lowered to IR; ``compiled``: runtime compilations;
        #: ``index_hits``: compiled kernels taken from the runtime's launch index;
        #: ``shared_hits``: compiled kernels shared with an equal IR kernel (``from_ir``).
        self.stats = {"lowered": 0, "compiled": 0, "index_hits": 0, "shared_hits": 0}

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise LaunchError("launch a kernel with kernel.launch(runtime, cube_count, cube_dim, "
                          "*args)", self.name)

    @abstractmethod
    def ir(self, specs: Specs, cube_dim: tuple[int, int, int]) -> KernelIR:
        """The IR for one specialization."""

    @abstractmethod
    def identity(self, specs: Specs, cube_dim: tuple[int, int, int]) -> str | None:
        """Launch-index identity of a specialization (None: not indexed)."""

    @abstractmethod
    def bind(self, rt: Runtime, cube_dim: Dims, *args: Any, **kwargs: Any
             ) -> tuple[Specs, tuple[int, int, int], list[Any],
                        list[tuple[str, np.ndarray, DeviceArray]]]:
        """Check the arguments and derive their specialization.

        Args:
            rt: Target runtime.
            cube_dim: Units per cube.
            *args: Kernel arguments.
            **kwargs: Kernel arguments by name.

        Returns:
            The specs, the cube dim, the runtime arguments, and (name, numpy array, device copy)
            for each uploaded numpy array.
        """

    def _valid(self, externals: dict[str, str]) -> bool:
        """Whether a launch-index entry's recorded globals still hold (no globals: True)."""
        return not externals

    def _compile(self, rt: Runtime, specs: Specs, dims: tuple[int, int, int]
                 ) -> tuple[Any, KernelIR]:
        """Compiled kernel and (interface) IR: from the launch index, else lowered and built."""
        identity = self.identity(specs, dims)
        hit = rt.cached(identity, self._valid) if identity else None
        if hit is not None:
            self.stats["index_hits"] += 1
            return hit
        kernel = self.ir(specs, dims)
        compiled = rt.compile(kernel)
        self.stats["compiled"] += 1
        if identity:
            rt.remember(identity, kernel, compiled)
        return compiled, kernel

    def _check_dims(self, rt: Runtime, cube_dim: Dims) -> tuple[int, int, int]:
        dims = _dims(cube_dim, "cube_dim", self.name)
        props = rt.properties
        if math.prod(dims) > props.max_cube_dim:
            raise LaunchError(f"cube_dim {dims} has {math.prod(dims)} units; the {rt.name} "
                              f"runtime allows at most {props.max_cube_dim}", self.name)
        return dims

    def _check_dtypes(self, rt: Runtime, specs: Specs) -> None:
        for spec in specs.values():
            if spec.dtype is not None and spec.dtype.scalar.name not in rt.properties.dtypes:
                raise LaunchError(f"the {rt.name} runtime does not support {spec.dtype}",
                                  self.name)

    def specialize(self, rt: Runtime, cube_dim: Dims, *args: Any,
                   **kwargs: Any) -> tuple[KernelIR, list[Any], list[tuple[np.ndarray, Any]]]:
        """Check the arguments, and build (or fetch) the IR of their signature.

        Args:
            rt: Target runtime.
            cube_dim: Units per cube.
            *args: Kernel arguments.
            **kwargs: Kernel arguments by name.

        Returns:
            The IR, the runtime arguments, and (numpy array, device copy) pairs to copy back.
        """
        specs, dims, values, copies = self.bind(rt, cube_dim, *args, **kwargs)
        kernel = self.ir(specs, dims)
        return kernel, values, [(a, d) for n, a, d in copies if kernel.buffers[n].written]

    def _tensor(self, rt: Runtime, name: str, value: Any, ann: Any,
                copies: list[tuple[str, np.ndarray, DeviceArray]]) -> DeviceArray:
        if isinstance(value, DeviceArray):
            if value.runtime is not rt:
                raise LaunchError(f"tensor `{name}` lives on the {value.runtime.name} runtime, "
                                  f"not {rt.name}", self.name)
            array = value
        elif isinstance(value, np.ndarray):
            dtype = from_numpy(value.dtype)
            if dtype is None:
                raise LaunchError(f"tensor `{name}` has unsupported dtype {value.dtype}",
                                  self.name)
            if rt.name == "cpu" and value.flags.c_contiguous and value.flags.writeable:
                array = DeviceArray(rt, value, value.shape, dtype)
            else:
                array = rt.upload(value)
                copies.append((name, value, array))
        else:
            raise LaunchError(f"`{name}` must be a tensor (numpy array or DeviceArray), got "
                              f"{type(value).__name__}", self.name)
        expected = ann.dtype if isinstance(ann, TensorType) else None
        if expected is not None and array.dtype != expected.scalar:
            raise LaunchError(f"tensor `{name}` must be {expected.scalar}, got {array.dtype}",
                              self.name)
        if expected is not None and expected.lanes > 1 and not _whole_lines(array,
                                                                          expected.lanes):
            if not array.shape or array.shape[-1] % expected.lanes:
                raise LaunchError(f"tensor `{name}` of {expected}: the last dimension must be a "
                                  f"multiple of {expected.lanes}, got shape {array.shape}",
                                  self.name)
            raise LaunchError(f"view `{name}` of {expected}: needs a unit last stride and other "
                              f"strides and the offset multiples of {expected.lanes}, got "
                              f"strides {array.strides}, offset {array.offset}", self.name)
        return array

    def _scalar_dtype(self, name: str, value: Any, ann: Any) -> DType:
        if isinstance(ann, DType):
            return ann
        if ann is not None and ann not in (int, float, bool):
            raise LaunchError(f"unsupported annotation {ann!r} for `{name}`", self.name)
        if isinstance(value, np.generic) and from_numpy(value.dtype) is not None:
            return from_numpy(value.dtype)  # type: ignore[return-value]
        if isinstance(value, bool):
            return bool_
        if isinstance(value, int):
            return i32 if -(2**31) <= value < 2**31 else i64
        if isinstance(value, float):
            return f32
        raise LaunchError(f"`{name}` must be a tensor or a number, got {type(value).__name__}",
                          self.name)

    def _scalar(self, name: str, value: Any, dtype: DType) -> np.generic:
        return scalar_converter(dtype, self.name, name)(value)  # type: ignore[no-any-return]

    def launch(self, rt: Runtime | str, cube_count: Dims, cube_dim: Dims, *args: Any,
               **kwargs: Any) -> None:
        """Specialize, compile (cached) and run the kernel.

        Args:
            rt: A runtime or its name.
            cube_count: Cubes along x, y, z.
            cube_dim: Units per cube along x, y, z.
            *args: Kernel arguments: tensors (numpy arrays are uploaded and, when written,
                copied back), scalars, comptime values.
            **kwargs: Kernel arguments by name.
        """
        rt, counts, compiled, kernel, values, copies = self._prepare(rt, cube_count, cube_dim,
                                                                     args, kwargs)
        rt.launch(compiled, kernel, counts, values)
        for name, host, device in copies:
            if kernel.buffers[name].written:
                np.copyto(host, rt.download(device))

    def plan(self, rt: Runtime | str, cube_count: Dims, cube_dim: Dims, *args: Any
             ) -> Callable[[Any], None]:
        """Check ``args`` as ``launch`` does and compile; return a launcher for repeated
        launches with arguments laid out as ``args`` (``Runtime.plan``: it takes one sequence
        of arguments, device arrays of the same shapes, strides, offsets and extents as
        ``args``, and numbers, and checks only the numbers).

        Args:
            rt: A runtime or its name.
            cube_count: Cubes along x, y, z (fixed for the launcher).
            cube_dim: Units per cube along x, y, z.
            *args: Example arguments: device arrays and numbers.

        Returns:
            The launcher.

        Raises:
            LaunchError: as ``launch``, and for numpy arrays (a launcher takes device arrays).
        """
        if any(isinstance(arg, np.ndarray) for arg in args):
            raise LaunchError("a launch plan takes device arrays, not numpy arrays", self.name)
        rt, counts, compiled, kernel, values, _ = self._prepare(rt, cube_count, cube_dim, args,
                                                                {})
        return rt.plan(compiled, kernel, counts, values)

    def _prepare(self, rt: Runtime | str, cube_count: Dims, cube_dim: Dims,
                 args: tuple[Any, ...], kwargs: dict[str, Any]
                 ) -> tuple[Runtime, tuple[int, int, int], Any, KernelIR, list[Any],
                            list[tuple[str, np.ndarray, DeviceArray]]]:
        """The checks and compilation of a launch: the runtime, the cube counts, the compiled
        kernel and its IR, the runtime arguments and the uploaded numpy arrays."""
        rt = runtime(rt) if isinstance(rt, str) else rt
        counts = _dims(cube_count, "cube_count", self.name)
        limit = rt.properties.max_cube_count
        if any(c > m for c, m in zip(counts, limit, strict=True)):
            raise LaunchError(f"cube_count {counts} exceeds the {rt.name} limit {limit}",
                              self.name)
        specs, dims, values, copies = self.bind(rt, cube_dim, *args, **kwargs)
        if math.prod(counts) * math.prod(dims) >= 2**32:
            raise LaunchError(f"launch of {counts} cubes x {dims} units overflows "
                              "the u32 unit positions", self.name)
        # Per runtime object, weakly: a runtime made after another one died may reuse its id.
        per_runtime = self._compiled.setdefault(rt, {})
        key = (tuple(specs.items()), dims)
        entry = per_runtime.get(key)
        if entry is None:
            entry = per_runtime[key] = self._compile(rt, specs, dims)
        compiled, kernel = entry
        return rt, counts, compiled, kernel, values, copies

    def source(self, target: str, cube_dim: Dims, *args: Any, **kwargs: Any) -> str:
        """Generated source for a target (for inspection and tests), specialized on the cpu
        runtime's argument rules.

        Args:
            target: ``c``, ``wgsl`` or ``cuda``.
            cube_dim: Units per cube.
            *args: Example arguments fixing the signature.
            **kwargs: Example arguments by name.

        Returns:
            The source text.
        """
        from burn_cube.codegen import generate

        kernel, _, _ = self.specialize(runtime("cpu"), cube_dim, *args, **kwargs)
        return generate(kernel, target)


class Kernel(BaseKernel):
    """A kernel function; specialized and compiled on first launch per signature.

    Args:
        fn: The Python function written in the kernel language.
    """

    def __init__(self, fn: Callable[..., Any]) -> None:
        super().__init__(fn.__name__)
        self.fn = fn
        self.signature = inspect.signature(fn)
        self.__doc__ = fn.__doc__
        self._parsed: Any = None  # ParsedKernel, once parsed
        self._annotations: dict[str, Any] | None = None
        self._source: str | None = None
        self._ir: dict[Any, KernelIR] = {}

    @staticmethod
    def from_ir(kernel: KernelIR) -> IRKernel:
        """A launchable kernel from IR built in code (``burn_cube.ir.KernelBuilder``).

        Args:
            kernel: The IR (with a body).

        Returns:
            The kernel, launched like a decorated one.
        """
        return IRKernel(kernel)

    def ir(self, specs: Specs, cube_dim: tuple[int, int, int]) -> KernelIR:
        """The IR for one specialization (cached).

        Args:
            specs: Specialization of every parameter.
            cube_dim: Units per cube.

        Returns:
            The typed IR.
        """
        key = (tuple(specs.items()), cube_dim)
        if key not in self._ir:
            from burn_cube.language.frontend import lower, parse_kernel

            if self._parsed is None:
                self._parsed = parse_kernel(self.fn)
            self._ir[key] = lower(self._parsed, specs, cube_dim)
            self.stats["lowered"] += 1
        return self._ir[key]

    def identity(self, specs: Specs, cube_dim: tuple[int, int, int]) -> str | None:
        """Launch-index identity of a specialization: a hash of the kernel's source text, name
        and specialization (None when the source cannot be read)."""
        if self._source is None:
            self._source = source_text(self.fn)
            if self._source is None:
                return None
        return cache_key(self._source, self.fn.__module__, self.fn.__qualname__,
                         repr(list(specs.items())), repr(cube_dim))

    def _resolve(self, path: str) -> Any:
        """A dotted global name as the kernel sees it now (closure, module globals, builtins)."""
        head, *attrs = path.split(".")
        code = self.fn.__code__
        obj: Any = _MISSING
        if head in code.co_freevars and self.fn.__closure__ is not None:
            try:
                obj = self.fn.__closure__[code.co_freevars.index(head)].cell_contents
            except ValueError:  # empty cell
                return _MISSING
        if obj is _MISSING:
            obj = self.fn.__globals__.get(head, getattr(builtins, head, _MISSING))
        for attr in attrs:
            obj = getattr(obj, attr, _MISSING)
        return obj

    def _valid(self, externals: dict[str, str]) -> bool:
        """Whether every global recorded when the kernel was lowered still has that value."""
        return all(fingerprint(self._resolve(path)) == value
                   for path, value in externals.items())

    def bind(self, rt: Runtime, cube_dim: Dims, *args: Any, **kwargs: Any
             ) -> tuple[Specs, tuple[int, int, int], list[Any],
                        list[tuple[str, np.ndarray, DeviceArray]]]:
        """`BaseKernel.bind` for a decorated kernel: specs from the arguments' types."""
        dims = self._check_dims(rt, cube_dim)
        try:
            bound = self.signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise LaunchError(f"bad arguments: {exc}", self.name) from exc
        if self._annotations is None:
            self._annotations = inspect.get_annotations(self.fn, eval_str=True)
        specs: Specs = {}
        values: list[Any] = []
        copies: list[tuple[str, np.ndarray, DeviceArray]] = []
        for name, value in bound.arguments.items():
            ann = self._annotations.get(name)
            ann = TensorType() if ann is Tensor else ann
            if isinstance(ann, ComptimeType):
                try:
                    hash(value)
                except TypeError as exc:
                    raise LaunchError(f"comptime argument `{name}` must be hashable",
                                      self.name) from exc
                specs[name] = ParamSpec("comptime", value=value)
            elif isinstance(ann, TensorType) or (ann is None and isinstance(
                    value, np.ndarray | DeviceArray)):
                array = self._tensor(rt, name, value, ann, copies)
                dtype = ann.dtype if isinstance(ann, TensorType) and ann.dtype else array.dtype
                specs[name] = ParamSpec("tensor", dtype, len(array.shape))
                values.append(array)
            else:
                dtype = self._scalar_dtype(name, value, ann)
                specs[name] = ParamSpec("scalar", dtype)
                values.append(self._scalar(name, value, dtype))
        self._check_dtypes(rt, specs)
        return specs, dims, values, copies

def kernel(fn: Callable[..., Any]) -> Kernel:
    """Decorator: turn a Python function into a burn-cube kernel.

    Args:
        fn: The function, written in the kernel language.

    Returns:
        The launchable kernel.
    """
    return Kernel(fn)


#: Compiled IR kernels shared by every ``IRKernel``, by runtime (weakly: a dead runtime's
#: kernels go with it) and structural hash.
_SHARED: weakref.WeakKeyDictionary[Runtime, dict[str, tuple[Any, KernelIR]]] = (
    weakref.WeakKeyDictionary())


class IRKernel(BaseKernel):
    """A kernel built in code (see ``burn_cube.ir.KernelBuilder``): one fixed specialization,
    launched like a decorated kernel with ``launch(runtime, cube_count, cube_dim, *args)``.

    Compiled kernels are shared by every ``IRKernel`` of equal IR (its structural hash) in the
    process, and recorded in the runtime's launch index under that hash. A kernel made by
    ``IRKernel.built`` is recorded under the identity its maker gives instead, and builds its
    IR only where the index misses it (see there).

    Args:
        kernel: The IR (with a body); ``cube_dim`` launches must match ``kernel.cube_dim``.
    """

    def __init__(self, kernel: KernelIR) -> None:
        own = replace(kernel, externals={})  # nothing outside the IR defines it
        self._start(kernel.name, own, None, None)
        self._interface(own)

    def _start(self, name: str, kernel: KernelIR | None, key: str | None,
               build: Callable[[], KernelIR] | None) -> None:
        """The state of a kernel made from its IR (`kernel`) or from its maker (`key` names
        the IR, `build` makes it: ``built``)."""
        BaseKernel.__init__(self, name)
        self._kernel = kernel
        self._hash: str | None = None
        self._key = key
        self._build = build
        #: the interface binding reads: the IR's, or a launch index entry's.
        self._params: KernelIR | None = None
        #: compiled kernels and interfaces found in a runtime's launch index by ``_key``.
        self._found: weakref.WeakKeyDictionary[Runtime, tuple[Any, KernelIR]] = (
            weakref.WeakKeyDictionary())
        #: (runtime, weakly; its largest cube count; compiled kernel; IR) of the last launch.
        self._last: tuple[Any, tuple[int, int, int], Any, KernelIR] | None = None

    @classmethod
    def built(cls, name: str, identity: str, build: Callable[[], KernelIR]) -> IRKernel:
        """A kernel whose IR ``build`` makes on demand: a launch first asks the runtime's
        launch index for ``identity``, and only on a miss builds the IR (then compiled,
        shared and indexed as ``from_ir``'s kernels, and recorded under ``identity`` too), so a
        process that finds it neither builds nor hashes the IR.

        Args:
            name: The kernel's name in errors until its interface is known.
            identity: Names the IR exactly: what builds it, from which arguments, and the code
                that does (an edit of that code must change it).
            build: Makes the IR (with a body).

        Returns:
            The kernel.
        """
        kernel = cls.__new__(cls)
        kernel._start(name, None, identity, build)
        return kernel

    def _interface(self, kernel: KernelIR) -> KernelIR:
        """Take what binding and the launch fast path need from ``kernel``'s interface;
        returns ``kernel``. ``_params`` is set last: a thread reading it set (``_signature``)
        finds the rest set too (threads launching a kernel first at once: ``names`` was
        missing)."""
        self.name = kernel.name
        self.names = [p.name for p in kernel.params]
        dims = kernel.cube_dim
        self._units = math.prod(dims)
        #: ``cube_dim`` arguments equal to the kernel's.
        self._dims = {dims, dims[:2], dims[:1]} | ({dims[0]} if dims[1:] == (1, 1) else set())
        #: per parameter: (tensor, scalar dtype, rank, lanes, scalar's numpy type and integer
        #: range or None).
        self._layout = [
            (p.tensor, p.dtype.scalar, kernel.buffers[p.name].rank if p.tensor else 0,
             p.dtype.lanes, None if p.tensor else (p.dtype.numpy.type, int_range(p.dtype)))
            for p in kernel.params]
        self._params = kernel
        return kernel

    def _signature(self) -> KernelIR:
        """The interface binding reads (the IR's, built now where no launch index gave it)."""
        return self._params if self._params is not None else self._interface(self.kernel)

    @property
    def kernel(self) -> KernelIR:
        """The IR, with its body (built now if it was not)."""
        if self._kernel is None:
            assert self._build is not None
            self._kernel = replace(self._build(), externals={})
        return self._kernel

    @property
    def hash(self) -> str:
        """The IR's structural hash (worked out on first use)."""
        if self._hash is None:
            self._hash = self.kernel.structural_hash()
        return self._hash

    def ir(self, specs: Specs, cube_dim: tuple[int, int, int]) -> KernelIR:
        """The kernel's IR (it has one specialization)."""
        return self.kernel

    def identity(self, specs: Specs, cube_dim: tuple[int, int, int]) -> str | None:
        """The launch-index identity: the maker's (``built``), else the IR's structural
        hash."""
        return self._built_identity() if self._key is not None else f"ir:{self.hash}"

    def _built_identity(self) -> str:
        """The launch-index identity of a ``built`` kernel."""
        return f"built:{self._key}"

    def _compile(self, rt: Runtime, specs: Specs, dims: tuple[int, int, int]
                 ) -> tuple[Any, KernelIR]:
        found = self._found.pop(rt, None)
        if found is not None:
            self.stats["index_hits"] += 1
            return found
        shared = _SHARED.setdefault(rt, {})
        if self.hash in shared:
            self.stats["shared_hits"] += 1
            if self._key is not None:  # index the maker's identity for the next process
                rt.remember(self._built_identity(), self.kernel, shared[self.hash][0])
        else:
            shared[self.hash] = super()._compile(rt, specs, dims)
        return shared[self.hash]

    def resolve(self, rt: Runtime | str) -> None:
        """Make sure the kernel can launch on ``rt``: a ``built`` kernel not yet compiled
        there asks the runtime's launch index now and, on a miss, builds its IR (so an error
        building it raises here, not at its first launch); nothing for other kernels.

        Args:
            rt: A runtime or its name.
        """
        if self._key is None:
            return
        rt = runtime(rt) if isinstance(rt, str) else rt
        if rt in self._compiled or rt in self._found:
            return
        hit = rt.cached(self._built_identity(), self._valid)
        if hit is None:
            self._signature()
            return
        self._found[rt] = hit
        if self._params is None:
            self._interface(hit[1])

    def _prepare(self, rt: Runtime | str, cube_count: Dims, cube_dim: Dims,
                 args: tuple[Any, ...], kwargs: dict[str, Any]
                 ) -> tuple[Runtime, tuple[int, int, int], Any, KernelIR, list[Any],
                            list[tuple[str, np.ndarray, DeviceArray]]]:
        """`BaseKernel._prepare`, after `resolve`: a launch-index entry's interface is
        enough to bind the arguments."""
        self.resolve(rt)
        return super()._prepare(rt, cube_count, cube_dim, args, kwargs)

    def launch(self, rt: Runtime | str, cube_count: Dims, cube_dim: Dims, *args: Any,
               **kwargs: Any) -> None:
        """`BaseKernel.launch`, with a fast path for repeated launches on one runtime with
        device arrays and Python numbers (the checks that cannot fail again are skipped)."""
        last = self._last
        if last is not None and not kwargs and last[0]() is rt:
            counts = _counts(cube_count, last[1], self._units)
            values = self._fast_values(rt, args) if counts and (
                type(cube_dim) in (int, tuple) and cube_dim in self._dims) else None
            if values is not None:
                rt.launch(last[2], last[3], counts, values)  # type: ignore[union-attr]
                return
        super().launch(rt, cube_count, cube_dim, *args, **kwargs)
        rt = runtime(rt) if isinstance(rt, str) else rt
        compiled, kernel = next(iter(self._compiled[rt].values()))
        self._last = (weakref.ref(rt), rt.properties.max_cube_count, compiled, kernel)

    def _fast_values(self, rt: Runtime, args: tuple[Any, ...]) -> list[Any] | None:
        """The runtime arguments when all are device arrays of ``rt`` of the right dtype and
        rank, and Python numbers that fit (None: take the checked path)."""
        if len(args) != len(self._layout):
            return None
        values = list(args)
        for i, (tensor, dtype, rank, lanes, scalar) in enumerate(self._layout):
            arg = args[i]
            if tensor:
                if not isinstance(arg, DeviceArray) or arg.runtime is not rt or (
                        arg.dtype is not dtype and arg.dtype != dtype) or (
                        len(arg.shape) != rank) or (lanes > 1 and not _whole_lines(arg, lanes)):
                    return None
                continue
            kind = type(arg)
            numpy_type, bounds = scalar  # type: ignore[misc]
            if kind is bool or (kind is float and bounds is None) or (
                    kind is int and (bounds is None or bounds[0] <= arg <= bounds[1])):
                values[i] = numpy_type(arg)
            else:
                return None
        return values

    def bind(self, rt: Runtime, cube_dim: Dims, *args: Any, **kwargs: Any
             ) -> tuple[Specs, tuple[int, int, int], list[Any],
                        list[tuple[str, np.ndarray, DeviceArray]]]:
        interface = self._signature()
        dims = self._check_dims(rt, cube_dim)
        if dims != interface.cube_dim:
            raise LaunchError(f"built for cube_dim {interface.cube_dim}, launched with "
                              f"{dims}", self.name)
        if len(args) > len(self.names):
            raise LaunchError(f"bad arguments: takes {len(self.names)} ({', '.join(self.names)})"
                              f", got {len(args)}", self.name)
        bound = dict(zip(self.names, args, strict=False))
        for name, value in kwargs.items():
            if name not in self.names or name in bound:
                raise LaunchError(f"bad arguments: unexpected or repeated `{name}`", self.name)
            bound[name] = value
        missing = [n for n in self.names if n not in bound]
        if missing:
            raise LaunchError(f"bad arguments: missing {', '.join(missing)}", self.name)
        specs: Specs = {}
        values: list[Any] = []
        copies: list[tuple[str, np.ndarray, DeviceArray]] = []
        for param in interface.params:
            value = bound[param.name]
            if param.tensor:
                buf: Buffer = interface.buffers[param.name]
                array = self._tensor(rt, param.name, value, TensorType(param.dtype), copies)
                if len(array.shape) != buf.rank:
                    raise LaunchError(f"tensor `{param.name}` must have rank {buf.rank}, got "
                                      f"shape {array.shape}", self.name)
                specs[param.name] = ParamSpec("tensor", param.dtype, buf.rank)
                values.append(array)
            else:
                specs[param.name] = ParamSpec("scalar", param.dtype)
                values.append(self._scalar(param.name, value, param.dtype))
        self._check_dtypes(rt, specs)
        return specs, dims, values, copies



def _counts(cube_count: Any, limit: tuple[int, int, int], units: int
            ) -> tuple[int, int, int] | None:
    """``cube_count`` as x, y, z when it is an int or a tuple of 3 ints within ``limit`` and
    the launch's ``units`` per cube keep positions in u32 (None: take the checked path)."""
    if type(cube_count) is int:
        x, y, z = cube_count, 1, 1
    elif type(cube_count) is tuple and len(cube_count) == 3:
        x, y, z = cube_count
        if type(x) is not int or type(y) is not int or type(z) is not int:
            return None
    else:
        return None
    if 1 <= x <= limit[0] and 1 <= y <= limit[1] and 1 <= z <= limit[2] and \
            x * y * z * units < 2**32:
        return x, y, z
    return None
