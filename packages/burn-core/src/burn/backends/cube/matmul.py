"""Matmul of the cube backends: batched [..., m, k] @ [..., k, n] with broadcast batch dims.

Strategies (autotune candidates, by name): the burn-cube kernels of `matmul_kernels` (`naive`
and the shared-memory tiles `tile<bm>x<bn>x<bk>`) on every runtime, the float32 line tiles
`line<bm>x<bn>x<bk>` on GPU runtimes (rhs and out read and written as `Line[f32, 4]`; a layout
without whole lines runs `LINE_FALLBACK` instead), BLAS through numpy on the cpu runtime
(zero-copy host views of the buffers), the cpu runtime's own register-blocked float32 /
float64 kernel (`gemm`: `burn_cube.runtime.gemm`, raced against BLAS) and cuBLAS on cuda
(floats, on the device pointers: `gemmStridedBatchedEx`, or `gemmBatchedEx` over pointer
arrays for batches of two strides; float16 / bfloat16 / float32 accumulating in float32,
float64 in float64; `cublas_dense` copies an operand whose batch dims merge into no single
stride first, then makes one strided batched call: faster for some attention products).
Which one runs is timed once per (dtype, device, power-of-two bucket of batch, m, k and n) by
burn-cube's `Autotuner` and remembered on disk. Inputs are read in place whatever their
strides (transposed, sliced, stride-0 broadcast batches); the result is a new dense tensor.

TF32: `settings.allow_tf32 = True` lets cuBLAS multiply float32 matrices on tensor cores with
TF32 inputs (10-bit mantissas, float32 accumulation), as `torch.backends.cuda.matmul.allow_tf32`
does; off by default (full float32 products). Only the cuda runtime's cuBLAS path reads it.
"""

from __future__ import annotations

import functools
import math
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from weakref import WeakKeyDictionary

import numpy as np

from burn.dtype import DType
from burn.errors import DeviceError, DTypeError
from burn.ir.rules import matmul as matmul_shape
from burn_cube.errors import LaunchError
from burn_cube.runtime import gemm as cpu_gemm
from burn_cube.runtime.base import batch_offsets

from . import blas_pair
from .creation import full
from .elementwise import broadcast_view
from .layout import contiguous, slice_
from .matmul_kernels import LINE_TILES, TILES, line_tiled_kernel, naive_kernel, tiled_kernel
from .tensor import CubeTensor, Shape, host_view, whole_lines

#: Shared-memory bytes a tile may use (WebGPU's guaranteed minimum per workgroup).
SHARED_BYTES = 16384
#: On the cpu runtime float32 / float64 race BLAS against the runtime's own kernel up to
#: `CPU_GEMM_TUNE_WORK` multiply-adds (BLAS past it, where OpenBLAS runs threads of its own;
#: below it the kernel won [1024, 128] x [128, 512] and 512^3 at one thread, measured),
#: float16 / bfloat16 run on BLAS (the generated tiles were 15x to 400x slower, measured);
#: ints race numpy's integer matmul (no BLAS) against these tiles, timed up to
#: `CPU_TUNE_WORK` multiply-adds; larger products take the first tile directly (numpy's int
#: matmul was 2x to 7x slower there, and one timing trial would take seconds).
CPU_INT_TILES = ("tile64x64x16", "tile32x32x16")
CPU_TUNE_WORK = 1 << 24
CPU_GEMM_TUNE_WORK = 1 << 28
#: float32 / float64 products of up to `CPU_GEMM_ONLY_WORK` multiply-adds (of the shape
#: bucket) run on the cpu runtime's own kernel without a race. Timed alone, BLAS wins the
#: smallest by up to 2x ([64, 2] @ [2, 64]: 3.2 us against 6.0), but inside a program its
#: calls cost 2-3x their time alone and slow the kernels around them (OpenBLAS's code and
#: buffers in the caches, its result copied into the runtime's memory; at 2 threads its
#: threads against the OpenMP team): the MLP step's three small products on BLAS took 58 us
#: against 50 on the kernel, and the whole step 1046 against 961 us at 1 thread, 991 against
#: 738 us at 2 (LeNet: 4.70 against 4.33 ms, 4.13 against 3.56 ms; min of 12 interleaved
#: rounds, AVX-512, 2 cores).
CPU_GEMM_ONLY_WORK = 1 << 20
#: The scalar tile a line tile's runner takes when rhs or out cannot be read as whole lines.
LINE_FALLBACK = "tile64x64x16"

@dataclass
class MatmulSettings:
    """Process-wide matmul switches.

    Args:
        allow_tf32: float32 products on cuda may use TF32 tensor cores (faster, about 3
            decimal digits per input); False (default): full float32.
    """

    allow_tf32: bool = False


