"""Bad tensor input that used to escape as numpy / Python errors (MemoryError, ValueError,
TypeError, AttributeError) or pass silently: each raises a burn.errors type naming the op."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import burn
import burn.functional as F
from burn.errors import (
    AllocationError,
    BurnError,
    BurnIndexError,
    DeviceError,
    DTypeError,
    ValueRangeError,
)

NAN, INF = float("nan"), float("inf")
x4 = burn.ones(1, 1, 4, 4)
w2 = burn.ones(1, 1, 2, 2)

CASES: list[tuple[str, Callable[[], object], type[BurnError], MemoryError | type, str]] = [
    ("zeros 10**12", lambda: burn.zeros(10**12), AllocationError, MemoryError, "zeros"),
    ("zeros 2**63", lambda: burn.zeros(2**63), AllocationError, MemoryError, "zeros"),
    ("ones 2d huge", lambda: burn.ones(2**31, 2**31, dtype=burn.int8), AllocationError,
     MemoryError, "ones"),
    ("full huge", lambda: burn.full((10**6, 10**7), 1.0), AllocationError, MemoryError, "full"),
    ("empty huge", lambda: burn.empty(10**13), AllocationError, MemoryError, "empty"),
    ("randn huge", lambda: burn.randn(10**12), AllocationError, MemoryError, "randn"),
    ("randint huge", lambda: burn.randint(0, 3, (10**12,)), AllocationError, MemoryError,
     "randint"),
    ("eye huge", lambda: burn.eye(10**7), AllocationError, MemoryError, "eye"),
    ("arange huge", lambda: burn.arange(0, 10**13), AllocationError, MemoryError, "arange"),
    ("arange nan", lambda: burn.arange(0, NAN), ValueRangeError, ValueError, "arange"),
    ("arange inf", lambda: burn.arange(INF), ValueRangeError, ValueError, "arange"),
    ("arange nan step", lambda: burn.arange(0.0, 1.0, NAN), ValueRangeError, ValueError,
     "arange"),
    ("arange str", lambda: burn.arange("3"), DTypeError, TypeError, "arange"),  # type: ignore
    ("randint nan", lambda: burn.randint(0, NAN, (2,)), ValueRangeError, ValueError,  # type: ignore
     "randint"),
    ("randint inf", lambda: burn.randint(-INF, 3, (2,)), ValueRangeError, ValueError,  # type: ignore
     "randint"),
    ("randint fraction", lambda: burn.randint(0, 2.5, (2,)), DTypeError, TypeError,  # type: ignore
     "randint"),
    ("one_hot nan", lambda: burn.tensor([0, 1]).one_hot(NAN), DTypeError, TypeError,  # type: ignore
     "one_hot"),
    ("one_hot float", lambda: burn.one_hot(burn.tensor([0, 1]), 2.0), DTypeError,  # type: ignore
     TypeError, "one_hot"),
    ("conv2d stride 1.5", lambda: F.conv2d(x4, w2, stride=1.5), DTypeError,  # type: ignore
     TypeError, "conv2d"),
    ("conv2d padding nan", lambda: F.conv2d(x4, w2, padding=NAN), DTypeError,  # type: ignore
     TypeError, "conv2d"),
    ("conv2d stride bool", lambda: F.conv2d(x4, w2, stride=True), DTypeError, TypeError,
     "conv2d"),
    ("conv2d dilation float tuple", lambda: F.conv2d(x4, w2, dilation=(1, 1.0)),  # type: ignore
     ValueRangeError, ValueError, "conv2d"),
    ("zeros device 42", lambda: burn.zeros(2, device=42), DeviceError, RuntimeError,  # type: ignore
     "zeros"),
    ("tensor device 42", lambda: burn.tensor([1.0], device=42), DeviceError,  # type: ignore
     RuntimeError, "tensor"),
    ("rand device list", lambda: burn.rand(2, device=["numpy"]), DeviceError,  # type: ignore
     RuntimeError, "rand"),
    ("embedding -1", lambda: F.embedding(burn.ones(3, 2), burn.tensor([[0, -1]])),
     BurnIndexError, IndexError, "embedding"),
    ("embedding past end", lambda: F.embedding(burn.ones(3, 2), burn.tensor([3])),
     BurnIndexError, IndexError, "embedding"),
    ("normal std nan", lambda: burn.normal((2,), std=NAN), ValueRangeError, ValueError,
     "normal"),
    ("normal mean inf", lambda: burn.normal((2,), mean=INF), ValueRangeError, ValueError,
     "normal"),
    ("uniform low nan", lambda: burn.uniform((2,), low=NAN), ValueRangeError, ValueError,
     "uniform"),
    ("uniform high inf", lambda: burn.uniform((2,), high=INF), ValueRangeError, ValueError,
     "uniform"),
    ("bernoulli nan probs", lambda: burn.bernoulli(burn.tensor([NAN, 0.5])), ValueRangeError,
     ValueError, "bernoulli"),
    ("bernoulli probs > 1", lambda: burn.bernoulli(burn.tensor([0.2, 1.5])), ValueRangeError,
     ValueError, "bernoulli"),
    ("bernoulli p nan", lambda: burn.bernoulli(3, NAN), ValueRangeError, ValueError,
     "bernoulli"),
    ("cat of a tensor", lambda: burn.cat(burn.ones(2, 2), 0), DTypeError,  # type: ignore
     TypeError, "cat"),
    ("stack of a tensor", lambda: burn.stack(burn.ones(2, 2)), DTypeError,  # type: ignore
     TypeError, "stack"),
    ("cat of ints", lambda: burn.cat([1, 2]), DTypeError, TypeError, "cat"),  # type: ignore
    ("sum dim float", lambda: burn.ones(2, 3).sum(1.0), DTypeError, TypeError,  # type: ignore
     "sum"),
    ("mean dim bool", lambda: burn.ones(2, 3).mean(True), DTypeError, TypeError, "mean"),
    ("sum dim past rank", lambda: burn.ones(2, 3).sum(2), BurnIndexError, IndexError, "sum"),
    ("sum dim -3", lambda: burn.ones(2, 3).sum(-3), BurnIndexError, IndexError,
     "sum"),
]


@pytest.mark.parametrize("name,fn,error,builtin,op", CASES, ids=[c[0] for c in CASES])
def test_bad_input_raises_typed_error(name: str, fn: Callable[[], object],
                                      error: type[BurnError], builtin: type, op: str) -> None:
    with pytest.raises(error) as info:
        fn()
    assert isinstance(info.value, builtin), "keeps the matching builtin base class"
    assert str(info.value).startswith(f"{op}:"), str(info.value)


def test_allocation_error_names_shape_dtype_and_bytes() -> None:
    with pytest.raises(AllocationError) as info:
        burn.zeros(10**12, dtype=burn.float64)
    msg = str(info.value)
    assert "(1000000000000,)" in msg and "float64" in msg and "8000000000000" in msg


def test_valid_edges_still_work() -> None:
    """The checks refuse only bad input: tiny, empty and integral-float arguments pass."""
    assert burn.zeros(0).shape == (0,)
    assert burn.arange(0.0, 1.0, 0.5).shape == (2,)
    assert burn.randint(0, 3.0, (2,)).dtype == burn.int64  # type: ignore[arg-type]
    assert burn.bernoulli(burn.tensor([0.0, 1.0])).to_numpy().tolist() == [0.0, 1.0]
    assert F.embedding(burn.ones(3, 2), burn.tensor([2, 0])).shape == (2, 2)
    assert burn.cat((burn.ones(1), burn.zeros(2))).shape == (3,)
