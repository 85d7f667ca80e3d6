"""wgpu runtime (wgpu-py): WGSL compute shaders on Vulkan/Metal/D3D12, llvmpipe included.

Pipelines and bind-group layouts are cached per shader source; storage buffers come from a
size-bucketed pool (freed buffers return to it after the next submit); launches queued back
to back are recorded into one compute pass and submitted on read-back, ``sync``, or when the
pending launches reach the batch size, which starts at 1 once the queue is drained (the GPU
starts at once, overlapping host and device work) and doubles per submit up to ``BATCH``;
read-backs reuse mapped staging buffers; bind groups (with their ``bc_info`` buffers) are
cached per buffer set and metadata. More than 65,535 cubes are
dispatched as a 2-D grid and linearized in the shader. The device is requested with the
adapter's maximum storage-buffer limits and, where the adapter has them, the features of the
f16, f64 and i64 dtypes (``DTYPE_FEATURES``) and subgroups. bool tensors are held as one u32 per
element (converted on upload and download). The runtime is thread-safe: its methods hold one
re-entrant lock, as threads (data-loader workers) share its open encoder and buffer pool.
"""

from __future__ import annotations

import math
import os
import re
import threading
import weakref
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property, wraps
from typing import Any

import numpy as np

from burn_cube.codegen import generate
from burn_cube.codegen.wgsl import info_layout
from burn_cube.errors import CompileError, LaunchError, RuntimeUnavailableError
from burn_cube.ir.nodes import KernelIR
from burn_cube.runtime.base import DeviceArray, Properties, Runtime, meta_value
from burn_cube.runtime.llvm_order import load_triton_llvm_first
from burn_cube.types import DType, from_numpy, u32

try:
    import wgpu
except ImportError:  # pragma: no cover - depends on the environment
    wgpu = None

#: A type cffi is asked for by name: ``WGPUBufferDescriptor *``, ``WGPUFeatureName[]``, ``T``.
_NAMED_TYPE = re.compile(r"\s*(\w+)\s*(\*|\[\])?\s*$")
_Method = Callable[..., Any]


def _locked(method: _Method) -> _Method:
    """`method` run holding its runtime's lock."""
    @wraps(method)
    def run(self: WgpuRuntime, *args: Any, **kwargs: Any) -> Any:
        with self._lock:
            return method(self, *args, **kwargs)

    return run


def fast_type_lookup(parser: Any) -> None:
    """Give a cffi parser a fast path for types named as above.

    wgpu-py asks cffi for its structs by name (``ffi.new("WGPUBufferDescriptor *")``), and cffi
    parses each new name with pycparser after a declaration of every typedef of webgpu.h
    (~25 ms each, some 45 names: most of a warm start of the wgpu runtime). Named typedefs and
    primitives are looked up in the parser's declarations instead, through cffi's own pointer
    and array constructors (the same types as a parse gives); anything else is parsed.

    Args:
        parser: The ``ffi._parser`` of wgpu-py's FFI (a ``cffi.cparser.Parser``); one of another
            layout (another cffi version) is left as it is.
    """
    from cffi import model

    if not all(hasattr(parser, a) for a in ("_declarations", "_get_type_pointer",
                                             "parse_type_and_quals")):
        return
    parse = parser.parse_type_and_quals

    def lookup(cdecl: str) -> Any:
        match = _NAMED_TYPE.match(cdecl)
        if match is not None:
            name, suffix = match.groups()
            found = parser._declarations.get("typedef " + name)
            if found is None and name in model.PrimitiveType.ALL_PRIMITIVE_TYPES:
                found = (model.PrimitiveType(name), 0)
            if found is not None:
                tp, quals = found
                if suffix == "*":
                    return parser._get_type_pointer(tp, quals), 0
                return (model.ArrayType(tp, None), quals) if suffix else (tp, quals)
        return parse(cdecl)

    parser.parse_type_and_quals = lookup