#: The switches read by every matmul (`settings.allow_tf32 = True` enables TF32 on cuda).
settings = MatmulSettings()

#: cuBLAS `cudaDataType` of each float dtype, and the compute types used.
_CUDA_DTYPES = {DType.float16: 2, DType.bfloat16: 14, DType.float32: 0, DType.float64: 1}
_COMPUTE_32F, _COMPUTE_32F_FAST_TF32, _COMPUTE_64F = 68, 77, 70
_OP_N, _OP_T, _GEMM_DEFAULT = 0, 1, -1
#: Host scalars alpha = 1, beta = 0 per compute precision (cuBLAS reads them through pointers).
_SCALARS: dict[Any, tuple[np.ndarray, np.ndarray]] = {
    wide: (np.ones((), wide), np.zeros((), wide)) for wide in (np.float32, np.float64)}
_SCALAR_POINTERS = {wide: (one.ctypes.data, zero.ctypes.data)
                    for wide, (one, zero) in _SCALARS.items()}
#: Workspace bytes given to each cuBLAS handle (as PyTorch's default on Hopper); 0: cuBLAS's own.
WORKSPACE_BYTES = 32 << 20
#: cuBLAS handle -> the workspace it was given (kept alive while the handle is).
_WORKSPACES: dict[int, Any] = {}

Runner = Callable[[Any, CubeTensor, CubeTensor, Shape], CubeTensor]

#: runtime -> (dtype [+tf32 where TF32 products are allowed], buckets of batch, m, k, n,
#: operands' layouts) -> the tuned strategy.
_CHOICES: WeakKeyDictionary[Any, dict[tuple[str, int, int, int, int, str], str]] = (
    WeakKeyDictionary())
#: runtime -> (dtype, TF32 allowed, shapes and strides of both operands) -> the strategy of
#: `_CHOICES` for them: a training step's products skip the bucket and layout keys (~15 us a
#: product); cleared when it holds `EXACT_CHOICES` shapes.
_EXACT: WeakKeyDictionary[Any, dict[tuple[Any, ...], str]] = WeakKeyDictionary()
EXACT_CHOICES = 4096


def _coalesced(shapes: list[Shape], strides: list[Shape]) -> tuple[Shape, list[Shape]]:
    """Batch dims of several views of one shape merged where every view allows it.

    Args:
        shapes: per view, its batch shape (all equal).
        strides: per view, its batch strides.
    Returns:
        The merged batch shape (size-1 dims dropped) and each view's strides for it.
    """
    dims: list[int] = []
    merged: list[list[int]] = [[] for _ in strides]
    for d, size in enumerate(shapes[0]):
        if size == 1:
            continue
        if dims and all(m[-1] == s[d] * size for m, s in zip(merged, strides, strict=True)):
            dims[-1] *= size
            for m, s in zip(merged, strides, strict=True):
                m[-1] = s[d]
            continue
        dims.append(size)
        for m, s in zip(merged, strides, strict=True):
            m.append(s[d])
    return tuple(dims), [tuple(m) for m in merged]


def kernel_views(lhs: CubeTensor, rhs: CubeTensor, out: CubeTensor
                 ) -> tuple[CubeTensor, CubeTensor, CubeTensor]:
    """`lhs`, `rhs` and the dense `out` as the kernels read them: matrices as they are (rank
    2), batched operands as views of one rank (>= 3) whose batch dims are out's, broadcast
    (stride 0) and merged where the strides allow."""
    batch = out.shape[:-2]
    if not batch:  # matrices (the most frequent): the kernels of rank 2 read them as they are
        return lhs, rhs, out
    if len(batch) == 1 and lhs.shape[:-2] == batch and rhs.shape[:-2] == batch:
        return lhs, rhs, out  # one batch dim, no broadcast: as they are
    views = (broadcast_view(lhs, (*batch, *lhs.shape[-2:])),
             broadcast_view(rhs, (*batch, *rhs.shape[-2:])), out)
    if len(batch) == 1:  # nothing to merge (checked first, it is cheap)
        return views
    strides = [v.strides for v in views]
    dims, merged = _coalesced([batch] * 3, [st[:-2] for st in strides])
    if not dims:
        dims, merged = (1,), [(0,)] * 3
    lv, rv, ov = (CubeTensor(v.array.view_unchecked((*dims, *v.shape[-2:]), (*m, *st[-2:]),
                                                    v.offset), v.dtype)
                  for v, m, st in zip(views, merged, strides, strict=True))
    return lv, rv, ov


def run_naive(backend: Any, lhs: CubeTensor, rhs: CubeTensor, shape: Shape) -> CubeTensor:
    """The one-unit-per-element kernel."""
    out = backend.empty(shape, lhs.dtype)
    lv, rv, ov = kernel_views(lhs, rhs, out)
    backend.launch_planned(naive_kernel(lhs.dtype, len(ov.shape)), out.size, lv.array,
                           rv.array, ov.array)
    return out


