"""The op table: one row per op of the backend protocol.

Rows are written by family; a row given several kinds becomes one op per kind
(``add`` for float and int is ``float_add`` and ``int_add``). `OPS` maps each backend method
name to its `OpDef`. The protocol (`burn.backend.protocol`) is checked against this table by
`check_protocol` in the op-table tests, and a backend class is checked by the device registry
when it loads: adding an op is one row here plus its implementation in every backend.

Cube lowerings name burn-cube's expression-table ops (add, exp, select, ...); operands are
parameter names, constants or nested lowerings. For ``clamp`` a None bound drops its min/max.
"""

from __future__ import annotations

from typing import Any

from burn.dtype import Kind
from burn.ir import rules as r
from burn.ir.opdef import CubeExpr, OpDef
from burn.ir.rules import Rule
from burn.ir.signature import parse_params, parse_results

OPS: dict[str, OpDef] = {}

_KINDS = {"float": Kind.FLOAT, "int": Kind.INT, "bool": Kind.BOOL}
FIB = ("float", "int", "bool")
FI = ("float", "int")


def op(name: str, params: str, returns: str, shape: Rule, *, family: str,
       kinds: tuple[str, ...] = ("float",), cube: CubeExpr | None = None,
       prefixed: bool = True, default: bool = False) -> None:
    """Add a row per kind: ``{kind}_{name}`` (or `name` itself when not `prefixed`)."""
    for kind_name in kinds or (None,):
        kind = _KINDS.get(kind_name) if kind_name else None
        full = f"{kind_name}_{name}" if prefixed and kind_name else name
        if full in OPS:
            raise ValueError(f"op table: {full} defined twice")
        OPS[full] = OpDef(full, kind, family, parse_params(params, kind, full),
                          parse_results(returns, kind, full), returns, shape, cube, default)


def _module(name: str, params: str, returns: str, shape: Rule, default: bool = False) -> None:
    op(name, params, returns, shape, family="module", kinds=(), default=default)


def _activation(name: str, params: str, cube: CubeExpr | None = None,
                shape: Rule = r.same) -> None:
    op(name, params, "F", shape, family="activation", prefixed=False, cube=cube, default=True)


def _sigmoid(x: CubeExpr | str) -> CubeExpr:
    return ("div", 1.0, ("add", 1.0, ("exp", ("neg", x))))


def _clamp(x: CubeExpr | str, low: str | float | None, high: str | float | None,
           floats: bool = True) -> CubeExpr:
    """`x` clamped to [low, high]; a None bound (or a bound argument that is None) is open.
    Floats keep NaN through an explicit isnan, and a zero `x` at a zero bound keeps its own
    sign (relu(-0.0) is -0.0): NVIDIA's Vulkan driver compiles a select on a comparison into
    min / max, which drop both (WGSL lets drivers assume there is no NaN); `isnan` and
    `iszero` read the bits there."""
    lowered: Any = x if low is None else _bounded(x, ("select", ("lt", x, low), low, x), low,
                                                  floats)
    clamped = lowered if high is None else _bounded(
        lowered, ("select", ("gt", lowered, high), high, lowered), high, floats)
    return ("select", ("isnan", x), x, clamped) if floats else clamped


def _bounded(x: CubeExpr | str, selected: CubeExpr, bound: str | float, floats: bool
             ) -> CubeExpr:
    """`selected` (x or its bound), or float `x` itself where x and the bound are zeros."""
    if not floats or (isinstance(bound, float) and bound != 0.0):
        return selected
    zeros = ("iszero", x) if isinstance(bound, float) else ("and", ("iszero", x),
                                                             ("iszero", bound))
    return ("select", zeros, x, selected)


def _float_remainder(a: str, b: str) -> CubeExpr:
    """torch's float remainder: the exact fmod, shifted by the divisor where the signs differ
    (3 % inf is 3, 7 % -inf is -inf; a zero result keeps the dividend's sign)."""
    m = ("fmod", a, b)
    shift = ("and", ("ne", m, 0.0), ("ne", ("lt", m, 0.0), ("lt", b, 0.0)))
    return ("select", shift, ("add", m, b), m)


def _sign(x: str) -> CubeExpr:
    return ("select", ("gt", x, 0), 1, ("select", ("lt", x, 0), -1, 0))  # NaN, -0: 0 (torch)


def _zero_kept(x: str, odd: CubeExpr) -> CubeExpr:
    """An odd function's lowering with +-0.0 passed through (its sign kept, as torch)."""
    return ("select", ("eq", x, 0), x, odd)


