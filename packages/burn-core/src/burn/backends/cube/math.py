"""Elementwise ops of the cube backends that the op table has no lowering for: integer power,
atan2 and the activations gelu, softplus, log_sigmoid, mish and selu, one kernel each; and
the exact GELU's cdf and its backward from it, which Autodiff's GELU rule uses.

`MATH` maps an op to its builder expression; `run_math` broadcasts the tensor inputs as stride-0
views (dense inputs of the output's shape are seen as rank 1), and the kernel computes in a work
dtype (float32 for float16 / bfloat16, as the NumPy backend; the tensor's own dtype otherwise),
rounding once on the store.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from burn.dtype import DType
from burn.ir.cube import cube_dtype, widened, work_dtype
from burn_cube.codegen.table_c import ERF_F32_DENOMINATOR, ERF_F32_NUMERATOR

from .elementwise import CUBE_DIM, GPU_RUN, broadcast_view, flat_view, run_positions
from .kernel_cache import cached_kernel
from .tensor import CubeTensor

#: SELU's constants (torch's).
SELU_ALPHA, SELU_SCALE = 1.6732632423543772, 1.0507009873554805
Emit = Callable[[Any, list[Any]], Any]


def _powi(b: Any, xs: list[Any]) -> Any:
    """`x ** e` by squaring, wrapping as integer products do; a negative `e` gives torch's
    1 / x**|e| truncated (1 for x = 1, +-1 for x = -1, else 0)."""
    x, e = xs
    result = b.local(x.dtype, 1)
    base, exp = b.local(x.dtype, x), b.local(x.dtype, e)
    with b.if_(exp < 0):
        odd = (exp & 1) == 1
        b.set(result, b.select(x == 1, 1, b.select(x == -1, b.select(odd, -1, 1), 0)))
        b.set(exp, 0)
    with b.while_(exp > 0):
        with b.if_((exp & 1) == 1):
            b.set(result, result * base)
        b.set(base, base * base)
        b.set(exp, exp // 2)  # not `>> 1`: WGSL (naga) rejects u32(1li), an i64 shift count
    return result


def _signbit(b: Any, v: Any) -> Any:
    """Whether `v` has its sign bit set (-0.0 included: 1 / -0.0 is -inf)."""
    return b.or_(v < 0.0, b.and_(v == 0.0, 1.0 / v < 0.0))


#: Cephes' atanf polynomial on [-tan(pi/8), tan(pi/8)] (<= 2 ulp for float32).
_ATAN_F32 = (8.05374449538e-2, -1.38776856032e-1, 1.99777106478e-1, -3.33329491539e-1)
_TAN_PI_8 = 0.41421356237309503


def _atan_unit(b: Any, r: Any) -> Any:
    """atan of `r` in [0, 1]: the runtime's atan for float64; for float32 Cephes' polynomial
    after atan(r) = pi/4 + atan((r - 1) / (r + 1)) above tan(pi/8) (WGSL's atan is ~1e-5)."""
    if r.dtype.bits == 64:
        return b.atan(r)
    high = r > _TAN_PI_8
    x = b.local(r.dtype, b.select(high, (r - 1.0) / (r + 1.0), r))
    z = b.local(r.dtype, x * x)
    poly = _ATAN_F32[0]
    for c in _ATAN_F32[1:]:
        poly = poly * z + c
    return b.select(high, math.pi / 4, 0.0) + (poly * z * x + x)


def _atan2(b: Any, xs: list[Any]) -> Any:
    """atan2(y, x) from atan of the smaller over the larger magnitude, with C's special values
    (signed zeros, +-pi for a negative x, +-pi/4 and +-3pi/4 for infinite pairs, NaN)."""
    y, x = xs
    ay, ax = b.local(y.dtype, abs(y)), b.local(x.dtype, abs(x))
    swap = ay > ax
    t = b.local(y.dtype, _atan_unit(b, b.select(swap, ax / ay, ay / ax)))
    b.set(t, b.select(swap, math.pi / 2 - t, t))
    b.set(t, b.select(b.and_(ay == 0.0, ax == 0.0), 0.0, t))
    b.set(t, b.select(b.and_(b.isinf(ay), b.isinf(ax)), math.pi / 4, t))
    b.set(t, b.select(_signbit(b, x), math.pi - t, t))
    b.set(t, b.select(_signbit(b, y), -t, t))
    return b.select(b.or_(b.isnan(y), b.isnan(x)), y + x, t)  # WGSL may lose NaNs in atan


def _erf(b: Any, x: Any) -> Any:
    """erf: libm's for float64; for float32 the NumPy backend's rational approximation
    (burn-cube's `ERF_F32_NUMERATOR` / `ERF_F32_DENOMINATOR`, which the C target's fused erf
    uses too; vectorizable, unlike libm's erff)."""
    if x.dtype.bits == 64:
        return b.erf(x)
    xc = b.local(x.dtype, b.select(x > 4.0, 4.0, b.select(x < -4.0, -4.0, x)))  # NaN stays
    x2 = b.local(x.dtype, xc * xc)
    p, q = ERF_F32_NUMERATOR[0], ERF_F32_DENOMINATOR[0]
    for c in ERF_F32_NUMERATOR[1:]:
        p = p * x2 + c
    for c in ERF_F32_DENOMINATOR[1:]:
        q = q * x2 + c
    # +-1 exactly from |x| = 4 (erf rounds to it there): NVIDIA's Vulkan division left the
    # quotient an ulp inside, so the exact GELU of -inf was -inf (torch NaN) and of -30 -4e-7;
    # and capped to [-1, 1] below (the quotient reached 1.0000002 near |x| = 3.9: the exact
    # GELU of x in (-5.7, -5.1) came out positive)
    r = b.local(x.dtype, p * xc / q)
    r = b.select(r > 1.0, 1.0, b.select(r < -1.0, -1.0, r))
    return b.select(x >= 4.0, 1.0, b.select(x <= -4.0, -1.0, r))


def _gelu(b: Any, xs: list[Any]) -> Any:
    """x (1 + erf(x / sqrt 2)) / 2 as x cdf(x), the NumPy backend's form: halved before the
    product (exact), so that it does not overflow for |x| past half the float range."""
    x = xs[0]
    return (_erf(b, x * (1 / math.sqrt(2))) + 1.0) * 0.5 * x


def _gelu_cdf(b: Any, xs: list[Any]) -> Any:
    """cdf(x) = (1 + erf(x / sqrt 2)) / 2, which the exact GELU's backward reads."""
    return (_erf(b, xs[0] * (1 / math.sqrt(2))) + 1.0) * 0.5


def _gelu_backward_cdf(b: Any, xs: list[Any]) -> Any:
    """grad (cdf + x pdf(x)) of inputs (x, cdf, grad), in Autodiff's rule's order."""
    x, cdf, grad = xs
    return grad * (cdf + x * (b.exp(x * x * -0.5) * (1 / math.sqrt(2 * math.pi))))


def _gelu_tanh(b: Any, xs: list[Any]) -> Any:
    """x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) / 2, the NumPy backend's terms, halved
    before the product as in `_gelu`."""
    x = xs[0]
    inner = ((x * x * 0.044715 + 1.0) * x) * math.sqrt(2 / math.pi)
    return (b.tanh(inner) + 1.0) * 0.5 * x


def atanh2(b: Any, s: Any, terms: int) -> Any:
    """2 atanh(s) = log((1 + s) / (1 - s)) by its first `terms` odd powers (for small |s|;
    plain arithmetic, which C compilers vectorize, unlike libm calls)."""
    s2 = b.local(s.dtype, s * s)
    series = 1.0 / (2 * terms - 1)
    for k in range(2 * terms - 3, 0, -2):
        series = series * s2 + 1.0 / k
    return series * s * 2.0


def _log1p_unit(b: Any, t: Any) -> Any:
    """log1p of `t` in [0, 1] (or NaN): libm's for float64; for float32 2 atanh(s) with
    s = t / (2 + t) <= 1/3, eight terms (< 1e-9 off; libm's log1pf is a scalar call, WGSL has
    no log1p)."""
    if t.dtype.bits == 64:
        return b.log1p(t)
    return atanh2(b, b.local(t.dtype, t / (t + 2.0)), 8)


def _softplus_of(b: Any, x: Any, beta: Any, threshold: Any) -> Any:
    """log1p(exp(beta x)) / beta as max(beta x, 0) + log1p(exp(-|beta x|)), `x` itself where
    beta x > threshold (NaN stays NaN)."""
    bx = b.local(x.dtype, x * beta)
    soft = (b.select(bx > 0.0, bx, 0.0) + _log1p_unit(b, b.exp(-abs(bx)))) / beta
    return b.select(bx > threshold, x, soft)


def _softplus(b: Any, xs: list[Any]) -> Any:
    """softplus(x, beta, threshold)."""
    return _softplus_of(b, *xs)


def _log_sigmoid(b: Any, xs: list[Any]) -> Any:
    """-softplus(-x) (threshold 20), a zero result as +0.0 (torch's, for x past ~104), where
    the negation gave -0.0 (a select: WGSL compilers fold 0 - y into -y)."""
    out = b.local(xs[0].dtype, -_softplus_of(b, -xs[0], 1.0, 20.0))
    return b.select(out == 0.0, 0.0, out)


def _mish(b: Any, xs: list[Any]) -> Any:
    """x tanh(softplus(x)) (threshold 20)."""
    return xs[0] * b.tanh(_softplus_of(b, xs[0], 1.0, 20.0))


def _selu(b: Any, xs: list[Any]) -> Any:
    """scale (x, or alpha (exp(x) - 1) where x <= 0), exp(x) - 1 as tanh(x / 2) (exp(x) + 1)
    below |x| = 0.5 (exact for small x, -0.0 kept)."""
    x = xs[0]
    c = b.local(x.dtype, b.select(x > 0.0, 0.0, x))
    e = b.local(x.dtype, b.exp(c))
    neg = b.select(c > -0.5, b.tanh(c * 0.5) * (e + 1.0), e - 1.0) * SELU_ALPHA
    return b.select(x <= 0.0, neg, x) * SELU_SCALE


#: op (gelu: with its `approximate`) -> builder expression over the inputs, then scalars.
MATH: dict[str, Emit] = {
    "int_powi": _powi, "int_powi_scalar": _powi, "float_atan2": _atan2, "gelu": _gelu,
    "gelu_cdf": _gelu_cdf, "gelu_backward_cdf": _gelu_backward_cdf,
    "gelu_tanh": _gelu_tanh, "softplus": _softplus, "log_sigmoid": _log_sigmoid,
    "mish": _mish, "selu": _selu,
}


#: The activations the fusion decorator records and emits into fused kernels by their `MATH`
#: expression (`emit_fused_math`).
FUSED_MATH = ("gelu", "softplus", "log_sigmoid", "mish", "selu")


def math_key(name: str, approximate: str | None = None) -> str:
    """The `MATH` key of activation `name` (GELU's by its `approximate`)."""
    return "gelu_tanh" if approximate == "tanh" else name


def emit_fused_math(b: Any, name: str, inputs: list[Any], scalars: list[Any],
                    env: dict[str, Any]) -> Any:
    """The value of `FUSED_MATH` op `name` in a fused kernel: its `MATH` expression over the
    tensor `inputs` (builder values, float16 / bfloat16 ones first widened to float32, as its
    own kernel computes), then its float `scalars` (kernel scalars of the work dtype); `env`
    holds its compile-time arguments.

    Returns:
        The builder value, in the work dtype (the caller rounds it on the store).
    """
    values = [b.local(w.dtype, w) for w in (widened(b, x) for x in inputs)]
    return MATH[math_key(name, env.get("approximate"))](b, values + scalars)


@cached_kernel
def math_kernel(key: str, dtype: DType, tensors: int, scalars: int, rank: int,
                run: int = 1) -> Any:
    """The kernel of `MATH[key]` over `tensors` strided inputs of `dtype` and rank `rank`, then
    `scalars` runtime scalars (of the work dtype), then the output; each unit computes `run`
    positions a span of ``ceil(len / run)`` apart (adjacent units at adjacent positions)."""
    from burn_cube import KernelBuilder

    b = KernelBuilder(key)
    cube, work = cube_dtype(key, dtype), cube_dtype(key, work_dtype(dtype))
    ins = [b.tensor(f"x{i}", cube, rank=rank, write=False) for i in range(tensors)]
    params = [b.scalar(f"s{i}", work) for i in range(scalars)]
    out = b.tensor("out", cube, rank=rank, write=True)
    for pos in run_positions(b, out.len, run):
        with b.if_(pos < out.len):
            xs = [b.local(work, b.cast(t[b.index_of(t, pos)], work)) for t in ins]
            out[b.index_of(out, pos)] = b.cast(MATH[key](b, xs + params), cube)
    return b.kernel()


def run_math(backend: Any, key: str, tensors: list[CubeTensor], scalars: list[Any]
             ) -> CubeTensor:
    """Launch `MATH[key]` over `tensors` (broadcast) and host `scalars` on `backend`: on GPU
    runtimes `GPU_RUN` positions a unit (fewer cubes: the exact GELU over 16M floats took 62 us
    one position a unit on an H200, against torch's 36).

    Returns:
        A new contiguous tensor of the broadcast shape and the first input's dtype.
    """
    dtype = tensors[0].dtype
    shape = tuple(int(d) for d in np.broadcast_shapes(*(t.shape for t in tensors)))
    out = backend.empty(shape, dtype)
    if out.size == 0:
        return out
    if all(t.shape == shape and t.is_contiguous for t in tensors):
        views, out_view = [flat_view(t) for t in tensors], flat_view(out)
    else:
        views, out_view = [broadcast_view(t, shape) for t in tensors], out
    run = 1 if backend.runtime_name == "cpu" or out.size < GPU_RUN * CUBE_DIM else GPU_RUN
    kernel = math_kernel(key, dtype, len(tensors), len(scalars), len(out_view.shape), run)
    host = [float(s) if dtype.is_float else np.array(s).astype(dtype.numpy).item()
            for s in scalars]  # an int scalar wraps into the dtype, as the NumPy backend's
    backend.launch_planned(kernel, -(-out.size // run), *(v.array for v in views), *host,
                           out_view.array)
    return out


class CubeMathOps:
    """int_powi(_scalar), float_atan2, gelu (with gelu_with_cdf / gelu_backward_from_cdf),
    softplus, log_sigmoid, mish and selu."""

    def int_powi(self, lhs: CubeTensor, rhs: CubeTensor) -> CubeTensor:
        """`lhs ** rhs` (wrapping; negative exponents as torch)."""
        return run_math(self, "int_powi", [lhs, rhs], [])

    def int_powi_scalar(self, lhs: CubeTensor, rhs: int) -> CubeTensor:
        """`lhs ** rhs`; `rhs` wraps into lhs's dtype first (as the NumPy backend)."""
        return run_math(self, "int_powi_scalar", [lhs], [rhs])

    def float_atan2(self, lhs: CubeTensor, rhs: CubeTensor) -> CubeTensor:
        return run_math(self, "float_atan2", [lhs, rhs], [])

    def gelu(self, x: CubeTensor, approximate: str) -> CubeTensor:
        """Exact ("none") or tanh GELU."""
        return run_math(self, math_key("gelu", approximate), [x], [])

    # Not protocol ops: Autodiff's exact GELU rule uses them where the inner backend has them.
    def gelu_with_cdf(self, x: CubeTensor) -> tuple[CubeTensor, CubeTensor]:
        """Exact GELU of x (the `gelu` kernel's values) and cdf(x), which its backward reads:
        two kernels reading x (on the cpu faster than x * cdf, which reads two tensors)."""
        return run_math(self, "gelu", [x], []), run_math(self, "gelu_cdf", [x], [])

    def gelu_backward_from_cdf(self, x: CubeTensor, cdf: CubeTensor,
                               grad: CubeTensor) -> CubeTensor:
        """Exact GELU's input gradient grad (cdf + x pdf(x)) in one kernel instead of the
        rule's ops (the composite from the saved output took eight)."""
        return run_math(self, "gelu_backward_cdf", [x, cdf, grad], [])

    def softplus(self, x: CubeTensor, beta: float, threshold: float) -> CubeTensor:
        return run_math(self, "softplus", [x], [beta, threshold])

    def log_sigmoid(self, x: CubeTensor) -> CubeTensor:
        return run_math(self, "log_sigmoid", [x], [])

    def mish(self, x: CubeTensor) -> CubeTensor:
        return run_math(self, "mish", [x], [])

    def selu(self, x: CubeTensor) -> CubeTensor:
        return run_math(self, "selu", [x], [])
