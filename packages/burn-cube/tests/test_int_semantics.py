"""Integer semantics every target shares: shifts by any amount, float -> int casts, 8-bit
wraparound; against numpy on each runtime, and the CUDA C compiled by nvcc."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import burn_cube as bc
from burn_cube.codegen import generate
from burn_cube.errors import LaunchError
from burn_cube.ir import KernelBuilder
from burn_cube.types import DType, dtype_named, f16, f32, f64, from_numpy

INTS = ("i32", "i64", "i8", "u8")
#: Floats an int cast cannot hold exactly, and the edges of truncation.
FLOATS = [np.nan, np.inf, -np.inf, 3e9, -3e9, 1e20, -1e20, 300.0, -1.0, -129.0, 127.9, -128.9,
          255.5, 2.5, -2.5, 0.0, -0.0, 65504.0, 2147483520.0]


def _binary(op: str, dtype: DType, then_shr: int = 0) -> KernelBuilder:
    """out[i] = x[i] <op> y[i], shifted right by `then_shr` (an intermediate result)."""
    b = KernelBuilder(f"{op}_{dtype}_{then_shr}", cube_dim=64)
    x, y = b.tensor("x", dtype), b.tensor("y", dtype)
    out = b.tensor("out", dtype, write=True)
    i = b.ABSOLUTE_POS
    with b.if_(i < out.len):
        value = b.binary_value(op, x[i], y[i])
        out[i] = b.binary_value("shr", value, then_shr) if then_shr else value
    return b


def _clamp(dtype: DType) -> KernelBuilder:
    """out[i] = max(min(x[i], 100), -5): literals beside 8-bit values."""
    b = KernelBuilder(f"clamp_{dtype}", cube_dim=64)
    x = b.tensor("x", dtype)
    out = b.tensor("out", dtype, write=True)
    i = b.ABSOLUTE_POS
    with b.if_(i < out.len):
        out[i] = b.call_value("max", b.call_value("min", x[i], 100), -5)
    return b


def _cast(src: DType, dst: DType) -> KernelBuilder:
    """out[i] = dst(x[i])."""
    b = KernelBuilder(f"cast_{src}_{dst}", cube_dim=64)
    x = b.tensor("x", src)
    out = b.tensor("out", dst, write=True)
    i = b.ABSOLUTE_POS
    with b.if_(i < out.len):
        out[i] = b.cast(x[i], dst)
    return b


def _cast_reference(values: np.ndarray, dst: DType) -> np.ndarray:
    """The documented rule: truncation; NaN, inf and values outside i32 (i64) give the
    minimum; 8-bit types go through i32 and wrap."""
    bits = max(dst.bits, 32)
    limit = 2.0 ** (bits - 1)
    wide = np.asarray(values, np.float64)
    inside = (wide >= -limit) & (wide < limit)
    whole = np.where(inside, np.trunc(np.where(inside, wide, 0)), -limit).astype(f"int{bits}")
    return whole.astype(dst.numpy)


def _launch(rt: bc.Runtime, b: KernelBuilder, out_dtype: DType, *inputs: np.ndarray
            ) -> np.ndarray | None:
    """The kernel's output; None where the runtime lacks one of the dtypes (WGSL has no 8-bit
    ints; f64 only on some adapters), after checking that uploading it raises LaunchError."""
    dtypes = [from_numpy(a.dtype) for a in inputs] + [out_dtype]
    if not all(d is not None and d.name in rt.properties.dtypes for d in dtypes):
        with pytest.raises(LaunchError, match="does not support"):
            for a in (*inputs, np.zeros(1, out_dtype.numpy)):
                rt.upload(a)
        return None
    out = rt.allocate(inputs[0].shape, out_dtype)
    b.kernel().launch(rt, -(-inputs[0].size // 64), 64, *[rt.upload(a) for a in inputs], out)
    return out.numpy()


@pytest.mark.parametrize("name", INTS)
@pytest.mark.parametrize("op", ["shl", "shr"])
def test_shift_amounts_outside_the_width(rt: bc.Runtime, op: str, name: str) -> None:
    """Amounts 0, bits - 1, bits, bits + 8 and negative ones shift as numpy (everything out:
    0, or -1 for a right shift of a negative value), not modulo the width."""
    dtype = dtype_named(name)
    info = np.iinfo(dtype.numpy)
    values = np.array([0, 1, 5, info.max, info.min, info.max - 1] +
                      ([] if info.min == 0 else [-1, -5]), dtype.numpy)
    bits = dtype.bits
    amounts = [0, 1, bits - 1, bits, bits + 8] + ([200, 255] if info.min == 0 else
                                                 [-1, -bits, -bits - 8])
    x = np.repeat(values[None, :], len(amounts), 0).ravel()
    y = np.repeat(np.array(amounts, dtype.numpy)[:, None], len(values), 1).ravel()
    got = _launch(rt, _binary(op, dtype), dtype, x, y)
    if got is None:
        return
    want = (np.left_shift if op == "shl" else np.right_shift)(x, y)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", ["i32", "i64", "i8"])
@pytest.mark.parametrize("op", ["floordiv", "mod"])
def test_signed_division_truncates(rt: bc.Runtime, op: str, name: str) -> None:
    """Signed division truncates toward zero and the remainder takes the dividend's sign, as
    C's (numpy's ``fix`` and ``fmod``), for every sign of either operand and the dtype's
    extremes (non-zero divisors; NVIDIA's Vulkan driver got ``-7 % 5`` wrong)."""
    dtype = dtype_named(name)
    info = np.iinfo(dtype.numpy)
    values = [0, 1, 4, 5, 7, -1, -4, -5, -7, -976, info.max, info.min] if dtype.bits > 8 else \
        [0, 1, 4, 5, 7, -1, -4, -5, -7, info.max, info.min]
    divisors = [1, -1, 2, -2, 5, -5, 7, -7]
    pairs = [(x, y) for x in values for y in divisors if not (x == info.min and y == -1)]
    x = np.array([p[0] for p in pairs], dtype.numpy)
    y = np.array([p[1] for p in pairs], dtype.numpy)
    got = _launch(rt, _binary(op, dtype), dtype, x, y)
    if got is None:
        return
    quotients = [abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1) for a, b in pairs]
    want = np.array(quotients if op == "floordiv" else
                    [a - b * q for (a, b), q in zip(pairs, quotients, strict=True)], dtype.numpy)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", ["i32", "i64", "i8", "u32", "u8"])
