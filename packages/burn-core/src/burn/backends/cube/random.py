"""Random numbers of the cube backends: Philox4x32-10 in kernels.

Philox (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011) is counter
based: block `i` of a call is the 10-round bijection of the 128-bit counter
``(i, 0, call_lo, call_hi)`` under the 64-bit key of the backend's seed, where `call` counts the
backend's random calls since the last `seed`. Each unit computes one block (four u32 words) in
u32 arithmetic only (the 32x32 -> 64-bit products are emulated on 16-bit halves), so a seed
gives the same words, and the same uniform floats and integers, on every runtime (C, WGSL,
CUDA). Normal values go through Box-Muller: float32 with polynomial log / sin / cos in plain
arithmetic (no libm calls, so the C compiler vectorizes it; runtimes may differ by an FMA
contraction), float64 with libm's.

Words become values as follows (``u`` is a uniform float in [0, 1)):

* float32 / float16 / bfloat16 (computed in float32): ``u = (w >> 8) * 2**-24``, one word per
  value; normal: ``(w0, w1)`` of a block give two values (radius from ``1 - u0`` so the log is
  finite, hence |z| <= 5.8).
* float64: ``u`` of 53 bits from two words; normal: two values per block.

A block gives k values (4; 2 for float64 and wide int64 spans): with ``units = ceil(n / k)``
blocks, value j of block i is element ``i + j * units`` of the (row-major) output.
* int32 / int64 in [low, high): ``low + floor(w * span / 2**32)`` for spans up to 2**32,
  else (int64) ``low + floor(w64 * span / 2**64)`` of a word pair (the full int64 range is
  drawn as the span 2**64 - 1: its last value never comes). No rejection: the bias is below
  span / 2**32 (span / 2**64), as torch's.
"""

from __future__ import annotations

import math
import secrets
from typing import Any

import numpy as np

from burn.backend.protocol import Distribution
from burn.dtype import DType
from burn.errors import ValueRangeError
from burn.ir.cube import cube_dtype

from .kernel_cache import cached_kernel
from .math import atanh2
from .tensor import CubeTensor, Shape

#: Philox4x32 multipliers and Weyl key increments (Random123's constants).
PHILOX_M = (0xD2511F53, 0xCD9E8D57)
PHILOX_W = (0x9E3779B9, 0xBB67AE85)
ROUNDS = 10
MASK32 = 0xFFFFFFFF
MASK64 = (1 << 64) - 1
_TWO_PI = 2 * math.pi


def _mulhilo(b: Any, a: Any, m: Any) -> tuple[Any, Any]:
    """High and low u32 halves of the 64-bit product `a * m` (u32 values, or an int `m`), with
    u32 operations only: four 16 x 16-bit partial products, carries summed without overflow."""
    from burn_cube import u32

    a_lo, a_hi = b.local(u32, a & 0xFFFF), b.local(u32, a >> 16)
    m_lo, m_hi = m & 0xFFFF, m >> 16
    lh = b.local(u32, a_hi * m_lo)
    cross = (a_lo * m_lo >> 16) + (lh & 0xFFFF) + a_lo * m_hi
    hi = b.local(u32, a_hi * m_hi + (lh >> 16) + (cross >> 16))
    return hi, b.local(u32, a * m)


def philox(b: Any, counter: list[Any], key: list[Any]) -> list[Any]:
    """Emit Philox4x32-10 of four u32 counter words under two u32 key words.

    Returns:
        The four output words (u32 locals).
    """
    from burn_cube import u32

    c = [b.local(u32, w) for w in counter]
    k = [b.local(u32, w) for w in key]
    for rnd in range(ROUNDS):
        hi0, lo0 = _mulhilo(b, c[0], PHILOX_M[0])
        hi1, lo1 = _mulhilo(b, c[2], PHILOX_M[1])
        b.set(c[0], hi1 ^ c[1] ^ k[0])
        b.set(c[1], lo1)
        b.set(c[2], hi0 ^ c[3] ^ k[1])
        b.set(c[3], lo0)
        if rnd + 1 < ROUNDS:
            b.set(k[0], k[0] + PHILOX_W[0])
            b.set(k[1], k[1] + PHILOX_W[1])
    return c


def _stream_block(name: str) -> tuple[Any, list[Any]]:
    """A builder whose first parameters are the stream (key and call words), and the Philox
    block of its unit: counter ``(ABSOLUTE_POS, 0, call0, call1)``.

    Returns:
        (the builder, the four words).
    """
    from burn_cube import KernelBuilder, u32

    b = KernelBuilder(name)
    key = [b.scalar("key0", u32), b.scalar("key1", u32)]
    call = [b.scalar("call0", u32), b.scalar("call1", u32)]
    return b, philox(b, [b.ABSOLUTE_POS, 0, call[0], call[1]], key)


