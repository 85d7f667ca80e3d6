"""CUDA C expression table for the cuda target (compiled with NVRTC through CuPy).

Shares the C spellings of arithmetic and libm functions (CUDA's device math library has the same
names); differs in types, atomics and warp-level plane operations. bf16 is stored as
``__nv_bfloat16`` and computed in ``float`` (as on the CPU: widened on load, rounded to nearest
even on store and on casts to bf16), so it needs no bf16 arithmetic from the architecture.
"""

from __future__ import annotations

import math

from burn_cube.codegen import table_c
from burn_cube.codegen.emitter import POSITIONS

#: Lines are CUDA's aligned vector types (64/128-bit loads and stores); no f16 lines.
TYPES = {"bool": "bool", "u8": "unsigned char", "i8": "signed char", "u32": "unsigned int",
         "i32": "int", "i64": "long long",
         "f16": "__half", "bf16": "float", "f32": "float", "f64": "double",
         "f32x2": "float2", "f32x4": "float4", "f64x2": "double2", "i32x2": "int2",
         "i32x4": "int4", "u32x2": "uint2", "u32x4": "uint4", "i64x2": "longlong2"}
STORAGE_TYPES = {"bf16": "__nv_bfloat16"}

OPS: dict[str, str | None] = {
    **table_c.OPS,
    **POSITIONS,  # plain: the counters are unsigned int here (C casts its int64_t ones)
    **table_c.shift_ops({8: "unsigned char", 32: "unsigned int", 64: "unsigned long long"}),
    "plane_dim": "32u", "unit_pos_plane": "(bc_unit % 32u)",
    "plane_sum": "bc_plane_sum({a})", "plane_max": "bc_plane_max({a})",
    "inf": "(({t})CUDART_INF)", "ninf": "(({t})-CUDART_INF)", "nan": "(({t})CUDART_NAN)",
    # the type given: 8-bit operands may be C ints (literals, quotients) beside their type's
    "min": "bc_min<{t}>({a}, {b})", "max": "bc_max<{t}>({a}, {b})",
    # an integer -> float cast as it is (C's `from_int` adds 0 against gcc's fold; __half takes
    # no int operand)
    "from_int": "{a}",
    "neg.float": "(-{a})",  # (C's goes through a -0.0 global against gcc's fnmsub fold)
    "div.int": "bc_div<{t}>({a}, {b})", "div.uint": "bc_div<{t}>({a}, {b})",
    "mod.int": "bc_mod<{t}>({a}, {b})", "mod.uint": "bc_mod<{t}>({a}, {b})",
    "abs.int": "abs({a})",
    # __half has no implicit float math: absolute value natively, pow through float
    "abs.f16": "__habs({a})", "isnan.f16": "__hisnan({a})", "isinf.f16": "(__hisinf({a}) != 0)",
    "iszero.f16": "__heq({a}, __float2half(0.0f))",
    "pow.f16": "__float2half(powf(__half2float({a}), __half2float({b})))",
    "fmod.f32": "bc_fmodf({a}, {b})",
    "fmod.f16": "__float2half(bc_fmodf(__half2float({a}), __half2float({b})))",
    "load.bf16": "__bfloat162float({a})", "store.bf16": "__float2bfloat16_rn({a})",
    "atomic_add": "atomicAdd(&{a}, {b})",
    "atomic_add.i64": "((long long)atomicAdd((unsigned long long *)&{a}, "
                      "(unsigned long long){b}))",
    "atomic_min": "atomicMin(&{a}, {b})", "atomic_max": "atomicMax(&{a}, {b})",
    **{f"atomic_{op}.{s}": f"bc_atomic8<{k}>(&{{a}}, ({{t}})({{b}}))"
       for k, op in enumerate(("add", "min", "max")) for s in ("i8", "u8")},
}
# C-only entries: host atomics, and the vectorizable f32 exp/tanh/erf of the CPU (CUDA's own
# expf / tanhf / erff are the fast ones on the GPU).
for _key in ("atomic_add.int", "atomic_add.uint", "atomic_add.float", "exp.f32", "tanh.f32",
             "erf.f32"):
    OPS.pop(_key)
# exp overflows by a select, not by the product that ends CUDA's expf / exp: NVRTC contracted
# that product with an add after it into an FMA, which does not overflow (a fused
# exp(88.72284) + -inf was -inf and exp(89) - 3e38 1.5e38, where torch gives NaN and inf)
OPS["exp.f32"] = "bc_exp({a}, 88.72283f)"
OPS["exp.f64"] = "bc_exp({a}, 709.782712893384)"

#: Float dtypes, whose zero literals read the prelude's `bc_zero`.
FLOAT_NAMES = ("f16", "bf16", "f32", "f64")