def _expm1(x: str) -> CubeExpr:
    """exp(x) - 1, as tanh(x / 2) (exp(x) + 1) below |x| = 0.5: to a few ulps for small x
    (exp(x) - 1 lost them) and -0.0 kept."""
    small = ("mul", ("tanh", ("mul", x, 0.5)), ("add", ("exp", x), 1.0))
    return ("select", ("lt", ("abs", x), 0.5), small, ("sub", ("exp", x), 1.0))


def _asinh(x: str) -> CubeExpr:
    """asinh without overflow or cancellation: log1p(a + a^2 / (1 + sqrt(1 + a^2))) below
    |x| = 1, log(a) + log(1 + sqrt(1 + 1 / a^2)) above (a = |x|; log(a + sqrt(a^2 + 1))
    overflowed past sqrt(max) and lost small values to the rounding of 1 + a)."""
    a = ("abs", x)
    square = ("mul", a, a)
    small = ("log1p", ("add", a, ("div", square, ("add", 1.0, ("sqrt", ("add", 1.0, square))))))
    large = ("add", ("log", a), ("log", ("add", 1.0, ("sqrt", ("add", 1.0, ("div", 1.0, square))))))
    result = ("select", ("lt", a, 1.0), small, large)
    return _zero_kept(x, ("select", ("lt", x, 0), ("neg", result), result))


def _acosh(x: str) -> CubeExpr:
    """acosh without overflow: NaN below 1, log1p(t + sqrt(2t + t^2)) (t = x - 1) below 2,
    log(x) + log(1 + sqrt(1 - 1 / x^2)) above (log(x + sqrt(x^2 - 1)) overflowed past
    sqrt(max), and gave -inf or inf, not NaN, for large negative x)."""
    t = ("sub", x, 1.0)
    near = ("log1p", ("add", t, ("sqrt", ("add", ("mul", 2.0, t), ("mul", t, t)))))
    far = ("add", ("log", x), ("log", ("add", 1.0, ("sqrt", ("sub", 1.0, ("div", 1.0, (
        "mul", x, x)))))))
    return ("select", ("lt", x, 1.0), float("nan"), ("select", ("lt", x, 2.0), near, far))


def _floor_div(a: str, b: str) -> CubeExpr:
    """Integer floor division from the truncating `div`."""
    q = ("div", a, b)
    inexact = ("ne", ("mul", q, b), a)
    return ("select", ("and", inexact, ("ne", ("lt", a, 0), ("lt", b, 0))), ("sub", q, 1), q)


def _floor_mod(a: str, b: str) -> CubeExpr:
    return ("sub", a, ("mul", _floor_div(a, b), b))


# --- creation, I/O, casts -----------------------------------------------------------------
op("from_data", "data: data, device: device", "T", r.from_data, family="creation", kinds=FIB)
op("into_data", "x: T", "data", r.none, family="creation", kinds=FIB)
op("to_device", "x: T, device: device", "T", r.same, family="creation", kinds=FIB)
op("empty", "shape: shape, dtype: dtype, device: device", "T", r.full, family="creation",
   kinds=FI)
op("full", "shape: shape, value: scalar, dtype: dtype, device: device", "T", r.full,
   family="creation", kinds=FI)
op("full", "shape: shape, value: bool, device: device", "T", r.full, family="creation",
   kinds=("bool",))
op("random", "shape: shape, dist: dist, dtype: dtype, device: device", "T", r.full,
   family="creation")
op("random", "shape: shape, low: int, high: int, dtype: dtype, device: device", "T", r.full,
   family="creation", kinds=("int",))
op("arange", "start: int, end: int, step: int, dtype: dtype, device: device", "T", r.arange,
   family="creation", kinds=("int",))
op("cast", "x: T, dtype: dtype", "T", r.same, family="creation", kinds=FI,
   cube=("cast", "x", "dtype"))
op("into_int", "x: T, dtype: dtype", "I", r.same, family="creation", kinds=("float", "bool"),
   cube=("cast", "x", "dtype"))
op("into_float", "x: T, dtype: dtype", "F", r.same, family="creation", kinds=("int", "bool"),
   cube=("cast", "x", "dtype"))

# --- arithmetic ---------------------------------------------------------------------------
for _name, _cube in (("add", "add"), ("sub", "sub"), ("mul", "mul")):
    op(_name, "lhs: T, rhs: T", "T", r.elementwise, family="arithmetic", kinds=FI,
       cube=(_cube, "lhs", "rhs"))
    op(f"{_name}_scalar", "lhs: T, rhs: scalar", "T", r.same, family="arithmetic", kinds=FI,
       cube=(_cube, "lhs", "rhs"))