if wgpu is not None:
    try:
        from wgpu.backends.wgpu_native._ffi import ffi as _ffi
    except ImportError:  # pragma: no cover - another wgpu-py layout: cffi parses as before
        pass
    else:
        fast_type_lookup(getattr(_ffi, "_parser", None))

BATCH = 64  # most launches per submit
BIND_GROUPS = 256  # cached (buffer set, bc_info) bind groups
#: Mesa's llvmpipe ends a unit's loops after this many iterations in all (one loop of 70000
#: steps counts 65535, and so do nested loops of that total), without an error
#: (`Properties.max_unit_loop`).
LLVMPIPE_LOOP = 65535
_LIMITS = ("max-storage-buffer-binding-size", "max-buffer-size",
           "max-storage-buffers-per-shader-stage", "max-compute-invocations-per-workgroup",
           "max-compute-workgroup-size-x", "max-compute-workgroup-size-y",
           "max-compute-workgroup-size-z", "max-compute-workgroup-storage-size")
#: The adapter feature each optional dtype needs.
DTYPE_FEATURES = {"f16": "shader-f16", "f64": "shader-f64", "i64": "shader-int64"}
_FEATURES = (*DTYPE_FEATURES.values(), "subgroup")
#: numpy dtype a tensor is held in on the device, where it differs from the dtype's own.
_HELD = {"bool": np.dtype(np.uint32)}


def _before_vulkan() -> None:
    """What the process needs before a Vulkan driver loads: a runtime folder for the driver,
    and triton's LLVM loaded ahead of Mesa's (llvm_order)."""
    os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")
    load_triton_llvm_first()


def _held(dtype: DType) -> np.dtype:
    return _HELD.get(dtype.name, dtype.numpy)


def _bucket(nbytes: int) -> int:
    return max(256, 1 << (nbytes - 1).bit_length())


@dataclass
class CompiledWgsl:
    """A compute pipeline with its bind-group layout."""

    pipeline: Any
    layout: Any
    source: str
    info: list[tuple[str, str, str, int]]  # the ``bc_info`` words after the cube counts