#: Included by kernels that use bf16.
BF16_INCLUDE = "#include <cuda_bf16.h>"
PRELUDE = """\
#include <cuda_fp16.h>
#define CUDART_INF __int_as_float(0x7f800000)
#define CUDART_NAN __int_as_float(0x7fffffff)
// Float zero literals read this (`literal`): ptxas (CUDA 13, sm_90) turned a select of the
// immediates -1.0 and -0.0 into +0.0, a select NVVM made of -(b ? 1.0f : 0.0f); a zero it cannot
// see keeps such selects between registers.
__constant__ float bc_zero = 0.0f;
template <typename T> __device__ inline T bc_min(T a, T b) { return a < b ? a : b; }
template <typename T> __device__ inline T bc_max(T a, T b) { return a > b ? a : b; }
// Integer division and remainder as the C target's, where CUDA's are undefined: 0 for a zero
// divisor; a -1 divisor negates (wrapping: MIN / -1 is MIN) and leaves remainder 0.
template <typename T> __device__ inline bool bc_minus_one(T b) {
    return (T)-1 < (T)0 && b == (T)-1; }
template <typename T> __device__ inline T bc_div(T a, T b) {
    return b == 0 ? (T)0 : bc_minus_one(b) ? (T)(0ull - (unsigned long long)a) : (T)(a / b); }
template <typename T> __device__ inline T bc_mod(T a, T b) {
    return b == 0 || bc_minus_one(b) ? (T)0 : (T)(a % b); }
// 8-bit atomics (CUDA has none): a compare-and-swap of the aligned 32-bit word holding the
// byte; OP 0 adds (wrapping), 1 keeps the minimum, 2 the maximum. Returns the old value.
template <int OP, typename T> __device__ inline T bc_atomic8(T *p, T v) {
    unsigned int *word = (unsigned int *)((size_t)p & ~(size_t)3);
    const unsigned int shift = ((unsigned int)(size_t)p & 3u) * 8u;
    unsigned int old = *word, seen;
    do {
        seen = old;
        const T cur = (T)((seen >> shift) & 0xffu);
        const T next = OP == 0 ? (T)(cur + v) : OP == 1 ? (v < cur ? v : cur) : (v > cur ? v : cur);
        old = atomicCAS(word, seen, (seen & ~(0xffu << shift)) |
                                    ((unsigned int)(unsigned char)next << shift));
    } while (seen != old);
    return (T)((old >> shift) & 0xffu);
}
// exp, inf past `last` (the last argument whose exp is finite) by a select (`OPS["exp.f32"]`).
template <typename T> __device__ inline T bc_exp(T x, T last) {
    return x > last ? (T)CUDART_INF : exp(x); }
// C's fmodf, exact for every quotient and for subnormals (the H200's fmodf gave NaN for
// subnormal divisors): the long division of the significands on their bits (musl's fmodf).
__device__ inline float bc_fmodf(float x, float y) {
    const unsigned int ux = __float_as_uint(x), uy = __float_as_uint(y);
    const unsigned int sx = ux & 0x80000000u, ax = ux & 0x7fffffffu, ay = uy & 0x7fffffffu;
    if (ay == 0u || ay > 0x7f800000u || ax >= 0x7f800000u) return CUDART_NAN;
    if (ax <= ay) return ax == ay ? __uint_as_float(sx) : x;
    int ex = (int)(ax >> 23), ey = (int)(ay >> 23);
    unsigned int mx = ax & 0x7fffffu, my = ay & 0x7fffffu;
    if (ex == 0) { mx <<= __clz(mx) - 8; ex = 9 - __clz(ax); } else { mx |= 0x800000u; }
    if (ey == 0) { my <<= __clz(my) - 8; ey = 9 - __clz(ay); } else { my |= 0x800000u; }
    for (; ex > ey; --ex) {
        if (mx >= my) { mx -= my; if (mx == 0u) return __uint_as_float(sx); }
        mx <<= 1;
    }
    if (mx >= my) { mx -= my; if (mx == 0u) return __uint_as_float(sx); }
    const int shift = __clz(mx) - 8;
    mx <<= shift;
    ex -= shift;
    mx = ex > 0 ? ((mx - 0x800000u) | ((unsigned int)ex << 23)) : (mx >> (1 - ex));
    return __uint_as_float(mx | sx);
}
template <typename T> __device__ inline T bc_plane_sum(T v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
template <typename T> __device__ inline T bc_plane_max(T v) {
    for (int o = 16; o > 0; o >>= 1) v = bc_max(v, (T)__shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
"""


def literal(value: int | float | bool, type_name: str, dtype_name: str) -> str:
    """Render a finite constant (C spelling, CUDA type names).

    Args:
        value: The constant.
        type_name: CUDA type.
        dtype_name: Kernel dtype name.

    Returns:
        CUDA C source text.
    """
    if dtype_name == "i64" and int(value) not in table_c.MIN_LITERALS:
        return f"{int(value)}LL"
    if dtype_name in FLOAT_NAMES and value == 0:  # (the prelude's `bc_zero`)
        zero = "bc_zero" if type_name == "float" else f"(({type_name})bc_zero)"
        return f"(-{zero})" if math.copysign(1.0, value) < 0 else zero
    return table_c.literal(value, type_name, dtype_name)