for _suffix, _rhs, _shape in (("", "T", r.elementwise), ("_scalar", "scalar", r.same)):
    op(f"div{_suffix}", f"lhs: T, rhs: {_rhs}", "T", _shape, family="arithmetic",
       cube=("div", "lhs", "rhs"))
    op(f"div{_suffix}", f"lhs: T, rhs: {_rhs}", "T", _shape, family="arithmetic",
       kinds=("int",), cube=_floor_div("lhs", "rhs"))
    op(f"remainder{_suffix}", f"lhs: T, rhs: {_rhs}", "T", _shape, family="arithmetic",
       cube=_float_remainder("lhs", "rhs"))
    op(f"remainder{_suffix}", f"lhs: T, rhs: {_rhs}", "T", _shape, family="arithmetic",
       kinds=("int",), cube=_floor_mod("lhs", "rhs"))
    op(f"fmod{_suffix}", f"lhs: T, rhs: {_rhs}", "T", _shape, family="arithmetic",
       cube=("fmod", "lhs", "rhs"))
op("neg", "x: T", "T", r.same, family="arithmetic", kinds=FI, cube=("neg", "x"))
op("recip", "x: T", "T", r.same, family="arithmetic", cube=("div", 1.0, "x"))
op("matmul", "lhs: T, rhs: T", "T", r.matmul, family="arithmetic", kinds=FI)
op("clamp", "x: T, min: scalar?, max: scalar?", "T", r.same, family="arithmetic",
   cube=_clamp("x", "min", "max"))
op("clamp", "x: T, min: scalar?, max: scalar?", "T", r.same, family="arithmetic",
   kinds=("int",), cube=_clamp("x", "min", "max", floats=False))
op("powf", "lhs: T, rhs: T", "T", r.elementwise, family="arithmetic",
   cube=("pow", "lhs", "rhs"))
op("powf_scalar", "lhs: T, rhs: float", "T", r.same, family="arithmetic",
   cube=("pow", "lhs", "rhs"))
op("powi", "lhs: T, rhs: T", "T", r.elementwise, family="arithmetic", kinds=("int",))
op("powi_scalar", "lhs: T, rhs: int", "T", r.same, family="arithmetic", kinds=("int",))

# --- math (elementwise) -------------------------------------------------------------------
for _name in ("exp", "log", "log1p", "sqrt", "sin", "cos", "tan", "sinh", "cosh", "tanh",
              "asin", "acos", "atan", "erf", "round", "floor", "ceil", "trunc"):
    op(_name, "x: T", "T", r.same, family="math", cube=(_name, "x"))
op("abs", "x: T", "T", r.same, family="math", kinds=FI, cube=("abs", "x"))
op("sign", "x: T", "T", r.same, family="math", kinds=FI, cube=_sign("x"))
op("asinh", "x: T", "T", r.same, family="math", cube=_asinh("x"))
op("acosh", "x: T", "T", r.same, family="math", cube=_acosh("x"))
# NaN past +-1 explicitly: NVIDIA's Vulkan driver gave a number for atanh(+-3.4e38) (H200)
op("atanh", "x: T", "T", r.same, family="math",
   cube=("select", ("gt", ("abs", "x"), 1.0), float("nan"), _zero_kept(
       "x", ("mul", 0.5, ("log1p", ("div", ("mul", 2.0, "x"), ("sub", 1.0, "x")))))))
op("atan2", "lhs: T, rhs: T", "T", r.elementwise, family="math")
op("is_nan", "x: T", "B", r.same, family="math", cube=("isnan", "x"))
op("is_inf", "x: T", "B", r.same, family="math", cube=("isinf", "x"))

# --- bitwise ------------------------------------------------------------------------------
for _name, _cube in (("and", "bitand"), ("or", "bitor"), ("xor", "bitxor"),
                     ("left_shift", "shl"), ("right_shift", "shr")):
    op(f"bitwise_{_name}", "lhs: T, rhs: T", "T", r.elementwise, family="bitwise",
       kinds=("int",), cube=(_cube, "lhs", "rhs"))
op("bitwise_not", "x: T", "T", r.same, family="bitwise", kinds=("int",), cube=("invert", "x"))

# --- comparison ---------------------------------------------------------------------------
for _name, _cube in (("equal", "eq"), ("greater", "gt"), ("greater_equal", "ge"),
                     ("lower", "lt"), ("lower_equal", "le")):
    op(_name, "lhs: T, rhs: T", "B", r.elementwise, family="comparison",
       kinds=FIB if _name == "equal" else FI, cube=(_cube, "lhs", "rhs"))
    op(f"{_name}_elem", "lhs: T, rhs: scalar", "B", r.same, family="comparison", kinds=FI,
       cube=(_cube, "lhs", "rhs"))
