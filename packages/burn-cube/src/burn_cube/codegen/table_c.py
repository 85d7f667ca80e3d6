"""C (C11 + OpenMP) expression table for the CPU target.

Floats use the libm function of the right width through the ``{f}`` suffix field (``expf`` for
f32, ``exp`` for f64); integer division and modulo go through helpers that return 0 on a zero
divisor instead of trapping. The cube and unit counters are ``int64_t`` in C, so positions are
cast back to the language's ``u32``. bf16 is stored as ``uint16_t`` (any gcc) and computed in
``float``: widened on load, rounded to nearest even on store and on casts to bf16 (as
ml_dtypes does).
"""

from __future__ import annotations

from burn_cube.codegen.emitter import POSITIONS
from burn_cube.types import DTYPES, LINE_LANES

SCALAR_TYPES = {"bool": "bool", "u8": "uint8_t", "i8": "int8_t", "u32": "uint32_t",
                "i32": "int32_t", "i64": "int64_t", "f16": "_Float16", "bf16": "float",
                "f32": "float", "f64": "double"}
STORAGE_TYPES = {"bf16": "uint16_t"}
#: Lines are GCC vector types (``bc_f32x4``), declared per kernel with ``LINE_TYPEDEF``; none
#: of 8-bit ints (their scalar entries below wrap C's int promotion).
TYPES = {**SCALAR_TYPES, **{f"{s}x{n}": f"bc_{s}x{n}" for s in SCALAR_TYPES
                            if s not in ("bool", "bf16", "u8", "i8") for n in LINE_LANES}}
#: Unsigned C type by bit width.
BITS_TYPE = {8: "uint8_t", 16: "uint16_t", 32: "uint32_t", 64: "uint64_t"}


def shift_ops(unsigned: dict[int, str]) -> dict[str, str]:
    """Guarded ``shl`` / ``shr`` per integer dtype, as numpy and torch: an amount outside
    [0, bits) shifts everything out (0; a right shift of a negative value gives -1) instead of
    C's undefined behaviour. The left shift runs on the unsigned type (no signed overflow).

    Args:
        unsigned: Unsigned type name by bit width (64 bits test the amount).

    Returns:
        Table entries keyed ``shl.<dtype>`` / ``shr.<dtype>``.
    """
    out = {}
    for d in DTYPES.values():
        if d.is_integer:
            outside = f"({unsigned[64]})({{b}}) >= {d.bits}"
            shifted = f"({{t}})(({unsigned[d.bits]}){{a}} << ({{b}}))"
            out[f"shl.{d.name}"] = f"({outside} ? ({{t}})0 : {shifted})"
            out[f"shr.{d.name}"] = (f"({{t}})({{a}} >> ({outside} ? {d.bits - 1} : ({{b}})))"
                                    if d.kind == "int" else
                                    f"({outside} ? ({{t}})0 : ({{t}})({{a}} >> ({{b}})))")
    return out


#: 8-bit ints compute in C's int: results that can leave the type are cast back (wrapping).
WRAP_8BIT = {f"{op}.{s}": f"(({{t}}){template})" for s in ("i8", "u8") for op, template in (
    ("add", "({a} + {b})"), ("sub", "({a} - {b})"), ("mul", "({a} * {b})"), ("neg", "(-{a})"),
    ("invert", "(~{a})"))}
#: Element alignment, so that a line pointer into any element-aligned array is valid.
LINE_TYPEDEF = "typedef {T} bc_{s} __attribute__((vector_size({size}), aligned({align})));"

#: Float functions of one argument C spells ``name{f}(x)`` (math.h).
MATH_CALLS = ("exp", "exp2", "log", "log2", "log1p", "sin", "cos", "tan", "tanh", "asin",
              "acos", "atan", "sinh", "cosh", "sqrt", "floor", "ceil", "trunc", "erf")
#: Of the math.h calls (those and pow, fmod), the ones gcc turns into vector instructions here
#: (-fno-math-errno; floor, ceil and trunc under -fno-trapping-math). A loop holding any other
#: call is not vectorized: every op of a fused kernel's loop then runs one element at a time
#: (`calls_library`).
VECTOR_CALLS = frozenset(("sqrt", "floor", "ceil", "trunc"))


