"""WGSL expression table for the wgpu target.

WGSL has f16, f64 and i64 only with the adapter features ``shader-f16``, ``shader-f64`` and
``shader-int64`` (naga's WGSL extensions: ``f64``/``i64`` types, ``1.0lf``/``1li`` literals); the
runtime requests them. Vulkan has no f64 transcendental functions (GLSL.std.450 ``exp``, ``sin``,
``pow``, ... take 16/32-bit floats; llvmpipe returns garbage), so those are refused on f64; f64
keeps arithmetic, ``sqrt``, ``floor`` and the like. No bf16. Storage buffers cannot hold
``bool``: bool tensors are ``u32`` per element. There is no ``erf``, ``log1p`` or ``isnan``, so
those are spelled with helpers or bit tests here; f32 ``tanh`` is a helper too (speed).
Scalar parameters are decoded from their ``bc_info`` words with the ``scalar`` entries (``{a}``
the low word, ``{b}`` the high word of a 64-bit value).
"""

from __future__ import annotations

from burn_cube.codegen.emitter import POSITIONS
from burn_cube.types import LINE_LANES

#: Lines are ``vecN<T>``, whose operators and built-in functions are element-wise.
TYPES = {"bool": "bool", "u32": "u32", "i32": "i32", "i64": "i64", "f16": "f16", "f32": "f32",
         "f64": "f64", **{f"{s}x{n}": f"vec{n}<{s}>" for s in ("u32", "i32", "i64", "f16", "f32",
                                                                 "f64") for n in LINE_LANES}}
STORAGE_TYPES = {"bool": "u32"}
#: f64 functions Vulkan lacks.
F64_MISSING = ("exp", "exp2", "log", "log2", "log1p", "sin", "cos", "tan", "tanh", "asin", "acos",
               "atan", "sinh", "cosh", "pow", "erf")



def _shifts(dtype: str, bits: int) -> dict[str, str]:
    """Guarded ``shl`` / ``shr`` of one integer dtype, as numpy and torch: an amount outside
    [0, bits) shifts everything out (0; a right shift of a negative value gives -1), where WGSL
    masks it. The masked amount keeps a constant amount a valid shift."""
    outside = f"{'u64' if bits == 64 else 'u32'}({{b}}) >= {bits}{'lu' if bits == 64 else 'u'}"
    amount = f"(u32({{b}}) & {bits - 1}u)"
    return {"shl": f"select({{a}} << {amount}, {{t}}(0), {outside})",
            "shr": f"({{a}} >> select({amount}, {bits - 1}u, {outside}))" if dtype[0] == "i"
            else f"select({{a}} >> {amount}, 0u, {outside})"}


#: Float dtypes with Vulkan's math functions (no f64 ones: ``pow``, ``atan``...), lines
#: included.
MATH_NAMES = ("f16", "f32", *(f"{s}x{n}" for s in ("f16", "f32") for n in LINE_LANES))


def _opaque(dtype: str) -> str:
    """``opaque(x, zero)`` of one float dtype (lines included): x's bits XOR ``zero`` (0 at run
    time, unknown to the driver), so no identity of finite math applies across it and two
    uses with different ``zero`` expressions are not merged; f16 goes through f32 (exact)."""
    scalar, _, lanes = dtype.partition("x")
    def vec(t: str) -> str:
        return f"vec{lanes}<{t}>" if lanes else t
    bits, wide = (vec("u64"), vec("f64")) if scalar == "f64" else (vec("u32"), vec("f32"))
    return f"{{t}}(bitcast<{wide}>(bitcast<{bits}>({wide}({{a}})) ^ {bits}({{b}})))"


def _scaled_division(dtype: str) -> str:
    """f32 ``a / b`` with both scaled by 1/4 where ``|b| > 2**126`` (or NaN): Vulkan defines
    ``OpFDiv`` only for divisors in [2**-126, 2**126], and NVIDIA's driver, dividing by a
    reciprocal that it flushes to zero, gave NaN for ``inf / 3e38`` and 0 for
    ``3e38 / 3e38``. The scaling is exact: a quotient by such a divisor has no low bits to
    lose that the driver would keep."""
    huge = _abs_bits_above("{b}", dtype, "0x7e800000")
    return f"select({{a}} / {{b}}, ({{a}} * 0.25) / ({{b}} * 0.25), {huge})"


