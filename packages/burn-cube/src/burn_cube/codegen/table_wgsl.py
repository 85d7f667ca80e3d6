"""WGSL expression table for the wgpu target.

WGSL has no f64 or i64 (and f16 only with the ``shader-f16`` feature); there is no ``erf``,
``log1p`` or ``isnan``, so those are spelled with helpers or bit tests here; f32 ``tanh`` is a
helper too (speed).
"""

from __future__ import annotations

from burn_cube.codegen.emitter import POSITIONS
from burn_cube.types import LINE_LANES

#: Lines are ``vecN<T>``, whose operators and built-in functions are element-wise.
TYPES = {"bool": "bool", "u32": "u32", "i32": "i32", "f16": "f16", "f32": "f32",
         **{f"{s}x{n}": f"vec{n}<{s}>" for s in ("u32", "i32", "f16", "f32") for n in LINE_LANES}}

OPS: dict[str, str] = {
    **POSITIONS,
    "plane_dim": "bc_plane_dim", "unit_pos_plane": "bc_plane_unit",
    "plane_sum": "subgroupAdd({a})", "plane_max": "subgroupMax({a})",
    "inf.f32": "bitcast<f32>(0x7f800000u)", "ninf.f32": "bitcast<f32>(0xff800000u)",
    "nan.f32": "bitcast<f32>(0x7fc00000u)",
    "add": "({a} + {b})", "sub": "({a} - {b})", "mul": "({a} * {b})", "div": "({a} / {b})",
    "mod": "({a} % {b})", "neg": "(-{a})",
    "lt": "({a} < {b})", "le": "({a} <= {b})", "gt": "({a} > {b})", "ge": "({a} >= {b})",
    "eq": "({a} == {b})", "ne": "({a} != {b})",
    "and": "({a} && {b})", "or": "({a} || {b})", "not": "(!{a})",
    "bitand": "({a} & {b})", "bitor": "({a} | {b})", "bitxor": "({a} ^ {b})",
    "shl": "({a} << u32({b}))", "shr": "({a} >> u32({b}))", "invert": "(~{a})",
    "cast": "{t}({a})", "select": "select({c}, {b}, {a})",
    "min": "min({a}, {b})", "max": "max({a}, {b})", "abs": "abs({a})", "pow": "pow({a}, {b})",
    "rsqrt": "inverseSqrt({a})", "log1p": "log(1.0 + {a})", "erf": "bc_erf_{s}({a})",
    **{f"tanh.f32{x}": "bc_tanh_{s}({a})" for x in ("", *(f"x{n}" for n in LINE_LANES))},
    "isnan.f32": "((bitcast<u32>({a}) & 0x7fffffffu) > 0x7f800000u)",
    "isinf.f32": "((bitcast<u32>({a}) & 0x7fffffffu) == 0x7f800000u)",
    **{op: f"{op}({{a}})" for op in (
        "exp", "exp2", "log", "log2", "sin", "cos", "tan", "tanh", "asin", "acos", "atan",
        "sinh", "cosh", "sqrt", "floor", "ceil", "round", "trunc")},
    "atomic_add.int": "atomicAdd(&{a}, {b})", "atomic_add.uint": "atomicAdd(&{a}, {b})",
}

#: Helper functions by name prefix, emitted once per dtype used (``{s}`` the dtype name, ``{T}``
#: its WGSL type; lines included). erf: Abramowitz & Stegun 7.1.26 (absolute error < 1.5e-7).
#: f32 tanh: the Cephes polynomial below 0.625, else from one ``exp`` (the Vulkan driver's
#: ``tanh`` is slower); NaN propagates, +-inf give +-1.
HELPERS = {
    "bc_erf_": """\
fn bc_erf_{s}(x: {T}) -> {T} {{
    let t = 1.0 / (1.0 + 0.3275911 * abs(x));
    let y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736)
                   * t + 0.254829592) * t * exp(-x * x);
    return select(-y, y, x >= {T}(0.0));
}}
""",
    "bc_tanh_": """\
fn bc_tanh_{s}(x: {T}) -> {T} {{
    let z = x * x;
    let small = ((((-5.70498872745e-3 * z + 2.06390887954e-2) * z - 5.37397155531e-2) * z
                  + 1.33314422036e-1) * z - 3.33332819422e-1) * z * x + x;
    let big = 1.0 - 2.0 / (exp(2.0 * abs(x)) + 1.0);
    return select(select(-big, big, x >= {T}(0.0)), small, abs(x) < {T}(0.625));
}}
""",
}


def literal(value: int | float | bool, dtype_name: str) -> str:
    """Render a finite constant.

    Args:
        value: The constant.
        dtype_name: Kernel dtype name.

    Returns:
        WGSL source text.
    """
    if dtype_name == "bool":
        return "true" if value else "false"
    if dtype_name in ("f32", "f16"):
        text = f"{float(value)!r}{'f' if dtype_name == 'f32' else 'h'}"
    else:
        text = f"{int(value)}{'u' if dtype_name == 'u32' else 'i'}"
    return f"({text})" if text.startswith("-") else text
