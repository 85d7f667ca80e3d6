"""Bad input raises typed errors (naming the kernel and line), never crashes."""

from __future__ import annotations

import numpy as np
import pytest

import burn_cube as bc
from burn_cube import ABSOLUTE_POS, Tensor, bf16, f16, f32, i32
from burn_cube.errors import CompileError, KernelError, LaunchError, MissingCompilerError


@bc.kernel
def scale(x: Tensor[f32], out: Tensor[f32], k: f32):
    i = ABSOLUTE_POS
    if i < len(x):
        out[i] = x[i] * k


def test_wrong_tensor_dtype(rt: bc.Runtime) -> None:
    with pytest.raises(LaunchError, match=r"scale.*`x` must be f32, got i32"):
        scale.launch(rt, 1, 32, np.zeros(4, np.int32), np.zeros(4, np.float32), 1.0)


def test_wrong_argument_kinds(rt: bc.Runtime) -> None:
    x = np.zeros(4, np.float32)
    with pytest.raises(LaunchError, match="must be a tensor"):
        scale.launch(rt, 1, 32, 3.0, x, 1.0)
    with pytest.raises(LaunchError, match="must be a f32 scalar"):
        scale.launch(rt, 1, 32, x, x, x)
    with pytest.raises(LaunchError, match="bad arguments"):
        scale.launch(rt, 1, 32, x, x)


def test_out_of_range_launch_sizes(rt: bc.Runtime) -> None:
    x = np.zeros(4, np.float32)
    for count, dim, what in [(0, 32, "positive"), (1, 100_000, "at most"),
                             ((1, 2, 3, 4), 32, "1-3 ints"), (2**40, 1, "limit")]:
        with pytest.raises(LaunchError, match=what):
            scale.launch(rt, count, dim, x, x, 1.0)


@bc.kernel
def unguarded(x: Tensor[f32], out: Tensor[f32]):
    out[ABSOLUTE_POS] = x[ABSOLUTE_POS] + 1.0


def test_out_of_bounds_is_an_error_on_cpu() -> None:
    x = np.zeros(10, np.float32)
    with pytest.raises(LaunchError, match="out-of-bounds"):
        unguarded.launch("cpu", 1000, 64, x, np.zeros(10, np.float32))


def test_scalar_overflow() -> None:
    @bc.kernel
    def k(out: Tensor[i32], v: i32):
        out[0] = v

    with pytest.raises(LaunchError, match="does not fit i32"):
        k.launch("cpu", 1, 1, np.zeros(1, np.int32), 2**40)


@pytest.mark.filterwarnings("error")
def test_float_scalars_past_the_dtype_round_to_infinity_quietly() -> None:
    """A float scalar past a float dtype's largest finite value rounds to an infinity of its
    sign (as numpy's cast), NaN stays NaN; no overflow warning from the conversion."""
    @bc.kernel
    def k(out: Tensor[f16], v: f16):
        out[ABSOLUTE_POS] = v

    @bc.kernel
    def k_bf16(out: Tensor[bf16], v: bf16):
        out[ABSOLUTE_POS] = v

    for value, expected in ((70000.0, np.inf), (-1e39, -np.inf), (65504.0, 65504.0),
                            (float("nan"), np.nan), (10**6, np.inf)):
        out = np.zeros(1, np.float16)
        k.launch("cpu", 1, 1, out, value)
        assert out.dtype == np.float16
        np.testing.assert_array_equal(out, np.array([expected], np.float16))
    for value, expected in ((1e39, np.inf), (-1e39, -np.inf), (3e38, 3e38), (70000.0, 70000.0)):
        out = np.zeros(1, bf16.numpy)
        k_bf16.launch("cpu", 1, 1, out, value)
        assert out.dtype == bf16.numpy
        np.testing.assert_array_equal(out.astype(np.float32),
                                      np.array([expected], bf16.numpy).astype(np.float32))


def _unsupported_cases():
    def tuple_unpack(out: Tensor[f32]):
        a, _b = 1.0, 2.0
        out[0] = a

    def calls_python(out: Tensor[f32]):
        out[0] = np.sum(out)

    def float_to_int(out: Tensor[f32]):
        acc = 0
        acc = out[0]
        out[0] = f32(acc)

    def returns_value(out: Tensor[f32]):
        return 1

    def with_stmt(out: Tensor[f32]):
        with open("x"):
            pass

    return [(tuple_unpack, "a, _b = 1.0, 2.0"), (calls_python, "np.sum(out)"),
            (float_to_int, "acc = out[0]"), (returns_value, "return 1"),
            (with_stmt, 'with open("x"):')]


@pytest.mark.parametrize(("fn", "line"), _unsupported_cases())
def test_unsupported_constructs_name_the_line(fn, line: str) -> None:
    kern = bc.kernel(fn)
    with pytest.raises(CompileError) as info:
        kern.launch("cpu", 1, 1, np.zeros(1, np.float32))
    message = str(info.value)
    assert fn.__name__ in message and line in message and "test_errors.py:" in message


def test_missing_compiler(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CC", "/nonexistent/cc")

    @bc.kernel
    def fresh(out: Tensor[f32]):
        out[0] = 42.0

    with pytest.raises(MissingCompilerError, match="/nonexistent/cc") as info:
        fresh.launch("cpu", 1, 1, np.zeros(1, np.float32))
    assert isinstance(info.value, KernelError)


def test_calling_a_kernel_directly() -> None:
    with pytest.raises(LaunchError, match="launch"):
        scale(np.zeros(1), np.zeros(1), 1.0)
    with pytest.raises(KernelError, match="only usable inside"):
        bc.exp(1.0)