def calls_library(op: str, dtype_name: str) -> bool:
    """Whether IR op `op` on `dtype_name` lowers to a C library call gcc does not vectorize
    (f32 exp, tanh and erf are inline here, `HELPERS_F32_MATH`).

    Args:
        op: An IR op name (``log``).
        dtype_name: The burn-cube dtype name of its operands (``f32``).

    Returns:
        True for a per-element library call.
    """
    return (op in MATH_CALLS or op in ("pow", "fmod")) and op not in VECTOR_CALLS \
        and f"{op}.{dtype_name}" not in OPS


#: An integer -> float cast's result plus +0.0: under -fno-trapping-math gcc turns
#: ``(float)(int)x`` into ``truncf(x)``, which keeps the sign of a negative x that truncates to
#: 0 (-0.5 gave -0.0 where the integer 0 converts to +0.0); adding +0.0 maps -0.0 to +0.0 and
#: leaves every other value as it is. The zero is `PRELUDE`'s global, whose value gcc cannot
#: assume (it folds a literal ``+ 0`` away: an integer's conversion is never -0.0); its load
#: is hoisted out of loops, which still vectorize.
FROM_INT = "({a} + bc_positive_zero)"
#: A float's negation as -0.0 minus it (exact, signed zeros included), the -0.0 `PRELUDE`'s
#: global: gcc folded a plain ``-(a * b + c)`` into one fnmsub, ``-a * b - c``, whose exact
#: zero is +0.0 where the negated sum's is -0.0 (1 / r then gave +inf for -inf).
NEG_FLOAT = "(bc_negative_zero - {a})"

OPS: dict[str, str | None] = {
    **{op: f"((uint32_t){template})" for op, template in POSITIONS.items()},
    "plane_dim": "1u", "unit_pos_plane": "0u", "plane_sum": "({a})", "plane_max": "({a})",
    "inf": "(({t})INFINITY)", "ninf": "(({t})-INFINITY)", "nan": "(({t})NAN)",
    "add": "({a} + {b})", "sub": "({a} - {b})", "mul": "({a} * {b})", "div": "({a} / {b})",
    "div.int": "bc_div_{s}({a}, {b})", "div.uint": "bc_div_{s}({a}, {b})",
    "mod.int": "bc_mod_{s}({a}, {b})", "mod.uint": "bc_mod_{s}({a}, {b})",
    "neg": "(-{a})", "neg.float": NEG_FLOAT,
    "lt": "({a} < {b})", "le": "({a} <= {b})", "gt": "({a} > {b})", "ge": "({a} >= {b})",
    "eq": "({a} == {b})", "ne": "({a} != {b})",
    "and": "({a} && {b})", "or": "({a} || {b})", "not": "(!{a})",
    "bitand": "({a} & {b})", "bitor": "({a} | {b})", "bitxor": "({a} ^ {b})",
    **shift_ops(BITS_TYPE), **WRAP_8BIT, "invert": "(~{a})",
    "opaque": "{a}", "cast": "(({t}){a})", "from_int": FROM_INT,
    "select": "({a} ? {b} : {c})",
    "load": "{a}", "store": "{a}", "load.bf16": "bc_bf16_load({a})",
    "store.bf16": "bc_bf16_store({a})",
    "min": "bc_min_{s}({a}, {b})", "max": "bc_max_{s}({a}, {b})",
    "abs.float": "fabs{f}({a})", "abs.int": "bc_abs_{s}({a})",
    "pow": "pow{f}({a}, {b})", "fmod": "fmod{f}({a}, {b})", "rsqrt": "(1 / sqrt{f}({a}))",
    "round": "rint{f}({a})",
    "isnan": "(isnan({a}) != 0)", "isinf": "(isinf({a}) != 0)", "iszero": "({a} == 0)",
    **{op: f"{op}{{f}}({{a}})" for op in MATH_CALLS},
    "exp.f32": "bc_exp_f32({a})", "tanh.f32": "bc_tanh_f32({a})", "erf.f32": "bc_erf_f32({a})",
    "atomic_add.int": "__atomic_fetch_add(&{a}, {b}, __ATOMIC_RELAXED)",
    "atomic_add.uint": "__atomic_fetch_add(&{a}, {b}, __ATOMIC_RELAXED)",
    "atomic_add.float": "bc_atomic_add_{s}(&{a}, {b})",
    "atomic_min": "bc_atomic_min_{s}(&{a}, {b})", "atomic_max": "bc_atomic_max_{s}(&{a}, {b})",
}