def _unit_f32(b: Any, word: Any) -> Any:
    """`word`'s top 24 bits as a float32 in [0, 1)."""
    from burn_cube import f32

    return b.cast(word >> 8, f32) * 2.0 ** -24


def _unit_f64(b: Any, w0: Any, w1: Any) -> Any:
    """53 bits of two words as a float64 in [0, 1)."""
    from burn_cube import f64

    return (b.cast(w0 >> 5, f64) * 2.0 ** 26 + b.cast(w1 >> 6, f64)) * 2.0 ** -53


def _box_muller(b: Any, u0: Any, u1: Any) -> tuple[Any, Any]:
    """Two float64 standard normals from two uniforms in [0, 1) (radius from 1 - u0, in
    (0, 1]), with libm's log, cos and sin."""
    radius = b.local(u0.dtype, b.sqrt(-2.0 * b.log(1.0 - u0)))
    angle = b.local(u0.dtype, u1 * _TWO_PI)
    return radius * b.cos(angle), radius * b.sin(angle)


#: Cephes' sinf / cosf polynomials on [-pi/4, pi/4].
_SIN_F32 = (-1.9515295891e-4, 8.3321608736e-3, -1.6666654611e-1)
_COS_F32 = (2.443315711809948e-5, -1.388731625493765e-3, 4.166664568298827e-2)
_LN2_HI, _LN2_LO = 0.693359375, -2.12194440e-4


def _radius_f32(b: Any, word: Any) -> Any:
    """sqrt(-2 ln v) for v = m 2**-24, m = 2**24 - (word >> 8) in [1, 2**24], as plain float32
    arithmetic: m = f 2**e (e by binary search, f in [sqrt 1/2, sqrt 2)), ln f = 2 atanh((f - 1)
    / (f + 1))."""
    from burn_cube import bool_, f32, u32

    m = b.local(u32, 16777216 - (word >> 8))
    rest, e, scale = b.local(u32, m), b.local(f32, 0.0), b.local(f32, 1.0)
    for shift in (16, 8, 4, 2, 1):
        big = b.local(bool_, rest >= (1 << shift))
        b.set(rest, b.select(big, rest >> shift, rest))
        b.set(e, e + b.select(big, float(shift), 0.0))
        b.set(scale, scale * b.select(big, 2.0 ** -shift, 1.0))
    f = b.local(f32, b.cast(m, f32) * scale)
    high = b.local(bool_, f > math.sqrt(2.0))
    half = b.local(f32, f * 0.5)  # select arms stay plain values: C compilers vectorize
    b.set(f, b.select(high, half, f))
    b.set(e, e + b.select(high, 1.0, 0.0) - 24.0)
    log_v = atanh2(b, b.local(f32, (f - 1.0) / (f + 1.0)), 6) + e * _LN2_HI + e * _LN2_LO
    return b.sqrt(-2.0 * log_v)


def _cos_sin_f32(b: Any, word: Any) -> tuple[Any, Any]:
    """cos and sin of 2 pi (word >> 8) 2**-24 as plain float32 arithmetic: the quadrant from
    the top two bits, the rest folded into [0, pi/4] exactly, then Cephes' polynomials."""
    from burn_cube import f32, u32

    k = b.local(u32, word >> 8)
    quadrant = b.local(u32, k >> 22)
    j = b.local(u32, k & 0x3FFFFF)
    upper = j >= 0x200000
    folded = b.local(u32, b.select(upper, 0x400000 - j, j))  # cast outside the select
    phi = b.local(f32, b.cast(folded, f32) * (math.pi / 2 / 2 ** 22))
    z = b.local(f32, phi * phi)
    sin_p = b.local(f32, ((_SIN_F32[0] * z + _SIN_F32[1]) * z + _SIN_F32[2]) * z * phi + phi)
    cos_p = b.local(f32, ((_COS_F32[0] * z + _COS_F32[1]) * z + _COS_F32[2]) * z * z - z * 0.5
                    + 1.0)
    sin_r, cos_r = b.local(f32, b.select(upper, cos_p, sin_p)), b.local(f32, b.select(
        upper, sin_p, cos_p))
    odd = (quadrant & 1) == 1
    sin_q, cos_q = b.select(odd, cos_r, sin_r), b.select(odd, sin_r, cos_r)
    cos_sign = b.select(quadrant - 1 < 2, -1.0, 1.0)  # quadrants 1 and 2 (u32: 0 - 1 wraps)
    return cos_q * cos_sign, sin_q * b.select(quadrant >= 2, -1.0, 1.0)