op("not", "x: T", "T", r.same, family="comparison", kinds=("bool",), cube=("not", "x"))
for _name, _cube in (("and", "and"), ("or", "or"), ("xor", "ne")):
    op(_name, "lhs: T, rhs: T", "T", r.elementwise, family="comparison", kinds=("bool",),
       cube=(_cube, "lhs", "rhs"))

# --- layout -------------------------------------------------------------------------------
op("reshape", "x: T, shape: shape", "T", r.reshape, family="layout", kinds=FIB)
op("swap_dims", "x: T, dim1: int, dim2: int", "T", r.swap_dims, family="layout", kinds=FIB)
op("permute", "x: T, axes: shape", "T", r.permute, family="layout", kinds=FIB)
op("flip", "x: T, axes: shape", "T", r.same, family="layout", kinds=FIB)
op("expand", "x: T, shape: shape", "T", r.expand, family="layout", kinds=FIB)
op("repeat_dim", "x: T, dim: int, times: int", "T", r.repeat_dim, family="layout", kinds=FIB)
op("cat", "xs: [T], dim: int", "T", r.cat, family="layout", kinds=FIB)
op("unfold", "x: T, dim: int, size: int, step: int", "T", r.unfold, family="layout", kinds=FIB)

# --- indexing -----------------------------------------------------------------------------
op("slice", "x: T, slices: slices", "T", r.slice_, family="indexing", kinds=FIB)
op("slice_assign", "x: T, slices: slices, value: T", "T", r.same, family="indexing", kinds=FIB)
op("select", "x: T, dim: int, indices: I", "T", r.select, family="indexing", kinds=FIB)
op("select_assign", "x: T, dim: int, indices: I, values: T", "T", r.same, family="indexing",
   kinds=FI)
op("gather", "dim: int, x: T, indices: I", "T", r.gather, family="indexing", kinds=FIB)
op("scatter", "dim: int, x: T, indices: I, values: T, reduce: str", "T", r.same,
   family="indexing", kinds=FI)
op("scatter", "dim: int, x: T, indices: I, values: T", "T", r.same, family="indexing",
   kinds=("bool",))
op("mask_where", "x: T, mask: B, value: T", "T", r.elementwise, family="indexing", kinds=FIB,
   cube=("select", "mask", "value", "x"))
op("mask_fill", "x: T, mask: B, value: scalar", "T", r.elementwise, family="indexing",
   kinds=FI, cube=("select", "mask", "value", "x"))

# --- reductions ---------------------------------------------------------------------------
for _name in ("sum", "prod", "max", "min"):
    op(_name, "x: T", "T", r.reduce_all, family="reduction", kinds=FI)
for _name in ("sum_dim", "prod_dim"):
    op(_name, "x: T, dim: int", "T", r.reduce_dim, family="reduction", kinds=FI)
op("mean_dim", "x: T, dim: int", "T", r.reduce_dim, family="reduction")
for _name in ("max_dim_with_indices", "min_dim_with_indices"):
    op(_name, "x: T, dim: int", "(T, I64)", r.pair(r.reduce_dim), family="reduction", kinds=FI)
for _name in ("argmax", "argmin"):
    op(_name, "x: T, dim: int", "I64", r.reduce_dim, family="reduction", kinds=FI)
for _name in ("cumsum", "cumprod"):
    op(_name, "x: T, dim: int", "T", r.same, family="reduction", kinds=FI)
for _name in ("cummax", "cummin"):
    op(_name, "x: T, dim: int", "(T, I64)", r.pair(r.same), family="reduction", kinds=FI)
op("sort_with_indices", "x: T, dim: int, descending: bool", "(T, I64)", r.pair(r.same),
   family="reduction", kinds=FI)
op("any", "x: T", "B", r.reduce_all, family="reduction", kinds=("bool",))
op("all", "x: T", "B", r.reduce_all, family="reduction", kinds=("bool",))
op("any_dim", "x: T, dim: int", "B", r.reduce_dim, family="reduction", kinds=("bool",))
op("all_dim", "x: T, dim: int", "B", r.reduce_dim, family="reduction", kinds=("bool",))
op("argwhere", "x: T", "I64", r.argwhere, family="reduction", kinds=("bool",))

# --- activations (defaults written with float ops) ----------------------------------------
_activation("relu", "x: F", _clamp("x", 0.0, None))
# torch's threshold_backward(grad, output, 0): 0 where output <= 0, so a NaN passes the grad
_activation("relu_backward", "output: F, grad: F", ("select", ("le", "output", 0.0), 0.0, "grad"),
            shape=r.elementwise)