class WgpuRuntime(Runtime):
    """Runs kernels through wgpu on one adapter: index 0 is the default high-performance
    adapter, index k >= 1 the k-th of ``devices()`` (wgpu's adapter enumeration)."""

    name = "wgpu"

    @classmethod
    def devices(cls) -> list[str]:
        if wgpu is None:
            raise RuntimeUnavailableError("the wgpu runtime needs wgpu-py: pip install "
                                          "'burn-cube[wgpu]'")
        _before_vulkan()
        return [a.summary for a in wgpu.gpu.enumerate_adapters_sync()]

    def __init__(self, index: int = 0) -> None:
        super().__init__(index)
        if wgpu is None:
            raise RuntimeUnavailableError("the wgpu runtime needs wgpu-py: pip install "
                                          "'burn-cube[wgpu]'")
        _before_vulkan()
        try:
            adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance") \
                if index == 0 else wgpu.gpu.enumerate_adapters_sync()[index]
        except Exception as exc:  # wgpu raises plain RuntimeError when no adapter exists
            raise RuntimeUnavailableError(f"no wgpu adapter: {exc}") from exc
        if adapter is None:
            raise RuntimeUnavailableError("no wgpu adapter found")
        self.features = [f for f in _FEATURES if f in adapter.features]
        limits = {k: adapter.limits[k] for k in _LIMITS if k in adapter.limits}
        try:
            self.device = adapter.request_device_sync(required_features=self.features,
                                                      required_limits=limits)
        except Exception as exc:  # e.g. an OpenGL adapter without compute shaders
            raise RuntimeUnavailableError(
                f"wgpu adapter {index} ({adapter.summary}) cannot run compute kernels: {exc}"
            ) from exc
        self.limits = self.device.limits
        self.description = adapter.summary
        self._pipelines: dict[str, CompiledWgsl] = {}
        self._free: dict[int, list[Any]] = defaultdict(list)
        self._released: list[tuple[int, Any]] = []
        self._staging: dict[int, Any] = {}
        self._encoder: Any = None
        self._pass: Any = None
        self._pending = 0
        self._batch = 1
        self._in_flight: list[Any] = []
        self._fence: DeviceArray | None = None
        self._bind_groups: dict[tuple[int, tuple[int, ...], bytes], tuple[Any, Any, Any]] = {}
        self._stats = {"buffers_created": 0, "bytes_reserved": 0, "submits": 0}
        self._lock = threading.RLock()

    @cached_property
    def properties(self) -> Properties:
        dtypes = {"bool", "u32", "i32", "f32"} | {
            d for d, feature in DTYPE_FEATURES.items() if feature in self.features}
        per_dim = self.limits["max-compute-workgroups-per-dimension"]
        return Properties("wgpu", self.description, "wgsl", frozenset(dtypes),
                          self.limits["max-compute-invocations-per-workgroup"],
                          (per_dim * per_dim, per_dim, per_dim),
                          32 if "subgroup" in self.features else 0,
                          # (a storage buffer each, and one for the `bc_info` words)
                          self.limits["max-storage-buffers-per-shader-stage"] - 1,
                          LLVMPIPE_LOOP if "llvmpipe" in self.description.lower() else 0)

    # ------------------------------------------------------------------------------ buffers
    def fits(self, shape: tuple[int, ...], dtype: DType) -> bool:
        return self._binds(math.prod(shape) * _held(dtype).itemsize)

    def _binds(self, nbytes: int) -> bool:
        """Whether a buffer of `nbytes` bytes is within the adapter's binding limit."""
        return _bucket(nbytes) <= self.limits["max-storage-buffer-binding-size"]

    def _buffer(self, nbytes: int) -> Any:
        size = _bucket(nbytes)
        if not self._binds(nbytes):
            raise LaunchError(f"a {nbytes}-byte buffer exceeds the adapter's storage binding "
                              f"limit of {self.limits['max-storage-buffer-binding-size']} bytes")
        if self._free[size]:
            return self._free[size].pop()
        self._stats["buffers_created"] += 1
        self._stats["bytes_reserved"] += size
        usage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST
        return self.device.create_buffer(size=size, usage=usage)

    def _release(self, buffer: Any) -> None:
        self._released.append((buffer.size, buffer))

    def _wrap(self, buffer: Any, shape: tuple[int, ...], dtype: DType) -> DeviceArray:
        array = DeviceArray(self, buffer, tuple(shape), dtype)
        weakref.finalize(array, self._release, buffer)
        return array

    @_locked
    def allocate(self, shape: tuple[int, ...], dtype: DType) -> DeviceArray:
        array = self.empty(shape, dtype)
        self.device.queue.write_buffer(array.handle, 0,
                                       np.zeros(array.handle.size // 4, np.uint32))
        return array

    @_locked
    def empty(self, shape: tuple[int, ...], dtype: DType) -> DeviceArray:
        """A pooled buffer (new buffers are zeroed by WebGPU; reused ones keep old data)."""
        return self._wrap(self._buffer(math.prod(shape) * _held(dtype).itemsize), shape, dtype)

    @_locked
    def upload(self, array: np.ndarray) -> DeviceArray:
        dtype = from_numpy(array.dtype)
        if dtype is None or dtype.name not in self.properties.dtypes:
            raise LaunchError(f"the wgpu runtime does not support {dtype or array.dtype} tensors")
        data = np.ascontiguousarray(array, _held(dtype))
        buffer = self._buffer(data.nbytes)
        if data.nbytes:
            self.device.queue.write_buffer(buffer, 0, _padded(data))
        return self._wrap(buffer, array.shape, dtype)

    @_locked
    def download_storage(self, array: DeviceArray) -> np.ndarray:
        held = _held(array.dtype)
        nbytes = array.size * held.itemsize
        if nbytes == 0:
            return np.zeros(array.shape, array.dtype.numpy)
        size = _bucket(nbytes)
        staging = self._staging.pop(size, None) or self.device.create_buffer(
            size=size, usage=wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST)
        encoder = self._encoder_now()
        encoder.copy_buffer_to_buffer(array.handle, 0, staging, 0, _round4(nbytes))
        self._flush()
        staging.map_sync(wgpu.MapMode.READ, 0, _round4(nbytes))
        self._batch = 1  # the queue is drained
        data = bytes(staging.read_mapped(0, _round4(nbytes)))[:nbytes]
        staging.unmap()
        self._staging[size] = staging
        return np.frombuffer(data, held).astype(array.dtype.numpy).reshape(array.shape)

    # ------------------------------------------------------------------------------ kernels
    @_locked
    def compile(self, kernel: KernelIR) -> CompiledWgsl:
        source = generate(kernel, "wgsl")
        if source in self._pipelines:
            return self._pipelines[source]
        entries = [{"binding": i, "visibility": wgpu.ShaderStage.COMPUTE,
                    "buffer": {"type": wgpu.BufferBindingType.storage if b.written
                               else wgpu.BufferBindingType.read_only_storage}}
                   for i, b in enumerate(kernel.tensors)]
        entries.append({"binding": len(entries), "visibility": wgpu.ShaderStage.COMPUTE,
                        "buffer": {"type": wgpu.BufferBindingType.read_only_storage}})
        try:
            module = self.device.create_shader_module(code=source)
            layout = self.device.create_bind_group_layout(entries=entries)
            pipeline = self.device.create_compute_pipeline(
                layout=self.device.create_pipeline_layout(bind_group_layouts=[layout]),
                compute={"module": module, "entry_point": "main"})
        except Exception as exc:  # wgpu reports shader errors as GPUValidationError
            raise CompileError(f"WGSL rejected by the driver: {exc}", kernel.name) from exc
        compiled = CompiledWgsl(pipeline, layout, source, info_layout(kernel))
        self._pipelines[source] = compiled
        return compiled

    def launch(self, compiled: CompiledWgsl, kernel: KernelIR, cube_count: tuple[int, int, int],
               args: list[Any]) -> None:
        self._dispatch(compiled, self._grid(kernel, cube_count), args,
                       self._info(compiled, kernel, cube_count, args))

    def plan(self, compiled: CompiledWgsl, kernel: KernelIR, cube_count: tuple[int, int, int],
             args: list[Any]) -> Callable[[Any], None]:
        """`Runtime.plan`: the dispatch grid and, for kernels without scalars, the
        ``bc_info`` words are worked out once; a launch finds the bind group of its buffers."""
        if any(not p.tensor for p in kernel.params):
            return super().plan(compiled, kernel, cube_count, args)
        grid, info = self._grid(kernel, cube_count), self._info(compiled, kernel, cube_count, args)

        def launch(values: Any) -> None:
            self._dispatch(compiled, grid, values, info)

        return launch

    def _grid(self, kernel: KernelIR, cube_count: tuple[int, int, int]) -> tuple[int, int, int]:
        """The workgroup grid of a launch: more cubes than a dimension allows run as a 2-D
        grid, linearized in the shader."""
        per_dim = self.limits["max-compute-workgroups-per-dimension"]
        if all(c <= per_dim for c in cube_count):
            return cube_count
        total = math.prod(cube_count)
        rows = -(-total // per_dim)  # balanced rows: fewer idle workgroups than full rows
        if rows > per_dim:
            raise LaunchError(f"{total} cubes exceed the wgpu dispatch limit", kernel.name)
        return (-(-total // rows), rows, 1)

    def _info(self, compiled: CompiledWgsl, kernel: KernelIR, cube_count: tuple[int, int, int],
              args: list[Any]) -> list[int]:
        """The ``bc_info`` words: the cube counts, then scalars and tensor metadata."""
        by_name = dict(zip((p.name for p in kernel.params), args, strict=True))
        words = list(cube_count)
        for _, param, field, dim in compiled.info:
            value = by_name[param]
            if field == "scalar":
                words += _words(value)
            else:
                words.append(meta_value(value, field, dim, kernel.buffers[param].dtype.lanes))
        return words

    @_locked
    def _dispatch(self, compiled: CompiledWgsl, grid: tuple[int, int, int], args: Any,
                  words: list[int]) -> None:
        """Record one dispatch into the open compute pass (submitted per batch)."""
        compute = self._pass_now()
        self.launches += 1
        compute.set_pipeline(compiled.pipeline)
        compute.set_bind_group(0, self._bind_group(compiled, args, words))
        compute.dispatch_workgroups(*grid)
        self._in_flight.append(args)
        self._pending += 1
        if self._pending >= self._batch:
            self._flush()
            self._batch = min(2 * self._batch, BATCH)

    def _bind_group(self, compiled: CompiledWgsl, args: list[Any], words: list[int]) -> Any:
        """The bind group of one buffer set and ``bc_info`` content, with its info buffer:
        cached, so repeated launches write no buffer and create no bind group."""
        buffers = tuple(a.handle for a in args if isinstance(a, DeviceArray))
        info = np.array(words, dtype=np.uint32)
        key = (id(compiled), tuple(id(b) for b in buffers), info.tobytes())
        if key in self._bind_groups:
            return self._bind_groups[key][1]
        info_buffer = self.device.create_buffer(
            size=_bucket(info.nbytes), usage=wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_DST)
        self.device.queue.write_buffer(info_buffer, 0, _padded(info))
        bind_group = self.device.create_bind_group(layout=compiled.layout, entries=[
            {"binding": i, "resource": {"buffer": b, "offset": 0, "size": b.size}}
            for i, b in enumerate((*buffers, info_buffer))])
        if len(self._bind_groups) >= BIND_GROUPS:
            del self._bind_groups[next(iter(self._bind_groups))]  # the oldest
        # the buffers stay referenced: their ids in the key cannot be reused
        self._bind_groups[key] = (buffers, bind_group, info_buffer)
        return bind_group

    def _pass_now(self) -> Any:
        """The open compute pass: launches queued back to back share one."""
        if self._pass is None:
            self._pass = self._encoder_now().begin_compute_pass()
        return self._pass

    def _encoder_now(self) -> Any:
        """The open command encoder, with any compute pass ended."""
        if self._pass is not None:
            self._pass.end()
            self._pass = None
        if self._encoder is None:
            self._encoder = self.device.create_command_encoder()
        return self._encoder

    def _flush(self) -> None:
        if self._encoder is not None:
            self._encoder_now()
            self.device.queue.submit([self._encoder.finish()])
            self._stats["submits"] += 1
            self._encoder, self._pending, self._in_flight = None, 0, []
        released, self._released = self._released, []  # finalizers may append meanwhile
        for size, buffer in released:
            self._free[size].append(buffer)

    @_locked
    def flush(self) -> None:
        """Submit the encoded launches to the queue without waiting for them."""
        self._flush()

    @_locked
    def sync(self) -> None:
        """Submit pending work and wait for it (a 4-byte read-back acts as the fence)."""
        if self._fence is None:
            self._fence = self.allocate((1,), u32)
        self.download(self._fence)

    @_locked
    def memory_stats(self) -> dict[str, int]:
        free = sum(size * len(bufs) for size, bufs in self._free.items())
        return {**self._stats, "bytes_free_in_pool": free, "pipelines": len(self._pipelines)}


def _words(value: np.generic) -> list[int]:
    """A scalar's bits as u32 words, low word first (narrower types zero-extended)."""
    raw = np.array(value).tobytes()
    return [int(w) for w in np.frombuffer(raw.ljust(_round4(len(raw)), b"\0"), np.uint32)]


def _round4(n: int) -> int:
    return (n + 3) // 4 * 4


def _padded(data: np.ndarray) -> np.ndarray:
    raw = data.reshape(-1).view(np.uint8)
    if raw.size % 4:
        raw = np.concatenate([raw, np.zeros(4 - raw.size % 4, np.uint8)])
    return raw
