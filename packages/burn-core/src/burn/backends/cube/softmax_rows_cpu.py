"""Softmax along the last dim of a dense float32 / float64 tensor on the cpu runtime: a unit per
row, ``exp(x - max) * (1 / sum)`` as torch's CPU kernel.

The row's max runs in `norm_rows_cpu.LANES` independent chains (scalar: gcc vectorizes no
NaN-aware max; a NaN makes the sum NaN, so the max may skip it), the exponentials are written
to the output by one vectorized loop, summed by another (`norm_rows_cpu.LANES` partial sums)
and scaled by a third. The three-pass kernel of `reduction_kernels` took 1.46x as long over
the attention scores of a transformer step ([16, 4, 64, 64] float32: 306 against 209 us, 1
thread; [1024, 16]: 112 against 30 us). Log-softmax, other dtypes, strided rows and rows
shorter than the lanes stay on that kernel.

Backward from the output (`backward`, the cube backends' `softmax_backward_from_output`, which
Autodiff's softmax rule calls): ``out * (grad - sum(grad * out))`` a row per unit, where the
forward's rows kernel would serve; the composite of backend ops elsewhere.
"""

from __future__ import annotations

from typing import Any

from burn.dtype import DType
from burn.ir.cube import cube_dtype

from .kernel_cache import cached_kernel
from .layout import dense_from_start
from .norm_rows_cpu import LANES, _lane_fold, _lane_sums
from .tensor import CubeTensor


def serves(backend: Any, x: CubeTensor, dim: int, log: bool) -> bool:
    """Whether the rows kernel takes this softmax: the cpu runtime, float32 / float64, not
    log, `x` dense, `dim` its last, rows of at least `LANES` elements."""
    return (not log and backend.runtime_name == "cpu"
            and (x.dtype is DType.float32 or x.dtype is DType.float64)
            and dim == len(x.shape) - 1 and x.shape[dim] >= LANES and x.is_contiguous)


@cached_kernel
def kernel(dtype: Any) -> Any:
    """Softmax of a dense row per unit (module docstring).

    Args:
        dtype: the burn-cube dtype of `x`, `out` and the accumulation.

    Returns:
        A kernel taking ``x, out, m, n``: rank-1 tensors, m dense rows of n elements.
    """
    from burn_cube import KernelBuilder, u32

    b = KernelBuilder("softmax_rows_cpu", unit_work="n")
    x = b.tensor("x", dtype, write=False)
    out = b.tensor("out", dtype, write=True)
    m, n = b.scalar("m", u32), b.scalar("n", u32)
    r = b.ABSOLUTE_POS
    with b.if_(r < m):
        start = b.local(u32, r * n)
        peak = _lane_fold(b, dtype, n, lambda k: (x[start + k],), x[start],
                          lambda part, value: b.select(value > part, value, part))[0]
        with b.for_range(0, n) as k:
            out[start + k] = b.exp(x[start + k] - peak)
        total = _lane_sums(b, dtype, n, lambda k: (out[start + k],))[0]
        scale = b.local(dtype, 1 / total)
        with b.for_range(0, n) as k:
            out[start + k] = out[start + k] * scale
    return b.kernel()


@cached_kernel
def backward_kernel(dtype: Any) -> Any:
    """Softmax's input gradient from its output, ``out * (grad - sum(grad * out))`` of a dense
    row per unit: the sum in `LANES` partial sums, then one loop (both vectorize).

    Returns:
        A kernel taking ``out, grad, dx, m, n``: rank-1 tensors, m dense rows of n elements.
    """
    from burn_cube import KernelBuilder, u32

    b = KernelBuilder("softmax_rows_cpu_backward", unit_work="n")
    out = b.tensor("out", dtype, write=False)
    grad = b.tensor("grad", dtype, write=False)
    dx = b.tensor("dx", dtype, write=True)
    m, n = b.scalar("m", u32), b.scalar("n", u32)
    r = b.ABSOLUTE_POS
    with b.if_(r < m):
        start = b.local(u32, r * n)
        total = _lane_sums(b, dtype, n, lambda k: (grad[start + k] * out[start + k],))[0]
        with b.for_range(0, n) as k:
            dx[start + k] = out[start + k] * (grad[start + k] - total)
    return b.kernel()


def softmax(backend: Any, x: CubeTensor, out: CubeTensor) -> None:
    """Write the softmax of `x` (`serves`) along its last dim into the new dense `out`."""
    n = x.shape[-1]
    rows = x.size // n
    backend.launch_planned(kernel(cube_dtype("softmax", x.dtype)), rows,
                           dense_from_start(backend, x).array, out.flat().array, rows, n)


def backward(backend: Any, out: CubeTensor, grad: CubeTensor, dim: int) -> CubeTensor:
    """Softmax's input gradient ``out * (grad - sum(grad * out, dim))`` from its output: the
    rows kernel where `serves` takes `out` and `grad` is dense, else the composite of backend
    ops (as Autodiff's rule)."""
    if not (serves(backend, out, dim, False) and grad.is_contiguous and grad.shape == out.shape
            and grad.dtype is out.dtype):
        total = backend.float_sum_dim(backend.float_mul(grad, out), dim)
        return backend.float_mul(out, backend.float_sub(grad, total))
    n = out.shape[-1]
    rows = out.size // n
    dx = backend.empty(out.shape, out.dtype)
    backend.launch_planned(backward_kernel(cube_dtype("softmax", out.dtype)), rows,
                           dense_from_start(backend, out).array,
                           dense_from_start(backend, grad).array, dx.flat().array, rows, n)
    return dx