def _normals(b: Any, words: list[Any], units: list[Any]) -> list[Any]:
    """Standard normals of one block: float64 pairs from `units` by libm's Box-Muller, float32
    pairs straight from the words by the vectorizable one."""
    if units[0].dtype.bits == 64:
        pairs = [_box_muller(b, units[0], units[1])]
    else:
        pairs = []
        for w0, w1 in ((words[0], words[1]), (words[2], words[3])):
            radius = b.local(units[0].dtype, _radius_f32(b, w0))
            cos, sin = _cos_sin_f32(b, w1)
            pairs.append((radius * cos, radius * sin))
    return [z for pair in pairs for z in pair]


def _store_all(b: Any, out: Any, values: list[Any]) -> None:
    """`out[pos + j * units] = values[j]` for the first `units` = ceil(len / len(values))
    positions, where that index is inside `out`. Each value's stores are contiguous across
    units and computed outside the guards (C compilers do not speculate a float compare), so
    C compilers vectorize the units."""
    pos = b.ABSOLUTE_POS
    units = b.local(pos.dtype, (out.len + (len(values) - 1)) // len(values))
    ready = [b.local(out.dtype, b.cast(value, out.dtype)) for value in values]
    for j, value in enumerate(ready):
        index = pos + units * j
        with b.if_(b.and_(pos < units, index < out.len)):
            out[index] = value


@cached_kernel
def float_kernel(kind: str, dtype: DType) -> Any:
    """Random `dtype` values of distribution `kind` ("uniform", "normal", "bernoulli"), four
    per unit (two for float64).

    The kernel takes the stream words, then uniform: `low`, `scale`, `bound` (the largest
    value below high) and `one` (1.0); normal: `mean` and `std`; bernoulli: the u32 `thresh`
    that ``w >> 8`` must be under; then the dense rank-1 output.
    """
    from burn_cube import f32, f64, u32

    work = f64 if dtype is DType.float64 else f32
    b, words = _stream_block(f"random_{kind}")
    if work is f64:
        units = [_unit_f64(b, words[0], words[1]), _unit_f64(b, words[2], words[3])]
    else:
        units = [_unit_f32(b, w) for w in words]
    if kind == "bernoulli":
        thresh = b.scalar("thresh", u32)
        values = [b.select((w >> 8) < thresh, 1.0, 0.0) for w in words]
    elif kind == "normal":
        mean, std = b.scalar("mean", work), b.scalar("std", work)
        values = [z * std + mean for z in _normals(b, words, units)]
    else:
        low, scale, bound = (b.scalar(n, work) for n in ("low", "scale", "bound"))
        # `one` (1.0 at run time) rounds the product first, so the C / CUDA compilers' FMA
        # contraction gives WGSL's (and NumPy's) separately rounded u * scale + low
        one = b.scalar("one", work)
        values = [b.local(work, u * scale * one + low) for u in units]
        values = [b.select(v > bound, bound, v) for v in values]  # half-open; NaN stays
    _store_all(b, b.tensor("out", cube_dtype("random", dtype), rank=1, write=True), values)
    return b.kernel()


def _add_carry(b: Any, x: Any, y: Any) -> tuple[Any, Any]:
    """`x + y` in u32 and its carry (0 or 1)."""
    from burn_cube import u32

    total = b.local(u32, x + y)
    return total, _carry(b, total < x)


def _widen(b: Any, word: Any) -> Any:
    """A u32 as an i64 (masked: naga's WGSL `i64(u32)` sign-extends words of 2**31 and up)."""
    from burn_cube import i64

    return b.cast(word, i64) & 0xFFFFFFFF


def _carry(b: Any, cond: Any) -> Any:
    """1 or 0 as a u32 (plain literals would make an i32 select, and promote the sums)."""
    from burn_cube import u32

    return b.select(cond, b.const(1, u32), b.const(0, u32))


def _mulhi64(b: Any, r: tuple[Any, Any], s: tuple[Any, Any]) -> tuple[Any, Any]:
    """The high 64 bits (as high and low u32 words) of the 128-bit product of the 64-bit
    numbers `r` and `s`, each given as (high word, low word)."""
    a1, _ = _mulhilo(b, r[1], s[1])
    b1, b0 = _mulhilo(b, r[1], s[0])
    c1, c0 = _mulhilo(b, r[0], s[1])
    d1, d0 = _mulhilo(b, r[0], s[0])
    t, k0 = _add_carry(b, a1, b0)
    _, k1 = _add_carry(b, t, c0)
    u, k2 = _add_carry(b, b1, c1)
    u, k3 = _add_carry(b, u, d0)
    u, k4 = _add_carry(b, u, k0 + k1)
    return d1 + k2 + k3 + k4, u


@cached_kernel
def int_kernel(dtype: DType, wide: bool) -> Any:
    """Uniform ints `low + floor(w * span / 2**k)` in [low, low + span): four per unit from
    one word each (k = 32, span <= 2**32, given as the u32 `span_m1` = span - 1; `low` as u32
    bits for int32), or for `wide` int64 spans two per unit from two words each (k = 64, the
    span as u32 words `span_hi`, `span_lo`)."""
    from burn_cube import i32, i64, u32

    out_dtype = cube_dtype("random", dtype)
    b, words = _stream_block("random_int")
    low = b.scalar("low", u32 if out_dtype is i32 else i64)
    values = []
    if wide:
        span = (b.scalar("span_hi", u32), b.scalar("span_lo", u32))
        for i in (0, 2):
            hi, lo = _mulhi64(b, (words[i], words[i + 1]), span)
            half = b.local(i64, _widen(b, hi) * 2 ** 31)  # low + hi * 2**32 never overflows
            values.append(low + half + half + _widen(b, lo))
    else:
        span_m1 = b.scalar("span_m1", u32)
        for w in words:  # floor(w * (span_m1 + 1) / 2**32) = high word of w * span_m1 + w
            hi, lo = _mulhilo(b, w, span_m1)
            offset = hi + _carry(b, lo + w < w)
            values.append(b.cast(low + offset, i32) if out_dtype is i32
                          else low + _widen(b, offset))
    _store_all(b, b.tensor("out", out_dtype, rank=1, write=True), values)
    return b.kernel()


def _below(value: float, dtype: DType) -> float:
    """The largest `dtype` value below `value` (as a Python float)."""
    return float(np.nextafter(np.asarray(value, dtype.numpy), np.asarray(-np.inf, dtype.numpy)))


class CubeRandomOps:
    """seed / float_random / int_random on Philox kernels; the stream is the seed's key and the
    number of random calls since (a fresh backend draws its key from the OS)."""

    _philox_key: int | None = None
    _philox_calls: int = 0

    def seed(self: Any, seed: int) -> None:
        """Reseed: key = `seed` mod 2**64, call counter 0 (the host fallback is reseeded too)."""
        self.host.seed(seed)
        self._philox_key = int(seed) & MASK64
        self._philox_calls = 0

    def _stream(self: Any) -> tuple[int, int, int, int]:
        """The next call's key and call words (and count the call)."""
        if self._philox_key is None:
            self._philox_key = secrets.randbits(64)
        key, call = self._philox_key, self._philox_calls
        self._philox_calls = call + 1
        return key & MASK32, key >> 32, call & MASK32, (call >> 32) & MASK32

    def _launch_random(self: Any, kernel: Any, out: CubeTensor, per_unit: int,
                       *params: Any) -> CubeTensor:
        stream = self._stream()
        if out.size:
            self.launch(kernel, -(-out.size // per_unit), *stream, *params,
                        out.view((out.size,), (1,)).array)
        return out

    def float_random(self: Any, shape: Shape, dist: Distribution, dtype: DType,
                     device: Any) -> CubeTensor:
        """uniform in [a, b), normal(mean=a, std=b), bernoulli(prob=a) as 0.0 / 1.0."""
        out = self.empty(tuple(shape), dtype)
        per_unit = 2 if dtype is DType.float64 else 4
        kernel = float_kernel(dist.kind, dtype)
        if dist.kind == "bernoulli":
            prob = min(max(dist.a, 0.0), 1.0) if dist.a == dist.a else 0.0
            return self._launch_random(kernel, out, 4, math.ceil(prob * 2 ** 24))
        if dist.kind == "normal":
            return self._launch_random(kernel, out, per_unit, dist.a, dist.b)
        work = np.float64 if dtype is DType.float64 else np.float32
        bound = _below(dist.b, dtype) if dist.b > dist.a else math.inf
        return self._launch_random(kernel, out, per_unit, dist.a,
                                   float(work(dist.b - dist.a)), bound, 1.0)

    def int_random(self: Any, shape: Shape, low: int, high: int, dtype: DType,
                   device: Any) -> CubeTensor:
        """Uniform integers in [low, high).

        Raises:
            ValueRangeError: when high <= low or the range leaves `dtype`.
        """
        info = np.iinfo(dtype.numpy)
        if high <= low or low < info.min or high - 1 > info.max:
            raise ValueRangeError("int_random", f"[low, high) must be a non-empty range of "
                                  f"{dtype.value}", low=low, high=high, dtype=dtype.value)
        out = self.empty(tuple(shape), dtype)
        span = high - low
        if span > 2 ** 32:
            span = min(span, MASK64)  # the full int64 range: one value of 2**64 is never drawn
            return self._launch_random(int_kernel(dtype, True), out, 2, low, span >> 32,
                                       span & MASK32)
        low_arg = low & MASK32 if dtype is DType.int32 else low
        return self._launch_random(int_kernel(dtype, False), out, 4, low_arg, span - 1)