def _zero_kept(odd: str) -> str:
    """An odd function's expression with +-0.0 passed through: the drivers' ``atan``, ``sinh``,
    ``tanh`` and ``log(1 + x)`` give +0.0 for -0.0 (llvmpipe), torch -0.0."""
    return f"select({odd}, {{a}}, {{a}} == {{t}}(0.0))"


def _abs_bits_above(x: str, dtype: str, bits: str) -> str:
    """Whether |x| is above the f32 of `bits` or NaN, on the bits (llvmpipe folds ``x != x``
    and comparisons with NaN); f16 widens exactly."""
    lanes = int(dtype.partition("x")[2] or 1)
    u32, f32 = ("u32", "f32") if lanes == 1 else (f"vec{lanes}<u32>", f"vec{lanes}<f32>")
    return f"((bitcast<{u32}>({f32}({x})) & {u32}(0x7fffffffu)) > {u32}({bits}u))"


def _nan_outside(call: str, dtype: str, bits: str) -> str:
    """``call``, NaN where |{a}| is above the f32 of `bits` (the domain's end) or NaN: the
    drivers' ``atan2`` and ``atan`` give 0 for NaN (llvmpipe)."""
    outside = _abs_bits_above("{a}", dtype, bits)
    return f"select({call}, {{t}}(bitcast<f32>(0x7fc00000u)), {outside})"


def _either_nan(dtype: str) -> str:
    """Whether ``{a}`` or ``{b}`` is NaN, on the bits (drivers fold ``x != x``)."""
    return " | ".join(_abs_bits_above(x, dtype, "0x7f800000") for x in ("{a}", "{b}"))


def _nan_propagating(call: str, dtype: str) -> str:
    """``call`` of ``{a}`` and ``{b}``, NaN where either is NaN (but x^0 = 1^y = 1): the NaN test
    on the bits, since llvmpipe drops NaNs through ``pow`` and folds ``x != x`` to false."""
    one = "(({b} == {t}(0.0)) | ({a} == {t}(1.0)))"
    return f"select({call}, {{a}} + {{b}}, ({_either_nan(dtype)}) & !{one})"


def _ordered(op: str, dtype: str) -> str:
    """Float comparison `op` false where either operand is NaN, tested on the bits: NVIDIA's
    Vulkan driver turns ``select(x, y, x < y)`` (a fused max_pair) into ``max``, which drops a
    NaN in x; the bit tests keep the select a select (the result is the comparison's)."""
    return f"(({{a}} {op} {{b}}) & !({_either_nan(dtype)}))"


#: Signed integer remainder (scalars and lines) from the truncating division, as WGSL's ``%``
#: defines it: the dividend's sign, 0 for a zero divisor (``INT_MIN % -1`` wraps to 0).
#: NVIDIA's Vulkan driver computes ``%`` of a negative i32 wrongly (``-7 % 5`` gave 4 and
#: ``-540 % 5`` gave 1 on the H200), where its division truncates as it should.
SIGNED_REMAINDER = "select({a} - {b} * ({a} / {b}), {t}(0), {b} == {t}(0))"
#: Integer division and unsigned remainder: 0 for a zero divisor, as on the other targets
#: (WGSL's ``/`` gives the dividend there). ``INT_MIN / -1`` is INT_MIN, as WGSL defines it.
ZERO_DIVISOR = "select({a} %s {b}, {t}(0), {b} == {t}(0))"

