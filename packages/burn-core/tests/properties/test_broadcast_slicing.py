"""Property tests: broadcasting of binary ops and basic slicing follow NumPy's rules.

Hypothesis draws shapes and indices; numpy is the reference. Impossible broadcasts must raise
`burn.errors.ShapeError` (which is also a ValueError), out-of-range indices an IndexError.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import burn
from burn.errors import ShapeError

SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])

Shape = tuple[int, ...]
BINARY: list[tuple[str, Callable[[Any, Any], Any]]] = [
    ("add", operator.add), ("sub", operator.sub), ("mul", operator.mul),
    ("greater", operator.gt), ("equal", operator.eq),
]


def _data(shape: Shape, offset: int = 0) -> np.ndarray:
    """Distinct, exactly representable float32 values."""
    values = (np.arange(int(np.prod(shape)), dtype=np.float32) + offset) * np.float32(0.5)
    return values.reshape(shape)


def _tensor(a: np.ndarray) -> burn.Tensor:
    return burn.tensor(a, device=burn.default_device())


@SETTINGS
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=4,
                                                 min_side=0, max_side=4),
       op=st.sampled_from(BINARY))
def test_binary_ops_broadcast_like_numpy(shapes: Any, op: tuple[str, Callable[..., Any]]) -> None:
    sa, sb = shapes.input_shapes
    a, b = _data(sa), _data(sb, offset=1)
    name, f = op
    want = f(a, b)
    got = f(_tensor(a), _tensor(b))
    assert tuple(got.shape) == shapes.result_shape == want.shape, (
        f"{name}: {sa} with {sb} -> {tuple(got.shape)}, numpy {want.shape}")
    np.testing.assert_array_equal(got.to_numpy(), want)


@st.composite
def incompatible_shapes(draw: st.DrawFn) -> tuple[Shape, Shape]:
    """Two shapes with one aligned dim whose sizes differ and are both > 1."""
    a = list(draw(hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=4)))
    b = list(draw(hnp.broadcastable_shapes(tuple(a), min_dims=1, max_dims=len(a), min_side=1,
                                           max_side=4)))
    i = draw(st.integers(1, len(b)))  # counted from the right, exists in both
    size_a = draw(st.integers(2, 5))
    size_b = draw(st.integers(2, 5).filter(lambda s: s != size_a))
    a[-i], b[-i] = size_a, size_b
    if draw(st.booleans()):
        a, b = b, a
    return tuple(a), tuple(b)


@SETTINGS
@given(shapes=incompatible_shapes(), op=st.sampled_from(BINARY))
def test_impossible_broadcast_raises_shape_error(shapes: tuple[Shape, Shape],
                                                 op: tuple[str, Callable[..., Any]]) -> None:
    sa, sb = shapes
    with pytest.raises(ValueError):
        np.broadcast_shapes(sa, sb)  # the premise: numpy refuses too
    name, f = op
    with pytest.raises(ShapeError) as info:
        f(_tensor(_data(sa)), _tensor(_data(sb)))
    assert isinstance(info.value, ValueError)
    message = str(info.value)
    assert str(sa) in message or str(list(sa)) in message or str(sb) in message, (
        f"{name}: the ShapeError message does not name the shapes: {message}")


@SETTINGS
@given(shapes=incompatible_shapes())
def test_impossible_broadcast_where_and_expand(shapes: tuple[Shape, Shape]) -> None:
    sa, sb = shapes
    with pytest.raises(ShapeError):
        burn.where(_tensor(_data(sa) > 1), _tensor(_data(sa)), _tensor(_data(sb)))
    src, dst = (sa, sb) if len(sb) >= len(sa) else (sb, sa)
    with pytest.raises(ShapeError):
        _tensor(_data(src)).expand(*dst)


@st.composite
def array_and_index(draw: st.DrawFn) -> tuple[Shape, Any]:
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=5))
    index = draw(hnp.basic_indices(shape, min_dims=0, allow_newaxis=True, allow_ellipsis=True))
    return shape, index


@SETTINGS
@given(case=array_and_index(), dtype=st.sampled_from(["float32", "int64", "bool"]))
def test_getitem_like_numpy(case: tuple[Shape, Any], dtype: str) -> None:
    """Ints, slices with any steps (negative too), Ellipsis and None, as NumPy."""
    shape, index = case
    a = _data(shape)
    a = {"float32": a, "int64": a.astype(np.int64), "bool": (a.astype(np.int64) % 3) == 0}[dtype]
    want = a[index]
    got = _tensor(a)[index]
    assert tuple(got.shape) == want.shape, f"{shape}[{index!r}] -> {tuple(got.shape)}"
    assert got.to_numpy().dtype == a.dtype
    np.testing.assert_array_equal(got.to_numpy(), want)


@SETTINGS
@given(case=array_and_index())
def test_getitem_of_a_non_contiguous_view(case: tuple[Shape, Any]) -> None:
    """Slicing a permuted view indexes the view, not the underlying buffer."""
    shape, index = case
    if len(shape) < 2:
        return
    base = _data(shape[::-1])
    view = base.transpose(*range(len(shape) - 1, -1, -1))
    got = _tensor(base).permute(*range(len(shape) - 1, -1, -1))[index]
    np.testing.assert_array_equal(got.to_numpy(), view[index])


@SETTINGS
@given(case=array_and_index())
def test_setitem_like_numpy(case: tuple[Shape, Any]) -> None:
    shape, index = case
    a = _data(shape)
    value = -_data(a[index].shape, offset=3)
    want = a.copy()
    want[index] = value
    t = _tensor(a)
    t[index] = _tensor(value)
    assert tuple(t.shape) == shape
    np.testing.assert_array_equal(t.to_numpy(), want)


@SETTINGS
@given(shape=hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4),
       data=st.data())
def test_out_of_range_int_index_raises(shape: Shape, data: st.DataObject) -> None:
    dim = data.draw(st.integers(0, len(shape) - 1))
    bad = data.draw(st.sampled_from([shape[dim], shape[dim] + 2, -shape[dim] - 1]))
    index = (slice(None),) * dim + (bad,)
    with pytest.raises(IndexError):
        _data(shape)[index]
    with pytest.raises(IndexError):
        _tensor(_data(shape))[index]