#: Helpers emitted once per dtype (``{T}`` the C type, ``{s}`` the dtype name).
HELPERS_NUMERIC = """\
static inline {T} bc_min_{s}({T} a, {T} b) {{ return a < b ? a : b; }}
static inline {T} bc_max_{s}({T} a, {T} b) {{ return a > b ? a : b; }}
"""
HELPERS_UNSIGNED = """\
static inline {T} bc_div_{s}({T} a, {T} b) {{ return b == 0 ? 0 : ({T})(a / b); }}
static inline {T} bc_mod_{s}({T} a, {T} b) {{ return b == 0 ? 0 : ({T})(a % b); }}
"""
#: u32 division and remainder by a launch constant ``d`` (a tensor's shape) through its
#: precomputed ``m = 2**64 / d + 1`` (``MAGIC``; 0 for d == 0): a multiply instead of a divide,
#: exact for every u32 (Lemire, Kaser and Kurz 2019); d == 0 gives 0 as ``bc_div_u32`` does.
HELPERS_MAGIC = """\
static inline uint32_t bc_fdiv_u32(uint32_t a, uint64_t m, uint32_t d) {
    return d == 1 ? a : (uint32_t)(((__uint128_t)m * a) >> 64); }
static inline uint32_t bc_fmod_u32(uint32_t a, uint64_t m, uint32_t d) {
    return (uint32_t)(((__uint128_t)(m * a) * d) >> 64); }
"""
MAGIC = "const uint64_t {m} = {d} ? UINT64_C(0xFFFFFFFFFFFFFFFF) / {d} + 1 : 0;"
#: Signed: MIN / -1 would trap (SIGFPE on x86), so a -1 divisor negates (wrapping: the C
#: target compiles with -fwrapv) and gives remainder 0, as numpy, WGSL and CUDA do.
HELPERS_SIGNED = """\
static inline {T} bc_div_{s}({T} a, {T} b) {{
    return b == 0 ? 0 : b == -1 ? ({T})-a : ({T})(a / b); }}
static inline {T} bc_mod_{s}({T} a, {T} b) {{ return b == 0 || b == -1 ? 0 : ({T})(a % b); }}
static inline {T} bc_abs_{s}({T} a) {{ return a < 0 ? -a : a; }}
"""
HELPERS_FLOAT_ATOMIC = """\
static inline {T} bc_atomic_add_{s}({T} *p, {T} v) {{
    {U} old = __atomic_load_n(({U} *)p, __ATOMIC_RELAXED), upd;
    {T} prev, next;
    do {{
        __builtin_memcpy(&prev, &old, sizeof prev);
        next = prev + v;
        __builtin_memcpy(&upd, &next, sizeof next);
    }} while (!__atomic_compare_exchange_n(({U} *)p, &old, upd, 1, __ATOMIC_RELAXED,
                                           __ATOMIC_RELAXED));
    return prev;
}}
"""
#: Integer atomic min / max (gcc has no fetch-min): a compare-exchange loop that stops as soon
#: as the stored value is no longer improved, so uncontended no-op updates write nothing.
HELPERS_INT_ATOMIC = """\
static inline {T} bc_atomic_min_{s}({T} *p, {T} v) {{
    {T} old = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (v < old && !__atomic_compare_exchange_n(p, &old, v, 1, __ATOMIC_RELAXED,
                                                   __ATOMIC_RELAXED)) {{}}
    return old;
}}
static inline {T} bc_atomic_max_{s}({T} *p, {T} v) {{
    {T} old = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (v > old && !__atomic_compare_exchange_n(p, &old, v, 1, __ATOMIC_RELAXED,
                                                   __ATOMIC_RELAXED)) {{}}
    return old;
}}
"""
#: Branch-free f32 exp/tanh that the compiler can vectorize; libm's scalar calls cannot be
#: without -ffast-math. IEEE special values are kept: NaN propagates, exp overflows to inf and
#: underflows through denormals to 0. `bc_exp_f32` (Cephes polynomial, within 1.0 ulp of float64
#: over [-103, 88.7]) scales by two powers of two (results down to the denormals), and is inf
#: past 88.72283 (the last float whose float32 exp is finite) by a select, not by the product's
#: overflow: gcc contracts that product with an add after it into an FMA, which does not
#: overflow (a fused exp(100) + -inf was -inf, not NaN); its
#: polynomial is evaluated in Estrin's form (a shorter chain of dependent operations than
#: Horner's). tanh is a rational function (fitted here, minimax relative error 8e-9 on [0, 9.1]):
#: |x| from `TANH_F32_ONE` on (where float32 tanh is 1.0) replaced by 9.1 (NaN stays), times an
#: even numerator of degree 12 over an even denominator of degree 6, both in x^2 (coefficients
#: from the highest degree down), capped at 1.0 (the quotient is 1.0 at 9.1, so one select gives
#: both the clamp and the exact 1.0 past `TANH_F32_ONE`: 4-7% off the fused tanh-GELU chain,
#: bit for bit the values of a separate select after the quotient), x's sign taken last (so
#: -0.0 gives -0.0, odd bit for bit). About 15 vector
#: operations where Cephes' exp-based tanh took 33 (the fused tanh-GELU chain is compute-bound
#: on AVX2 cores); its float32 evaluation is within 5.6 ulp of float64 tanh over every float
#: (Cephes': 1.33; torch's: 1), far inside float32's usual tolerances (rtol 1.3e-6: ~11 ulp).
#: float32 erf as Eigen and XLA compute it (and the NumPy backend): x clamped to [-4, 4], where
#: float32 erf is +-1 (NaN stays), times an odd numerator of degree 13 over an even denominator
#: of degree 8, both in x^2 (coefficients from the highest degree down), capped to [-1, 1] (the
#: quotient reached 1.0000002 near |x| = 3.9); a few ulp from the exact value, branch-free and
#: vectorizable where libm's erff is a call per element.
ERF_F32_NUMERATOR = (-2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06,
                     -5.69250639462346e-05, -7.34990630326855e-04, -2.95459980854025e-03,
                     -1.60960333262415e-02)
