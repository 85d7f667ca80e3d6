"""The C target's branch-free float32 exp and tanh (`table_c.HELPERS_F32_MATH`): special values
kept, exp within 2 ulp and the rational tanh within `TANH_ULPS` of the float64 results over their
whole range, where tanh saturates and where exp turns denormal or overflows."""

from __future__ import annotations

import numpy as np
import pytest

import burn_cube as bc
from burn_cube.ir import KernelBuilder

pytestmark = pytest.mark.skipif("cpu" not in bc.available(), reason="no C compiler")
#: The rational tanh's float32 evaluation error bound (5.53 ulp over every float, checked apart).
TANH_ULPS = 5.6


def _apply(op: str, x: np.ndarray) -> np.ndarray:
    """`op` applied by a cpu kernel to float32 `x`."""
    b = KernelBuilder(f"c_{op}", cube_dim=64)
    src, out = b.tensor("x", bc.f32), b.tensor("out", bc.f32)
    i = b.ABSOLUTE_POS
    with b.if_(i < src.len):
        out[i] = getattr(b, op)(src[i])
    got = np.zeros_like(x)
    b.kernel().launch(bc.runtime("cpu"), -(-x.size // 64), 64, x, got)
    return got


def _ulps(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Distance in float32 units in the last place (at the expected value's magnitude)."""
    spacing = np.spacing(np.abs(want).astype(np.float32)).astype(np.float64)
    tiny = float(np.finfo(np.float32).smallest_subnormal)
    return np.abs(got.astype(np.float64) - want) / np.maximum(spacing, tiny)


SPECIAL = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 9.02, -9.02, 10.0, 1e30, -1e30,
                    0.625, -0.625, 1e-30, -1e-45], np.float32)


def test_tanh_special_values_and_range() -> None:
    got = _apply("tanh", SPECIAL)
    assert got.dtype == np.float32 and got.shape == SPECIAL.shape
    with np.errstate(invalid="ignore"):
        want = np.tanh(SPECIAL.astype(np.float64))
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))  # -0.0 and -1e-45 too
    assert list(got[2:4]) == [1.0, -1.0] and list(got[5:10]) == [1.0, -1.0, 1.0, 1.0, -1.0]
    x = np.concatenate([np.linspace(-12, 12, 200_001), np.geomspace(1e-38, 12, 50_001)])
    # every 61st float from 2**-14 (below, the ratio is exactly 1) to past saturation
    bits = np.arange(np.float32(2**-14).view(np.int32), np.float32(9.1).view(np.int32), 61)
    # and every float around saturation, where the quotient's argument is clamped
    edge = np.arange(np.float32(8.99).view(np.int32), np.float32(9.2).view(np.int32))
    x = np.concatenate([x, -x, bits.astype(np.int32).view(np.float32),
                        edge.astype(np.int32).view(np.float32)]).astype(np.float32)
    got = _apply("tanh", x)
    saturated = np.abs(x) >= 9.010914  # float32 tanh is +-1.0 from there
    assert np.abs(got).max() <= 1.0 and (got[saturated] == np.sign(x[saturated])).all()
    assert _ulps(got, np.tanh(x.astype(np.float64))).max() <= TANH_ULPS


def test_exp_special_values_and_range() -> None:
    got = _apply("exp", SPECIAL)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(np.isnan(got), np.isnan(SPECIAL))
    assert list(got[2:4]) == [np.inf, 0.0] and got[0] == got[1] == 1.0
    x = np.linspace(-103, 88.7, 400_001).astype(np.float32)
    want = np.exp(x.astype(np.float64))
    assert _ulps(_apply("exp", x), want).max() <= 2


#: Arguments around exp's overflow (float32: past 88.72283; float64: past 709.7827128933840)
#: and what is added to their exp.
OVERFLOWING = {bc.f32: ([88.72283, 88.72284, 89.0, 100.0, np.inf, np.nan, 88.0, 0.0],
                        [-np.inf, -np.inf, -np.inf, -3e38, -np.inf, -np.inf, -3e38, -np.inf]),
               bc.f64: ([709.7827128933839, 709.7827128933841, 710.0, 800.0, np.inf, np.nan,
                         709.0, 0.0],
                        [-np.inf, -np.inf, -np.inf, -1.7e308, -np.inf, -np.inf, -1.7e308,
                         -np.inf])}


@pytest.mark.parametrize("size", [8, 1000])
@pytest.mark.parametrize("dtype", [bc.f32, bc.f64], ids=["f32", "f64"])
def test_exp_overflow_then_add_is_ieee(size: int, dtype: bc.DType, rt: bc.Runtime) -> None:
    """exp then an add in one kernel: where exp overflows the sum is inf + y (NaN for -inf,
    inf for -3e38), as with exp's result stored first, on every runtime (float64 where it has
    it: WGSL does not); gcc (the C target's float32 helper) and NVRTC (CUDA's expf and exp)
    contracted the last product of exp with the add into an FMA, which never overflows
    (exp(100) + -inf was -inf). Scalar and vector paths (`size`)."""
    if dtype is bc.f64 and rt.name == "wgpu":
        dtype = bc.f32  # (the float32 case again: WGSL has no float64 math)
    host = np.float32 if dtype is bc.f32 else np.float64
    x = np.resize(np.array(OVERFLOWING[dtype][0], host), size)
    y = np.resize(np.array(OVERFLOWING[dtype][1], host), size)
    b = KernelBuilder("exp_add", cube_dim=64)
    src, other, out = b.tensor("x", dtype), b.tensor("y", dtype), b.tensor("out", dtype)
    i = b.ABSOLUTE_POS
    with b.if_(i < src.len):
        out[i] = b.exp(src[i]) + other[i]
    result = rt.allocate(x.shape, dtype)
    b.kernel().launch(rt, -(-size // 64), 64, rt.upload(x), rt.upload(y), result)
    got = result.numpy()
    with np.errstate(over="ignore", invalid="ignore"):
        want = (np.exp(x.astype(np.float64)).astype(host) + y).astype(host)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(np.isinf(got) & (got > 0), np.isinf(want) & (want > 0))
    np.testing.assert_array_equal(np.isinf(got) & (got < 0), np.isinf(want) & (want < 0))
    finite = np.isfinite(want)
    # WGSL's exp may be 3 + 2 |x| ulps off (llvmpipe's exp(88) was 2.1e-6 off)
    rtol = (3 + 2 * 88) * 2.0**-23 if rt.name == "wgpu" else 1e-6 if host is np.float32 \
        else 1e-14
    np.testing.assert_allclose(got[finite], want[finite], rtol=rtol)