OPS: dict[str, str | None] = {
    **POSITIONS,
    "plane_dim": "bc_plane_dim", "unit_pos_plane": "bc_plane_unit",
    "plane_sum": "subgroupAdd({a})", "plane_max": "subgroupMax({a})",
    "inf.f32": "bitcast<f32>(0x7f800000u)", "ninf.f32": "bitcast<f32>(0xff800000u)",
    "nan.f32": "bitcast<f32>(0x7fc00000u)",
    **{f"{name}.{s}": f"{s}(bitcast<f32>({bits}u))" for s in ("f16", "f64")
       for name, bits in (("inf", "0x7f800000"), ("ninf", "0xff800000"), ("nan", "0x7fc00000"))},
    "add": "({a} + {b})", "sub": "({a} - {b})", "mul": "({a} * {b})", "div": "({a} / {b})",
    **{f"div.{s}": _scaled_division(s) for s in ("f32", *(f"f32x{n}" for n in LINE_LANES))},
    "div.int": ZERO_DIVISOR % "/", "div.uint": ZERO_DIVISOR % "/",
    "mod": "({a} % {b})", "mod.int": SIGNED_REMAINDER, "mod.uint": ZERO_DIVISOR % "%",
    "neg": "(-{a})",
    "lt": "({a} < {b})", "le": "({a} <= {b})", "gt": "({a} > {b})", "ge": "({a} >= {b})",
    **{f"{name}.{s}": _ordered(op, s) for name, op in (("lt", "<"), ("le", "<="), ("gt", ">"),
                                                       ("ge", ">=")) for s in MATH_NAMES},
    "eq": "({a} == {b})", "ne": "({a} != {b})",
    "and": "({a} && {b})", "or": "({a} || {b})", "not": "(!{a})",
    "bitand": "({a} & {b})", "bitor": "({a} | {b})", "bitxor": "({a} ^ {b})",
    **{f"{op}.{s}": shift for s, bits in (("u32", 32), ("i32", 32), ("i64", 64))
       for op, shift in _shifts(s, bits).items()},
    "invert": "(~{a})",
    "cast": "{t}({a})", "from_int": "{a}", "select": "select({c}, {b}, {a})",
    **{f"opaque.{s}{x}": _opaque(f"{s}{x}") for s in ("f16", "f32", "f64")
       for x in ("", *(f"x{n}" for n in LINE_LANES))},
    "load": "{a}", "store": "{a}", "load.bool": "({a} != 0u)", "store.bool": "select(0u, 1u, {a})",
    "scalar": "bitcast<{t}>({a})", "scalar.u32": "{a}", "scalar.bool": "({a} != 0u)",
    "scalar.f16": "f16(unpack2x16float({a}).x)",
    **{f"scalar.{s}": "bitcast<{t}>((u64({b}) << 32u) | u64({a}))" for s in ("i64", "f64")},
    "min": "min({a}, {b})", "max": "max({a}, {b})", "abs": "abs({a})",
    **{f"pow.{s}": _nan_propagating("bc_pow_{s}({a}, {b})", s) for s in MATH_NAMES},
    "fmod": "bc_fmod_{s}({a}, {b})",
    "rsqrt": "inverseSqrt({a})", "erf": "bc_erf_{s}({a})", "tanh.f32": "bc_tanh_{s}({a})",
    "isnan.f32": "((bitcast<u32>({a}) & 0x7fffffffu) > 0x7f800000u)",
    "isinf.f32": "((bitcast<u32>({a}) & 0x7fffffffu) == 0x7f800000u)",
    "isnan.f16": "((bitcast<u32>(f32({a})) & 0x7fffffffu) > 0x7f800000u)",  # exact widening
    "isinf.f16": "((bitcast<u32>(f32({a})) & 0x7fffffffu) == 0x7f800000u)",
    "isnan.f64": "((bitcast<u64>({a}) & 0x7ffffffffffffffflu) > 0x7ff0000000000000lu)",
    "isinf.f64": "((bitcast<u64>({a}) & 0x7ffffffffffffffflu) == 0x7ff0000000000000lu)",
    "iszero.f32": "((bitcast<u32>({a}) & 0x7fffffffu) == 0u)",
    "iszero.f16": "((bitcast<u32>(f32({a})) & 0x7fffffffu) == 0u)",
    "iszero.f64": "((bitcast<u64>({a}) & 0x7ffffffffffffffflu) == 0lu)",
    **{op: f"{op}({{a}})" for op in (
        "exp", "exp2", "log", "log2", "sin", "cos", "tan", "sqrt", "floor", "ceil",
        "round", "trunc")},
    "tanh": _zero_kept("tanh({a})"), "sinh": "bc_sinh_{s}({a})", "cosh": "bc_cosh_{s}({a})",
    "log1p": "bc_log1p_{s}({a})",
    **{f"atan.{s}": _nan_outside(_zero_kept("atan({a})"), s, "0x7f800000")
       for s in MATH_NAMES},
    # through atan2: the drivers' asin/acos are off by ~1e-4 near +-1 (llvmpipe); NaN past +-1
    **{f"asin.{s}": _nan_outside(_zero_kept("atan2({a}, sqrt((1.0 - {a}) * (1.0 + {a})))"), s,
                                 "0x3f800000") for s in MATH_NAMES},
    **{f"acos.{s}": _nan_outside("atan2(sqrt((1.0 - {a}) * (1.0 + {a})), {a})", s,
                                 "0x3f800000") for s in MATH_NAMES},
    "atomic_add.int": "atomicAdd(&{a}, {b})", "atomic_add.uint": "atomicAdd(&{a}, {b})",
    "atomic_min.int": "atomicMin(&{a}, {b})", "atomic_min.uint": "atomicMin(&{a}, {b})",
    "atomic_max.int": "atomicMax(&{a}, {b})", "atomic_max.uint": "atomicMax(&{a}, {b})",
    "atomic_add.i64": None, "atomic_min.i64": None, "atomic_max.i64": None,
    **{f"{op}.f64": None for op in F64_MISSING},
}