ERF_F32_DENOMINATOR = (-1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03,
                       -7.37332916720468e-03, -1.42647390514189e-02)
TANH_F32_CLAMP = 9.1
#: The least float whose float32 tanh rounds to 1.0.
TANH_F32_ONE = 9.010914
TANH_F32_NUMERATOR = (-8.299964e-14, 5.2089128e-11, -2.0091397e-08, 1.1123408e-05, 3.101134e-03,
                      1.3081527e-01, 1.0)
TANH_F32_DENOMINATOR = (2.5419547e-04, 2.4484074e-02, 4.6414855e-01, 1.0)


def _horner(coefficients: tuple[float, ...], var: str) -> str:
    """A C float expression of the polynomial in `var` (coefficients from the highest degree),
    each step one `BC_FMAF`."""
    expr = f"{coefficients[0]!r}f"
    for c in coefficients[1:]:
        expr = f"BC_FMAF({expr}, {var}, {c!r}f)"
    return expr


#: `ERF_F32_NUMERATOR` / `ERF_F32_DENOMINATOR` as C's `bc_erf_f32`, and `TANH_F32_*` as
#: `bc_tanh_f32`; their multiply-adds are FMAs where the target has them (`BC_FMAF`: kernels
#: compile without contraction, `runtime.cpu.KERNEL_FLAGS`), so they vectorize to one
#: instruction a step and round alike in every kernel.
HELPERS_RATIONAL_F32 = f"""\
#if defined(__FMA__) || defined(__ARM_FEATURE_FMA)
#define BC_FMAF(a, b, c) __builtin_fmaf(a, b, c)
#else
#define BC_FMAF(a, b, c) ((a) * (b) + (c))
#endif
static inline float bc_erf_f32(float x) {{
    float c = x > 4.0f ? 4.0f : (x < -4.0f ? -4.0f : x), z = c * c;
    float r = {_horner(ERF_F32_NUMERATOR, "z")} * c / {_horner(ERF_F32_DENOMINATOR, "z")};
    return r > 1.0f ? 1.0f : (r < -1.0f ? -1.0f : r);
}}
static inline float bc_tanh_f32(float x) {{
    float a = __builtin_fabsf(x), c = a >= {TANH_F32_ONE}f ? {TANH_F32_CLAMP}f : a, z = c * c;
    float r = c * {_horner(TANH_F32_NUMERATOR, "z")} / {_horner(TANH_F32_DENOMINATOR, "z")};
    return __builtin_copysignf(r > 1.0f ? 1.0f : r, x);
}}
"""
HELPERS_F32_MATH = HELPERS_RATIONAL_F32 + """\
static inline float bc_exp_reduced_f32(float x, float *n) {
    *n = __builtin_rintf(x * 1.44269504088896341f);
    float r = BC_FMAF(*n, 2.12194440e-4f, BC_FMAF(-*n, 0.693359375f, x)), r2 = r * r;
    float p = BC_FMAF(BC_FMAF(BC_FMAF(1.9875691500e-4f, r, 1.3981999507e-3f), r2,
                              BC_FMAF(8.3334519073e-3f, r, 4.1665795894e-2f)), r2,
                      BC_FMAF(1.6666665459e-1f, r, 5.0000001201e-1f));
    return BC_FMAF(p, r2, r) + 1.0f;
}
static inline float bc_pow2_f32(int32_t k) {
    uint32_t b = (uint32_t)(k + 127) << 23;
    float s;
    __builtin_memcpy(&s, &b, 4);
    return s;
}
static inline float bc_exp_f32(float x) {
    x = x > 89.0f ? 89.0f : (x < -104.0f ? -104.0f : x);
    float n;
    float p = bc_exp_reduced_f32(x, &n);
    int32_t k = (int32_t)n, k1 = k / 2;
    float e = p * bc_pow2_f32(k1) * bc_pow2_f32(k - k1);
    return x > 88.72283f ? __builtin_inff() : e;
}
"""
#: Copies of staging buffers past the caches (`c.STREAM_BYTES`; both ends on cache lines): AVX's
#: or SSE2's non-temporal stores, a plain copy elsewhere; the fence makes them visible before
#: the launch returns. Spelled with gcc's and clang's builtins: including <immintrin.h> took
#: ~0.35 s of the 0.53 s that gcc -O3 spent on a broadcast add's kernel (znver3, gcc 12).
HELPER_STREAM = """\
#if (defined(__AVX__) || defined(__SSE2__)) && defined(__GNUC__)
#if defined(__AVX__)
#define BC_STREAM_WORD 32
#define BC_STREAM_STORE __builtin_ia32_movntdq256
#else
#define BC_STREAM_WORD 16
#define BC_STREAM_STORE __builtin_ia32_movntdq
#endif
typedef long long bc_stream_word __attribute__((vector_size(BC_STREAM_WORD)));
static inline void bc_stream_bytes(void *dst, const void *src, int64_t bytes) {
    for (int64_t i = 0; i < bytes; i += BC_STREAM_WORD) {
        bc_stream_word word = *(const bc_stream_word *)((const char *)src + i);
#if defined(__clang__)
        __builtin_nontemporal_store(word, (bc_stream_word *)((char *)dst + i));
#else
        BC_STREAM_STORE((bc_stream_word *)((char *)dst + i), word);
#endif
    }
}
static inline void bc_stream_fence(void) { __builtin_ia32_sfence(); }
#else
static inline void bc_stream_bytes(void *dst, const void *src, int64_t bytes) {
    __builtin_memcpy(dst, src, (size_t)bytes);
}
static inline void bc_stream_fence(void) {}
#endif
"""
#: bf16 <-> float; the store rounds to nearest even and keeps NaNs quiet (as ml_dtypes).
HELPERS_BF16 = """\
static inline float bc_bf16_load(uint16_t h) {
    uint32_t b = (uint32_t)h << 16;
    float f;
    __builtin_memcpy(&f, &b, 4);
    return f;
}
static inline uint16_t bc_bf16_store(float f) {
    uint32_t b;
    __builtin_memcpy(&b, &f, 4);
    if ((b & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((b >> 16) | 0x40u);
    return (uint16_t)((b + 0x7fffu + ((b >> 16) & 1u)) >> 16);
}
"""

#: The minimum of i32 and i64 (no literal spells them), C and CUDA alike.
MIN_LITERALS = {-2**31: "(-2147483647 - 1)", -2**63: "(-9223372036854775807LL - 1)"}

PRELUDE = """\
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
float bc_positive_zero = 0.0f;
float bc_negative_zero = -0.0f;
"""


def literal(value: int | float | bool, type_name: str, dtype_name: str) -> str:
    """Render a finite constant.

    Args:
        value: The constant.
        type_name: C type.
        dtype_name: Kernel dtype name.

    Returns:
        C source text.
    """
    if dtype_name == "bool":
        return "1" if value else "0"
    if dtype_name == "f32":
        return f"{float(value)!r}f"
    if dtype_name in ("f64", "f16", "bf16"):
        return f"(({type_name}){float(value)!r})"
    if dtype_name == "u32":
        return f"{int(value)}u"
    if int(value) in MIN_LITERALS:  # -2**31 / -2**63: the positive literal would overflow
        return MIN_LITERALS[int(value)]
    if dtype_name == "i64":
        return f"INT64_C({int(value)})"
    return f"({int(value)})" if value < 0 else str(int(value))