def batches_per_launch(backend: Any, units: int) -> int:
    """Most batches one tiled launch covers: the grid's z limit, and fewer than 2**32 units
    in all (`units` per batch)."""
    return int(max(1, min(backend.runtime.properties.max_cube_count[2], (2**32 - 1) // units)))


def tiled_runner(name: str) -> Runner:
    """The runner of tile configuration `name` of `TILES` or `LINE_TILES` (batches split to
    fit the grid's z limit; a line tile runs `LINE_FALLBACK` on operands without whole lines
    or of another dtype than float32)."""
    tile = TILES.get(name) or LINE_TILES[name]

    def run(backend: Any, lhs: CubeTensor, rhs: CubeTensor, shape: Shape) -> CubeTensor:
        out = backend.empty(shape, lhs.dtype)
        lv, rv, ov = kernel_views(lhs, rhs, out)
        m, n = shape[-2], shape[-1]
        if tile.lanes == 1:
            kernel = tiled_kernel(lhs.dtype, len(ov.shape), tile)
        elif lhs.dtype is DType.float32 and whole_lines(rv, tile.lanes) \
                and whole_lines(ov, tile.lanes):
            kernel = line_tiled_kernel(len(ov.shape), tile)
        else:
            return RUNNERS[LINE_FALLBACK](backend, lhs, rhs, shape)
        cx, cy = math.ceil(n / tile.bn), math.ceil(m / tile.bm)
        batches = math.prod(ov.shape[:-2])
        per_launch = batches_per_launch(backend, cx * cy * tile.units)
        for z0 in range(0, batches, per_launch):
            backend.launch_cubes_planned(kernel, (cx, cy, min(per_launch, batches - z0)),
                                         (tile.units_x, tile.units_y), lv.array, rv.array,
                                         ov.array, z0)
        return out

    return run


#: multiply-adds below which a cpu BLAS product runs on one OpenBLAS thread. Higher than the
#: NumPy backend's threshold: OpenBLAS workers still spinning after a threaded call compete with
#: the OpenMP kernels that follow, so at 2 threads a 2-layer transformer step with its
#: [1024, 128] x [128, 512] products threaded took ~600 ms, against ~110 ms with them on one.
CPU_SMALL_MATMUL = 1 << 28


def run_blas(backend: Any, lhs: CubeTensor, rhs: CubeTensor, shape: Shape) -> CubeTensor:
    """numpy's matmul (BLAS for floats, one BLAS thread below `CPU_SMALL_MATMUL`, or two
    halves on two threads from `blas_pair.PAIR_MATMUL` where BLAS may use more than one) on
    zero-copy host views; float16 / bfloat16 multiply in float32 as the NumPy backend does."""
    dtype = lhs.dtype
    try:  # numpy's MemoryError for a product larger than memory: AllocationError
        a, b = _operand(lhs.array), _operand(rhs.array)
        floats = dtype is DType.float32 or dtype is DType.float64
        blas = _numpy_blas()
        if floats and blas.one_thread(a, b):
            # OpenBLAS runs one thread by itself: no pin and restore around the call
            # (threadpoolctl's get / set took ~3 us of a ~4.5 us [64, 64] x [64, 3] product at
            # 2 threads); NaN and inf propagate silently, as in the kernels
            return backend.from_host(blas.quiet_matmul(a, b))
        with np.errstate(all="ignore"):
            if floats:
                out = _paired(blas, a, b)
                if out is None:
                    out = blas.matmul(a, b, CPU_SMALL_MATMUL)
            elif not dtype.is_float:
                out = np.matmul(a, b)
            else:
                out = blas.matmul(a.astype(np.float32), b.astype(np.float32),
                                  CPU_SMALL_MATMUL).astype(dtype.numpy)
        return backend.from_host(out)
    except MemoryError as exc:
        raise backend._allocation_error("matmul", shape, dtype, exc) from exc


def run_gemm(backend: Any, lhs: CubeTensor, rhs: CubeTensor, shape: Shape) -> CubeTensor:
    """The cpu runtime's own float32 / float64 kernel (`burn_cube.runtime.gemm`) on the
    operands' arrays in place: one matrix product (a contiguous batched lhs times a matrix
    flattened into one), or a batch of them (broadcast operands read in place, small
    products on the runtime's threads across the batch); other dtypes run on BLAS."""
    if lhs.dtype not in _CPU_GEMM:
        return run_blas(backend, lhs, rhs, shape)
    out = backend.empty(shape, lhs.dtype)
    a, b, c, runtime = lhs.array, rhs.array, out.array, backend.runtime
    try:
        if len(shape) == 2:
            cpu_gemm.gemm(runtime, a, b, c)
        elif len(rhs.shape) == 2 and lhs.is_contiguous:
            k, n = rhs.shape
            rows = lhs.size // k
            cpu_gemm.gemm(runtime, a.view_unchecked((rows, k), (k, 1), a.offset), b,
                          c.view_unchecked((rows, n), (n, 1), 0))
        else:
            batch = shape[:-2]
            cpu_gemm.gemm_batched(runtime, broadcast_view(lhs, (*batch, *lhs.shape[-2:])).array,
                                  broadcast_view(rhs, (*batch, *rhs.shape[-2:])).array, c)
    except LaunchError as exc:
        raise backend._allocation_error("matmul", shape, lhs.dtype, MemoryError(str(exc))
                                        ) from exc
    return out


def _operand(array: Any) -> np.ndarray:
    """A cpu-runtime array as numpy reads it for a product: an owning array's storage itself
    (the product only reads it), a view's host view."""
    return array.handle if array.base is None else host_view(array)  # type: ignore[no-any-return]


def _paired(blas: Any, a: np.ndarray, b: np.ndarray) -> np.ndarray | None:
    """`a @ b` by `blas_pair` where it applies (a contiguous batched `a` times a matrix as one
    matrix product) below `CPU_SMALL_MATMUL` and OpenBLAS may run more than one thread;
    else None."""
    rows = a
    if a.ndim > 2 and b.ndim == 2 and a.flags.c_contiguous:
        rows = a.reshape(-1, a.shape[-1])
    if not blas_pair.applies(rows, b) or rows.size * b.shape[1] >= CPU_SMALL_MATMUL:
        return None
    libs = [lib for lib in blas._openblas() if lib.get_num_threads() > 1]
    if not libs:
        return None
    return blas_pair.pair_matmul(rows, b, libs).reshape(*a.shape[:-1], b.shape[1])


def _numpy_blas() -> Any:
    """The NumPy backend's `blas` module (imported on the first product: a function-level
    import costs a call per product)."""
    global _BLAS
    if _BLAS is None:
        from burn.backends.numpy import blas

        _BLAS = blas
    return _BLAS


_BLAS: Any = None


def _cupy_view(t: CubeTensor) -> Any:
    """A CuPy array over the storage of `t` with its shape, strides and offset."""
    import cupy

    root = t.array.base if t.array.base is not None else t.array
    item = root.handle.itemsize
    return cupy.ndarray(t.shape, root.handle.dtype, root.handle.data + t.offset * item,
                        tuple(s * item for s in t.strides))


def _gemm_operand(t: CubeTensor) -> tuple[int, int] | None:
    """How cuBLAS (column-major) reads the transpose of the row-major matrix `t` [..., r, c]
    in place: (operation, leading dimension), or None when neither dim is unit-strided (or
    the other's stride overlaps rows)."""
    (r, c), (sr, sc) = t.shape[-2:], t.strides[-2:]
    if (sc == 1 or c == 1) and (r == 1 or sr >= max(c, 1)):
        return _OP_N, sr if r > 1 else max(c, 1)  # stored as the column-major [c, r]
    if (sr == 1 or r == 1) and (c == 1 or sc >= max(r, 1)):
        return _OP_T, sc if c > 1 else max(r, 1)  # stored as the column-major [r, c]
    return None


@functools.cache
def _cublas() -> Any:
    """CuPy's cuBLAS bindings (the module moved between CuPy versions), found once."""
    try:
        from cupy_backends.cuda.libs import cublas
    except ImportError:  # pragma: no cover - depends on the CuPy version
        from cupy.cuda import cublas
    return cublas


def _gemm(backend: Any, lhs: CubeTensor, rhs: CubeTensor, shape: Shape) -> CubeTensor | None:
    """`lhs @ rhs` through cuBLAS on the device pointers (row-major C = A B computed as the
    column-major C^T = B^T A^T), one call in all: `gemmStridedBatchedEx` where the batch
    strides merge into one run, else `gemmBatchedEx` on arrays of matrix pointers (attention
    heads split from a [b, s, h * d] tensor, read in place); None when an operand's layout has
    no unit stride in its matrix dims."""
    out = backend.empty(shape, lhs.dtype)
    lv, rv, ov = kernel_views(lhs, rhs, out)
    a, b = _gemm_operand(lv), _gemm_operand(rv)
    if a is None or b is None:
        return None
    m, k, n = lv.shape[-2], lv.shape[-1], rv.shape[-1]
    dtype, compute, alpha, beta, item = _gemm_types(lhs.dtype, settings.allow_tf32)
    pa, pb, pc = [(t.array if t.array.base is None else t.array.base).handle.data.ptr
                  + t.array.offset * item for t in (lv, rv, ov)]
    batch = ov.shape[:-2]
    strides = [t.array.strides[:-2] for t in (lv, rv, ov)]
    cublas, rt = _cublas(), backend.runtime
    with rt.device, rt.stream:
        handle = _handle(cublas, rt.device)
        if len(batch) > 1:  # batch strides that merge into no single run (heads split from
            # [b, s, h * d]): one call on arrays of matrix pointers, made on the device
            gemm_batched = _gemm_batched_ex()
            if gemm_batched is None:
                return None
            pointers = _batch_pointers(batch, strides, item, (pa, pb, pc))
            cublas.setStream(handle, rt.stream.ptr)
            status = gemm_batched(
                handle, b[0], a[0], n, m, k, alpha, pointers[1].data.ptr, dtype, b[1],
                pointers[0].data.ptr, dtype, a[1], beta, pointers[2].data.ptr, dtype, n,
                math.prod(batch), compute, _GEMM_DEFAULT)
            if status:
                raise DeviceError("matmul", "cublasGemmBatchedEx failed", status=status,
                                  lhs=lhs.shape, rhs=rhs.shape, dtype=lhs.dtype.value)
        else:
            sa, sb, sc = [st[0] if st else 0 for st in strides]  # one run, or one matrix
            cublas.gemmStridedBatchedEx(
                handle, b[0], a[0], n, m, k, alpha, pb, dtype, b[1], sb, pa, dtype, a[1], sa,
                beta, pc, dtype, n, sc, math.prod(batch), compute, _GEMM_DEFAULT)
    return out


@functools.cache
def _gemm_types(dtype: DType, tf32: bool) -> tuple[int, int, int, int, int]:
    """cuBLAS's arguments for products of `dtype` (`tf32`: TF32 allowed): its data type, the
    compute type, the pointers to alpha and beta, and the element size in bytes."""
    wide = np.float64 if dtype is DType.float64 else np.float32
    compute = (_COMPUTE_64F if wide is np.float64 else
               _COMPUTE_32F_FAST_TF32 if tf32 and dtype is DType.float32 else _COMPUTE_32F)
    alpha, beta = _SCALAR_POINTERS[wide]
    return _CUDA_DTYPES[dtype], compute, alpha, beta, dtype.numpy.itemsize


def _gemm_batched_ex() -> Callable[..., int] | None:
    """cuBLAS's `cublasGemmBatchedEx` (CuPy does not bind it) from the libcublas CuPy has
    loaded into this process (after its first handle), typed for ctypes; None where it cannot
    be found (the caller then takes cupy.matmul)."""
    import ctypes
    import re

    global _GEMM_BATCHED_EX
    if _GEMM_BATCHED_EX is None:
        try:
            with open("/proc/self/maps") as maps:
                paths = {m.group(0) for m in re.finditer(r"/\S*/libcublas\.so[.\d]*$",
                                                           maps.read(), re.MULTILINE)}
            function = ctypes.CDLL(sorted(paths)[0]).cublasGemmBatchedEx
        except (OSError, IndexError, AttributeError):
            return None
        i, p = ctypes.c_int, ctypes.c_void_p
        function.argtypes = [p, i, i, i, i, i, p, p, i, i, p, i, i, p, p, i, i, i, i, i]
        function.restype = i
        _GEMM_BATCHED_EX = function
    return _GEMM_BATCHED_EX


#: `_gemm_batched_ex`'s function, once found.
_GEMM_BATCHED_EX: Callable[..., int] | None = None


def _batch_pointers(batch: Shape, strides: list[Shape], item: int,
                    bases: tuple[int, int, int]) -> Any:
    """The device pointers of every matrix of lhs, rhs and out over the batch dims, as a
    [3, prod(batch)] uint64 CuPy array: byte offsets cached on the device per layout, plus
    the three base pointers in one small kernel on the current stream (no host transfer
    per call).

    Args:
        batch: the batch dims of the product.
        strides: each operand's element strides over those dims (lhs, rhs, out).
        item: bytes per element.
        bases: the device pointers of the operands' first matrices.
    Returns:
        The pointer arrays (alive until the caller drops them; CuPy's pool reuses their
        memory only for later work on the same stream).
    """
    import cupy

    key = (cupy.cuda.runtime.getDevice(), batch, tuple(strides), item)  # each GPU its own
    offsets = _POINTER_OFFSETS.get(key)
    if offsets is None:
        offsets = cupy.asarray(batch_offsets(batch, strides).astype(np.uint64)
                               * np.uint64(item))
        if len(_POINTER_OFFSETS) >= _POINTER_LAYOUTS:
            _POINTER_OFFSETS.pop(next(iter(_POINTER_OFFSETS)))
        _POINTER_OFFSETS[key] = offsets
    global _ADD_BASES
    if _ADD_BASES is None:
        _ADD_BASES = cupy.ElementwiseKernel(
            "uint64 offset, uint64 a, uint64 b, uint64 c, int64 count", "uint64 pointer",
            "pointer = offset + (i < count ? a : i < 2 * count ? b : c)", "burn_add_bases")
    return _ADD_BASES(offsets, *(np.uint64(p) for p in bases), offsets.shape[1])


#: Offsets of the matrices of a batch layout on a GPU (`_batch_pointers`), by GPU and layout:
#: the last few layouts.
_POINTER_OFFSETS: dict[tuple[int, Shape, tuple[Shape, ...], int], Any] = {}
_POINTER_LAYOUTS = 64
#: CuPy's kernel adding the base pointers to those offsets (built on first use).
_ADD_BASES: Any = None


def _handle(cublas: Any, device: Any) -> int:
    """CuPy's cuBLAS handle of `device` (the current one) and this thread, given a
    `WORKSPACE_BYTES` workspace the first time it is seen; kept per thread and device (asking
    CuPy took ~4 us a product on the H200's host)."""
    handles = _THREAD_HANDLES.__dict__
    handle = handles.get(device.id)
    if handle is not None:
        return handle
    import cupy

    handle = handles[device.id] = int(cupy.cuda.device.get_cublas_handle())
    if WORKSPACE_BYTES and handle not in _WORKSPACES and hasattr(cublas, "setWorkspace"):
        memory = cupy.cuda.alloc(WORKSPACE_BYTES)
        cublas.setWorkspace(handle, memory.ptr, WORKSPACE_BYTES)
        _WORKSPACES[handle] = memory
    return handle


#: This thread's cuBLAS handles by device id (`_handle`).
_THREAD_HANDLES = threading.local()


def run_cublas(backend: Any, lhs: CubeTensor, rhs: CubeTensor, shape: Shape) -> CubeTensor:
    """cuBLAS on the device buffers, on the runtime's stream: `_gemm` in place where the
    layouts allow, else cupy.matmul (bfloat16, which CuPy lacks, then multiplies float32
    copies and rounds the product back, as the NumPy backend computes it)."""
    out = _gemm(backend, lhs, rhs, shape)
    if out is not None:
        return out
    import cupy

    if lhs.dtype is DType.bfloat16:
        wide = run_cublas(backend, backend.float_cast(lhs, DType.float32),
                          backend.float_cast(rhs, DType.float32), shape)
        return backend.float_cast(wide, DType.bfloat16)
    out = backend.empty(shape, lhs.dtype)
    rt = backend.runtime
    with rt.device, rt.stream:
        cupy.matmul(_cupy_view(lhs), _cupy_view(rhs), out=out.array.handle)
    return out


def run_cublas_dense(backend: Any, lhs: CubeTensor, rhs: CubeTensor, shape: Shape
                     ) -> CubeTensor:
    """`run_cublas` on dense copies of the operands whose batch dims merge into no single
    stride (attention heads split from [b, s, h * d]): one strided batched call after a copy
    each, instead of a call on arrays of matrix pointers."""
    return run_cublas(backend, _one_batch_stride(backend, lhs),
                      _one_batch_stride(backend, rhs), shape)


def _one_batch_stride(backend: Any, t: CubeTensor) -> CubeTensor:
    """`t` itself where its batch dims (all but the last two) merge into one stride, else a
    dense copy."""
    if len(t.shape) <= 3 or len(_coalesced([t.shape[:-2]], [t.strides[:-2]])[0]) <= 1:
        return t
    return contiguous(backend, t)


def run_k_chunks(backend: Any, lhs: CubeTensor, rhs: CubeTensor, shape: Shape) -> CubeTensor:
    """The product as the sum of the products of its depth's chunks of `max_unit_loop`
    elements (each by its own tuned strategy), for a runtime whose units' loops stop at that
    bound (Mesa's llvmpipe) where every kernel's unit would loop past it over the whole
    depth (`_unit_loops`): one kernel loop would end early and leave the sum short, without
    an error."""
    k, step = lhs.shape[-1], backend.runtime.properties.max_unit_loop
    add = backend.float_add if lhs.dtype.is_float else backend.int_add
    lead_l, lead_r = [slice(None)] * (len(lhs.shape) - 1), [slice(None)] * (len(rhs.shape) - 2)
    out: CubeTensor | None = None
    for start in range(0, k, step):
        depth = slice(start, start + step)
        part = matmul(backend, slice_(backend, lhs, [*lead_l, depth]),
                      slice_(backend, rhs, [*lead_r, depth]))
        out = part if out is None else add(out, part)
    assert out is not None  # (k > 0: `matmul` fills a product of depth 0)
    return out


RUNNERS: dict[str, Runner] = {"naive": run_naive, "blas": run_blas, "gemm": run_gemm,
                              "cublas": run_cublas, "cublas_dense": run_cublas_dense,
                              "k_chunks": run_k_chunks,
                              **{name: tiled_runner(name) for name in (*TILES, *LINE_TILES)}}


def candidates(backend: Any, dtype: DType, work: int) -> list[str]:
    """The strategies worth timing for `dtype` on `backend`'s runtime, best guess first.

    Args:
        backend: the cube backend.
        dtype: the operands' dtype.
        work: multiply-adds of the product (its shape bucket's).
    Returns:
        Names of `RUNNERS`. Tiles need 256 units per cube and fit `SHARED_BYTES`; line tiles
        are float32's first guesses on GPU runtimes; the naive kernel runs everywhere.
    """
    from .matmul_kernels import accumulator

    props = backend.runtime.properties
    only = _only(backend, dtype)
    if only is not None:
        return [only]
    if props.name == "cpu" and dtype in _CPU_GEMM:
        return ["gemm"] if work <= CPU_GEMM_ONLY_WORK else ["blas", "gemm"] \
            if work <= CPU_GEMM_TUNE_WORK else ["blas"]
    if props.name == "cpu":
        return ["blas", *CPU_INT_TILES] if work <= CPU_TUNE_WORK else [CPU_INT_TILES[0]]
    item = accumulator(dtype).numpy.itemsize
    lines = LINE_TILES if dtype is DType.float32 else {}
    tiles = [name for name, t in {**lines, **TILES}.items()
             if t.units <= props.max_cube_dim and t.shared_elements() * item <= SHARED_BYTES]
    host = ["cublas", "cublas_dense"] if props.name == "cuda" and dtype.is_float else []
    return [*host, *tiles, "naive"]


def matmul(backend: Any, lhs: CubeTensor, rhs: CubeTensor, strategy: str | None = None
           ) -> CubeTensor:
    """`lhs @ rhs`, batched with broadcasting, as a new dense tensor of lhs's dtype.

    Args:
        backend: the cube backend.
        lhs: [..., m, k].
        rhs: [..., k, n] of lhs's dtype.
        strategy: a name of `RUNNERS` to force (tests); None: the autotuned choice.
    Returns:
        [broadcast batch, m, n].
    Raises:
        ShapeError: shapes that do not multiply.
        DTypeError: different dtypes, or bool.
    """
    dtype, ls, rs = lhs.dtype, lhs.shape, rhs.shape
    if dtype is not rhs.dtype or dtype is DType.bool:
        raise DTypeError("matmul", "needs two float or two int tensors of one dtype",
                         lhs=dtype.value, rhs=rhs.dtype.value)
    shape: Shape
    # the common cases checked cheaply: matrices, a batch times a matrix (a linear layer on
    # [b, s, d]), batches of one shape (attention); others by the op table's rule
    if len(rs) == 2 and len(ls) >= 2 and ls[-1] == rs[0]:
        shape = (*ls[:-1], rs[1])
    elif len(ls) == len(rs) > 2 and ls[-1] == rs[-2] and ls[:-2] == rs[:-2]:
        shape = (*ls[:-1], rs[-1])
    else:
        shape = matmul_shape("matmul", {"lhs": ls, "rhs": rs}, {})[0]  # type: ignore[assignment]
    if 0 in shape:
        return backend.empty(shape, dtype)
    if ls[-1] == 0:
        return full(backend, shape, 0, dtype)
    if strategy is None:
        strategy = _only(backend, dtype) or _tuned(backend, lhs, rhs, shape)
    return RUNNERS[strategy](backend, lhs, rhs, shape)


def _only(backend: Any, dtype: DType) -> str | None:
    """The strategy when `candidates` has just one whatever the shape (float16 / bfloat16 on
    the cpu runtime: BLAS), else None."""
    return "blas" if dtype in _CPU_BLAS_ONLY and backend.runtime.properties.name == "cpu" \
        else None


#: Float dtypes the cpu runtime's own kernel multiplies (raced against BLAS); the others
#: multiply on BLAS in float32.
_CPU_GEMM = frozenset((DType.float32, DType.float64))
_CPU_BLAS_ONLY = frozenset(d for d in DType if d.is_float) - _CPU_GEMM


def _fits(backend: Any, name: str, m: int, n: int) -> bool:
    """Whether strategy `name` can launch an [m, n] product (tiles: one cube per tile, within
    the grid's x and y limits)."""
    tile = TILES.get(name) or LINE_TILES.get(name)
    limit = backend.runtime.properties.max_cube_count
    return tile is None or (math.ceil(n / tile.bn) <= limit[0]
                            and math.ceil(m / tile.bm) <= limit[1])


def _tuned(backend: Any, lhs: CubeTensor, rhs: CubeTensor, shape: Shape) -> str:
    """The autotuned strategy for this dtype, runtime, shape bucket and the operands'
    layouts (`_layout`: a strategy's speed depends on them; remembered per runtime in this
    process, on disk by the autotuner)."""
    exact = _EXACT.get(backend.runtime)
    if exact is None:
        exact = _EXACT[backend.runtime] = {}
    operands = (lhs.dtype, settings.allow_tf32, lhs.shape, rhs.shape, lhs.strides, rhs.strides)
    found = exact.get(operands)
    if found is None:
        if len(exact) >= EXACT_CHOICES:
            exact.clear()
        found = _bucket_choice(backend, lhs, rhs, shape)
        bound = backend.runtime.properties.max_unit_loop
        if bound and _unit_loops(found, lhs.shape[-1]) > bound:
            found = _looping_within(backend, lhs, shape, bound)
        exact[operands] = found
    return found


def _unit_loops(name: str, k: int) -> int:
    """The iterations a unit of strategy `name` loops over a product of depth `k`: one an
    element for the naive kernel, one a k tile (`bk` elements) for a tiled one; 0 for the
    host's products (BLAS, the cpu gemm, cuBLAS)."""
    tile = TILES.get(name) or LINE_TILES.get(name)
    return k if name == "naive" else 0 if tile is None else -(-k // tile.bk)


def _looping_within(backend: Any, lhs: CubeTensor, shape: Shape, bound: int) -> str:
    """For a runtime whose units' loops stop after `bound` iterations: the launchable
    strategy whose units loop least over this product's depth where that is within the
    bound (the tuned choice loops past it: its bucket was tuned on a shallower depth, or the
    naive kernel won), else `run_k_chunks`."""
    k, (m, n) = lhs.shape[-1], shape[-2:]
    names = [name for name in candidates(backend, lhs.dtype, math.prod(shape) * k)
             if _fits(backend, name, m, n) and _unit_loops(name, k) <= bound]
    return min(names, key=lambda name: _unit_loops(name, k)) if names else "k_chunks"


def _bucket_choice(backend: Any, lhs: CubeTensor, rhs: CubeTensor, shape: Shape) -> str:
    """`_tuned`'s strategy by shape bucket and layouts: remembered, or timed now."""
    from burn_cube.autotune import bucket, default_tuner

    batch, (m, n), k = math.prod(shape[:-2]), shape[-2:], lhs.shape[-1]
    dtype = lhs.dtype.value + ("+tf32" if settings.allow_tf32 and lhs.dtype is DType.float32
                               else "")  # cuBLAS's TF32 products are others, far faster
    key = (dtype, bucket(batch), bucket(m), bucket(k), bucket(n), _layout(lhs) + _layout(rhs))
    known = _CHOICES.setdefault(backend.runtime, {})
    if key in known:
        return known[key]
    names = [name for name in candidates(backend, lhs.dtype, math.prod(key[1:5]))
             if _fits(backend, name, key[2], key[4])]

    def run(name: str) -> None:
        RUNNERS[name](backend, lhs, rhs, shape)

    rt = backend.runtime
    known[key] = names[0] if len(names) == 1 else str(default_tuner().tune(
        "burn.matmul.{}.b{}.m{}.k{}.n{}.{}".format(*key), _tuning_device(rt),
        batch * m * n * k, names, run, backend.sync))
    return known[key]


def _tuning_device(runtime: Any) -> str:
    """The device of an autotuned choice; on the cpu runtime with its OpenMP thread count
    (`OMP_NUM_THREADS`, as its kernels read it: which product is fastest depends on it) and
    the version of its gemm kernel (a new one races BLAS again)."""
    device = f"{runtime.name}:{runtime.properties.device}"
    if runtime.name == "cpu":
        device += f" omp={os.environ.get('OMP_NUM_THREADS', '')} gemm={cpu_gemm.identity()}"
    return device


def _layout(t: CubeTensor) -> str:
    """An operand's layout class for the autotuner: ``c`` dense, ``t`` its matrix dims
    transposed (column-major), ``s`` any other strides."""
    if t.is_contiguous:
        return "c"
    return "t" if t.strides[-2] == 1 else "s"


class CubeMatmulOps:
    """float_matmul / int_matmul."""

    def float_matmul(self, lhs: CubeTensor, rhs: CubeTensor) -> CubeTensor:
        """Batched matmul; float16 / bfloat16 accumulate in float32."""
        return matmul(self, lhs, rhs)

    def int_matmul(self, lhs: CubeTensor, rhs: CubeTensor) -> CubeTensor:
        """Batched matmul, exact modulo 2**32 (int32) or 2**64 (int64) as numpy's."""
        return matmul(self, lhs, rhs)