_activation("leaky_relu", "x: F, negative_slope: float",
            ("select", ("le", "x", 0.0), ("mul", "x", "negative_slope"), "x"))
_activation("prelu", "x: F, weight: F", ("select", ("le", "x", 0.0), ("mul", "x", "weight"), "x"),
            shape=r.elementwise)
_activation("gelu", "x: F, approximate: str")
_activation("sigmoid", "x: F", _sigmoid("x"))
_activation("hard_sigmoid", "x: F, alpha: float, beta: float",
            _clamp(("add", ("mul", "x", "alpha"), "beta"), 0.0, 1.0))
_activation("softplus", "x: F, beta: float, threshold: float")
_activation("log_sigmoid", "x: F")
_activation("silu", "x: F", ("mul", "x", _sigmoid("x")))
_activation("mish", "x: F")
_activation("elu", "x: F, alpha: float",
            ("select", ("le", "x", 0.0), ("mul", "alpha", _expm1("x")), "x"))
_activation("selu", "x: F")
_activation("softmax", "x: F, dim: int")
_activation("log_softmax", "x: F, dim: int")

# --- module ops ---------------------------------------------------------------------------
_module("conv", "x: F, weight: F, bias: F?, options: options", "F", r.conv)
_module("conv_backward", "x: F, weight: F, bias: F?, grad: F, options: options", "(F, F, F?)",
        r.grads_of("x", "weight", "bias"))
_module("conv_transpose", "x: F, weight: F, bias: F?, options: options", "F", r.conv_transpose)
_module("conv_transpose_backward", "x: F, weight: F, bias: F?, grad: F, options: options",
        "(F, F, F?)", r.grads_of("x", "weight", "bias"))
_module("deform_conv2d", "x: F, offset: F, weight: F, mask: F?, bias: F?, options: options",
        "F", r.conv)
_module("deform_conv2d_backward",
        "x: F, offset: F, weight: F, mask: F?, bias: F?, grad: F, options: options",
        "(F, F, F, F?, F?)", r.grads_of("x", "offset", "weight", "mask", "bias"))
_module("unfold4d", "x: F, kernel_size: shape, options: options", "F", r.unfold4d)
_module("avg_pool", "x: F, options: options", "F", r.pool)
_module("avg_pool_backward", "x: F, grad: F, options: options", "F", r.grads_of("x"))
_module("max_pool_with_indices", "x: F, options: options", "(F, I64)", r.pair(r.pool))
_module("max_pool_backward", "x: F, indices: I, grad: F, options: options", "F",
        r.grads_of("x"))
_module("adaptive_avg_pool", "x: F, output_size: shape", "F", r.resized)
_module("adaptive_avg_pool_backward", "x: F, grad: F", "F", r.grads_of("x"))
_module("interpolate", "x: F, output_size: shape, options: options", "F", r.resized)
_module("interpolate_backward", "x: F, grad: F, output_size: shape, options: options", "F",
        r.grads_of("x"))
_module("grid_sample_2d", "x: F, grid: F, options: options", "F", r.grid_sample)
_module("grid_sample_2d_backward", "x: F, grid: F, grad: F, options: options", "(F, F)",
        r.grads_of("x", "grid"))
_module("layer_norm", "x: F, weight: F?, bias: F?, num_dims: int, eps: float", "(F, F, F)",
        r.layer_norm, default=True)
_module("layer_norm_backward",
        "x: F, weight: F?, bias: F?, mean: F, rstd: F, grad: F, num_dims: int", "(F, F?, F?)",
        r.grads_of("x", "weight", "bias"), default=True)
_module("cross_entropy", "logits: F, target: I, weight: F?, ignore_index: int, "
        "label_smoothing: float, reduction: str", "F", r.cross_entropy, default=True)
_module("cross_entropy_backward", "logits: F, target: I, weight: F?, grad: F, ignore_index: int, "
        "label_smoothing: float, reduction: str", "F", r.grads_of("logits"), default=True)
_module("embedding", "weight: F, indices: I", "F", r.embedding, default=True)
_module("attention", "q: F, k: F, v: F, mask: B?, scale: float?, is_causal: bool", "F",
        r.attention, default=True)

#: Backend methods that are not ops: introspection and hooks.
HOOKS = frozenset({"shape", "dtype", "device_of", "detach_values", "seed", "sync", "flush",
                   "memory_stats", "supports", "check_indices", "check_nonzero",
                   "unavailable_reason", "exported"})