#: fmod: C's fmod, exact for every quotient (WGSL's float % is x - y * trunc(x / y), inexact,
#: and the quotient overflows): the long division of the significands on their bits (musl's
#: fmodf), computed in f32 (exact for f16 too).
#: Helper functions by name prefix, emitted once per dtype used (``{s}`` the dtype name, ``{T}``
#: its WGSL type; lines included). erf: Abramowitz & Stegun 7.1.26 (absolute error < 1.5e-7).
#: pow: C's pow (WGSL's is undefined for negative and zero bases, and llvmpipe's drops NaNs):
#: x^0 = 1^y = (-1)^+-inf = 1, NaN propagates, 0^-y = inf and 0^y = 0 (-inf and -0 for -0 to
#: an odd power), a negative base to an integer power (or -inf to any) by the parity of the
#: power (infinite powers are even), else NaN.
#: Below |x| = 0.5 erf and sinh are their Taylor series (within 3e-8 there): A&S's absolute
#: error made erf(1e-7) 6e-8, and the driver's sinh, a difference of exponentials, gave
#: sinh(1e-30) = 3e-8 (llvmpipe). Past |x| = 10 sinh and cosh are +-e^|x| / 2 as
#: (e^(|x|/2) / 2) e^(|x|/2) (the other exponential is below half an ulp there): the drivers'
#: exp(x) overflowed first, so sinh(89) was inf where it is 2.2e38.
#: log1p: 2 atanh(x / (2 + x)) by its series below |x| = 0.25 (within 1e-9 there), where
#: log(1 + x) loses the low bits of x (log1p(1e-7) was 1.19e-7); log(1 + x) above.
#: f32 tanh: the Cephes polynomial below 0.625, else from one ``exp`` (the Vulkan driver's
#: ``tanh`` is slower); NaN propagates, +-inf give +-1, +-0 keep their sign. erf: likewise.
HELPERS = {
    "bc_fmod_": """\
fn bc_fmod_{s}(xt: {T}, yt: {T}) -> {T} {{
    let ux = bitcast<u32>(f32(xt));
    let uy = bitcast<u32>(f32(yt));
    let sx = ux & 0x80000000u;
    let ax = ux & 0x7fffffffu;
    let ay = uy & 0x7fffffffu;
    if (ay == 0u || ay > 0x7f800000u || ax >= 0x7f800000u) {{
        return {T}(bitcast<f32>(0x7fc00000u));
    }}
    if (ax <= ay) {{
        return select(xt, {T}(bitcast<f32>(sx)), ax == ay);
    }}
    var ex = i32(ax >> 23u);
    var ey = i32(ay >> 23u);
    var mx = ax & 0x7fffffu;
    var my = ay & 0x7fffffu;
    if (ex == 0) {{
        mx = mx << (countLeadingZeros(mx) - 8u);
        ex = 9 - i32(countLeadingZeros(ax));
    }} else {{
        mx = mx | 0x800000u;
    }}
    if (ey == 0) {{
        my = my << (countLeadingZeros(my) - 8u);
        ey = 9 - i32(countLeadingZeros(ay));
    }} else {{
        my = my | 0x800000u;
    }}
    for (; ex > ey; ex = ex - 1) {{
        if (mx >= my) {{
            mx = mx - my;
            if (mx == 0u) {{
                return {T}(bitcast<f32>(sx));
            }}
        }}
        mx = mx << 1u;
    }}
    if (mx >= my) {{
        mx = mx - my;
        if (mx == 0u) {{
            return {T}(bitcast<f32>(sx));
        }}
    }}
    let shift = countLeadingZeros(mx) - 8u;
    mx = mx << shift;
    ex = ex - i32(shift);
    if (ex > 0) {{
        mx = (mx - 0x800000u) | (u32(ex) << 23u);
    }} else {{
        mx = mx >> u32(1 - ex);
    }}
    return {T}(bitcast<f32>(mx | sx));
}}
""",
    "bc_erf_": """\
fn bc_erf_{s}(x: {T}) -> {T} {{
    let t = 1.0 / (1.0 + 0.3275911 * abs(x));
    let y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736)
                   * t + 0.254829592) * t * exp(-x * x);
    let z = x * x;
    let series = x * ({T}(1.1283791670955126) + z * ({T}(-0.37612638903183754)
                 + z * ({T}(0.11283791670955126) + z * ({T}(-0.026866170645131252)
                 + z * ({T}(0.005223977625442188) + z * {T}(-0.0008548327023450852))))));
    return select(select(-y, y, x >= {T}(0.0)), series, abs(x) < {T}(0.5));
}}
""",
    "bc_sinh_": """\
fn bc_sinh_{s}(x: {T}) -> {T} {{
    let z = x * x;
    let series = x * ({T}(1.0) + z * ({T}(1.0 / 6.0) + z * ({T}(1.0 / 120.0)
                 + z * {T}(1.0 / 5040.0))));
    return select(select(sinh(x), bc_half_exp_{s}(x), abs(x) > {T}(10.0)), series,
                  abs(x) < {T}(0.5));
}}
""",
    "bc_cosh_": """\
fn bc_cosh_{s}(x: {T}) -> {T} {{
    return select(cosh(x), abs(bc_half_exp_{s}(x)), abs(x) > {T}(10.0));
}}
""",
    "bc_half_exp_": """\
fn bc_half_exp_{s}(x: {T}) -> {T} {{
    let h = exp(abs(x) * {T}(0.5));
    return select(-(h * {T}(0.5)) * h, (h * {T}(0.5)) * h, x >= {T}(0.0));
}}
""",
    "bc_log1p_": """\
fn bc_log1p_{s}(x: {T}) -> {T} {{
    let s = x / ({T}(2.0) + x);
    let z = s * s;
    let series = {T}(2.0) * s * ({T}(1.0) + z * ({T}(1.0 / 3.0) + z * ({T}(0.2)
                 + z * ({T}(1.0 / 7.0) + z * {T}(1.0 / 9.0)))));
    return select(log({T}(1.0) + x), series, abs(x) < {T}(0.25));
}}
""",
    "bc_pow_": """\
fn bc_pow_{s}(x: {T}, y: {T}) -> {T} {{
    let inf = {T}(bitcast<f32>(0x7f800000u));
    let odd = fract(y * 0.5) == {T}(0.5);
    let zero = select(select(pow(abs(x), y), select({T}(0.0), x, odd), y > {T}(0.0)),
                      select(inf, 1.0 / x, odd), y < {T}(0.0));
    let r = select(pow(abs(x), y), zero, x == {T}(0.0));
    let integral = (y == trunc(y)) | (abs(x) == inf);
    let negative = select({T}(bitcast<f32>(0x7fc00000u)), select(r, -r, odd), integral);
    let one = (y == {T}(0.0)) | (x == {T}(1.0)) | ((x == {T}(-1.0)) & (abs(y) == inf));
    return select(select(negative, r, x >= {T}(0.0)), {T}(1.0), one);
}}
""",
    "bc_tanh_": """\
fn bc_tanh_{s}(x: {T}) -> {T} {{
    let z = x * x;
    let small = ((((-5.70498872745e-3 * z + 2.06390887954e-2) * z - 5.37397155531e-2) * z
                  + 1.33314422036e-1) * z - 3.33332819422e-1) * z * x + x;
    let big = 1.0 - 2.0 / (exp(2.0 * abs(x)) + 1.0);
    return select(select(select(-big, big, x >= {T}(0.0)), small, abs(x) < {T}(0.625)), x,
                  x == {T}(0.0));
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
    suffix = {"f32": "f", "f16": "h", "f64": "lf", "u32": "u", "i32": "i", "i64": "li"}[dtype_name]
    if dtype_name[0] == "i" and value == -2 ** (int(dtype_name[1:]) - 1):  # no literal for it
        return f"(-{-int(value) - 1}{suffix} - 1{suffix})"
    text = f"{float(value) if dtype_name[0] == 'f' else int(value)!r}{suffix}"
    return f"({text})" if text.startswith("-") else text