@pytest.mark.parametrize("op", ["floordiv", "mod"])
def test_zero_and_minus_one_divisors(rt: bc.Runtime, op: str, name: str) -> None:
    """Every runtime gives the C target's results where C and CUDA leave them undefined (and
    WGSL's ``/`` gives the dividend): 0 for a zero divisor, ``MIN / -1`` wrapping to MIN and
    ``MIN % -1`` giving 0; a zero divisor beside non-zero ones in one launch."""
    dtype = dtype_named(name)
    info = np.iinfo(dtype.numpy)
    values = [0, 1, 7, info.max, info.min] + ([-1, -7] if info.min else [])
    pairs = [(x, 0) for x in values] + [(x, 3) for x in values]
    if info.min:
        pairs += [(x, -1) for x in values]
    x = np.array([p[0] for p in pairs], dtype.numpy)
    y = np.array([p[1] for p in pairs], dtype.numpy)
    got = _launch(rt, _binary(op, dtype), dtype, x, y)
    if got is None:
        return

    def expected(a: int, b: int) -> int:
        if b == 0:
            return 0
        q = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)
        wrapped = (q - info.min) % (info.max - info.min + 1) + info.min  # MIN / -1 wraps
        return wrapped if op == "floordiv" else a - b * q

    want = np.array([expected(a, b) for a, b in pairs], dtype.numpy)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("size", [7, 1000])
@pytest.mark.parametrize("src", [f32, f64], ids=str)
def test_float_int_float_keeps_zero_positive(rt: bc.Runtime, src: DType, size: int) -> None:
    """A float -> i32 -> float round trip in one kernel gives the integer's +0.0 for values
    that truncate to 0 from below (gcc's -fno-trapping-math fold into ``trunc`` gave -0.0),
    negated after it: vector and scalar paths (`size`), every sign checked bit for bit."""
    b = KernelBuilder(f"round_trip_{src}", cube_dim=64)
    x = b.tensor("x", src)
    out = b.tensor("out", src, write=True)
    i = b.ABSOLUTE_POS
    with b.if_(i < out.len):
        out[i] = -b.cast(b.cast(x[i], dtype_named("i32")), src)
    pattern = np.array([-0.5, -0.0, 0.0, -0.99, 0.75, -1.5, 2.5, -3.0e9, np.nan], src.numpy)
    values = np.resize(pattern, size)
    got = _launch(rt, b, src, values)
    if got is None:
        return
    inside = (values >= -2.0**31) & (values < 2.0**31)
    whole = np.where(inside, np.trunc(np.where(inside, values, 0)), -2.0**31)
    want = -(whole.astype(np.int32).astype(src.numpy))
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


@pytest.mark.parametrize("dst", INTS)
@pytest.mark.parametrize("src", [f32, f64, f16], ids=str)
def test_float_to_int_casts(rt: bc.Runtime, src: DType, dst: str) -> None:
    """NaN, inf, out-of-range and fractional floats convert by the one documented rule on every
    runtime (numpy's and PyTorch's results on x86)."""
    to = dtype_named(dst)
    with np.errstate(over="ignore"):  # f16: past 65504 is inf
        values = np.array(FLOATS).astype(src.numpy)
    got = _launch(rt, _cast(src, to), to, values)
    if got is None:
        return
    want = _cast_reference(values, to)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", ["i8", "u8"])
@pytest.mark.parametrize("op", ["add", "sub", "mul"])
def test_8bit_arithmetic_wraps(rt: bc.Runtime, op: str, name: str) -> None:
    """8-bit results wrap as numpy's (uint8 200 + 100 = 44), also inside an expression (C
    computes them in int): (x <op> y) >> 1 is the shift of the wrapped value."""
    dtype = dtype_named(name)
    info = np.iinfo(dtype.numpy)
    rng = np.random.default_rng(0)
    x = rng.integers(info.min, info.max + 1, 500).astype(dtype.numpy)
    y = rng.integers(info.min, info.max + 1, 500).astype(dtype.numpy)
    x[:2], y[:2] = [200 if info.min == 0 else 100, info.max], [100, 1]
    got = _launch(rt, _binary(op, dtype, then_shr=1), dtype, x, y)
    if got is None:
        return
    want = {"add": np.add, "sub": np.subtract, "mul": np.multiply}[op](x, y) >> 1
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def _scatter(op: str, dtype: DType) -> KernelBuilder:
    """atomic_<op>(out, index[i], x[i]) for every i."""
    b = KernelBuilder(f"scatter_{op}_{dtype}", cube_dim=64)
    x, index = b.tensor("x", dtype), b.tensor("index", dtype_named("i32"))
    out = b.tensor("out", dtype, write=True)
    i = b.ABSOLUTE_POS
    with b.if_(i < x.len):
        getattr(b, f"atomic_{op}")(out, index[i], x[i])
    return b


@pytest.mark.parametrize("name", ["i8", "u8"])
@pytest.mark.parametrize("op", ["add", "min", "max"])
def test_8bit_atomics(rt: bc.Runtime, op: str, name: str) -> None:
    """Atomic add (wrapping), min and max on 8-bit elements, neighbours in one 32-bit word
    updated concurrently: as numpy's add.at / minimum.at / maximum.at."""
    dtype = dtype_named(name)
    info = np.iinfo(dtype.numpy)
    rng = np.random.default_rng(1)
    x = rng.integers(info.min, info.max + 1, 2000).astype(dtype.numpy)
    index = rng.integers(0, 7, 2000).astype(np.int32)
    start = rng.integers(info.min, info.max + 1, 7).astype(dtype.numpy)
    if name not in rt.properties.dtypes:
        with pytest.raises(LaunchError, match="does not support"):
            rt.upload(x)
        return
    out = rt.upload(start)
    _scatter(op, dtype).kernel().launch(rt, -(-x.size // 64), 64, rt.upload(x),
                                        rt.upload(index), out)
    want = start.copy()
    {"add": np.add, "min": np.minimum, "max": np.maximum}[op].at(want, index, x)
    got = out.numpy()
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_cuda_source_compiles(tmp_path: Path) -> None:
    """The shifts, casts, 8-bit arithmetic and atomics above, one CUDA translation unit each,
    compiled by nvcc (the cuda runtime compiles the same text with NVRTC)."""
    kernels = [_binary(op, dtype_named(n), 1) for op in ("shl", "shr") for n in INTS]
    kernels += [_binary("add", dtype_named(n)) for n in ("i8", "u8")]
    kernels += [_clamp(dtype_named(n)) for n in ("i8", "u8")]
    kernels += [_cast(src, dtype_named(n)) for src in (f32, f16) for n in ("i64", "u8")]
    kernels += [_scatter(op, dtype_named(n)) for op in ("add", "min", "max") for n in ("i8",
                                                                                      "u8")]
    for b in kernels:
        ir = b.build()
        src = generate(ir, "cuda")
        path = tmp_path / f"{ir.name}.cu"
        path.write_text(src)
        proc = subprocess.run(["nvcc", "-c", "-arch=sm_90", "-std=c++17", "-o",
                               str(path.with_suffix(".o")), str(path)], capture_output=True,
                              text=True)
        assert proc.returncode == 0, f"{ir.name}:\n{proc.stderr}\n{src}"
