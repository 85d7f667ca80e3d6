"""Ops whose Burn meaning differs from PyTorch's: the examples of Burn's definitions, and the
PyTorch composition that gives Burn's result, on every relevant dtype."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as tF

import burn
import burn.functional as F
from burn.errors import BurnIndexError, DTypeError, ShapeError, ValueRangeError

from .reference import (
    FLOATS,
    GRAD_DTYPES,
    INTS,
    T,
    check_backward,
    check_forward,
    op_param,
    rand,
)

ALL = (*FLOATS, *INTS, "bool")


@pytest.mark.parametrize("name,dtype", [op_param("roll", d) for d in ALL])
def test_roll_examples(name: str, dtype: str, device: burn.Device) -> None:
    x = T(np.arange(6).reshape(2, 3) % 2 if dtype == "bool" else np.arange(6).reshape(2, 3),
          dtype)
    # Burn: [[0,1,2],[3,4,5]].roll([1,-1],[0,1]) is [[5,3,4],[2,0,1]]; roll(-1, 1) [[2,0,1],..]
    check_forward(lambda a: a.roll([1, -1], [0, 1]), lambda a: a[[1, 0]][:, [2, 0, 1]], [x],
                  device)
    check_forward(lambda a: a.roll(-1, 1), lambda a: a[:, [2, 0, 1]], [x], device)


@pytest.mark.parametrize("name,dtype", [op_param("repeat", d) for d in ALL])
def test_repeat_counts_from_dim0(name: str, dtype: str, device: burn.Device,
                                 rng: np.random.Generator) -> None:
    x = T(rand(rng, (1, 3), dtype), dtype, "strided")
    check_forward(lambda a: a.repeat(4, 1, 1), lambda a: a.expand(4, 3), [x], device)
    with pytest.raises(ShapeError, match="repeat"):
        burn.zeros(1, 3, device=device).repeat(1, 1, 2)


@pytest.mark.parametrize("name,dtype", [op_param("reshape", d) for d in ALL])
def test_reshape_zero_keeps(name: str, dtype: str, device: burn.Device,
                            rng: np.random.Generator) -> None:
    x = T(rand(rng, (2, 6), dtype), dtype, "transposed")
    check_forward(lambda a: a.reshape(0, 2, -1), lambda a: a.reshape(2, 2, 3), [x], device)
    check_forward(lambda a: a.reshape(0, 0, 1), lambda a: a.reshape(2, 6, 1), [x], device)
    with pytest.raises(ShapeError, match="reshape"):  # past the input's rank 0 is a zero size
        burn.zeros(2, 6, device=device).reshape(0, 6, 0)


@pytest.mark.parametrize("name,dtype", [op_param("one_hot", d) for d in FLOATS])
def test_one_hot_float(name: str, dtype: str, device: burn.Device,
                       rng: np.random.Generator) -> None:
    x = T(rng.integers(0, 4, size=(2, 3)), dtype, "transposed")
    check_forward(lambda a: a.one_hot(4), lambda a: tF.one_hot(a.long(), 4).to(a.dtype), [x],
                  device)
    check_forward(lambda a: a.one_hot(), lambda a: tF.one_hot(a.long()).to(a.dtype), [x],
                  device)


@pytest.mark.parametrize("name,dtype", [op_param("one_hot_fill", d)
                                        for d in ("float32", "bfloat16", "int64", "int8")])
def test_one_hot_fill(name: str, dtype: str, device: burn.Device,
                      rng: np.random.Generator) -> None:
    x = T(rng.integers(-3, 3, size=(2, 3)), dtype, "transposed")

    def ref(a: torch.Tensor, axis: int) -> torch.Tensor:
        hot = tF.one_hot(a.long() % 3, 3).movedim(-1, axis)
        return torch.where(hot.bool(), 5.0, -1.0).to(a.dtype)

    for axis in (-1, 0, 1):
        check_forward(lambda a, ax=axis: a.one_hot_fill(3, 5.0, -1.0, ax),
                      lambda a, ax=axis: ref(a, ax), [x], device)
    check_forward(lambda a: a.one_hot_fill(3), lambda a: ref(a, -1).clamp(0, 1),
                  [T(np.zeros((0, 2)), dtype)], device)
    with pytest.raises(BurnIndexError, match="one_hot_fill"):  # at once, or at the next sync
        burn.tensor([3], device=device).one_hot_fill(3)
        burn.sync(device)
    with pytest.raises(DTypeError, match="one_hot_fill"):
        burn.tensor([True], device=device).one_hot_fill(3)
    with pytest.raises(ValueRangeError, match="num_classes"):
        burn.tensor([0], device=device).one_hot_fill(-1)


@pytest.mark.parametrize("name,dtype", [op_param(n, d) for n in ("mean", "mean_dim")
                                        for d in INTS])
def test_int_mean(name: str, dtype: str, device: burn.Device, rng: np.random.Generator) -> None:
    x = T(rand(rng, (3, 5), dtype), dtype, "transposed")

    def ref(a: torch.Tensor, dim: int | None, keepdim: bool = False) -> torch.Tensor:
        total = a.sum() if dim is None else a.sum(dim, keepdim=keepdim)
        n = a.numel() if dim is None else a.shape[dim]
        return torch.div(total, n, rounding_mode="floor").to(a.dtype)

    if name == "mean":
        check_forward(lambda a: a.mean(), lambda a: ref(a, None), [x], device)
        check_forward(lambda a: a.mean(1), lambda a: ref(a, 1), [x], device)
        check_forward(lambda a: a.mean(0, keepdim=True), lambda a: ref(a, 0, True), [x], device)
        check_forward(lambda a: a.mean(), lambda a: a, [T(np.array(7), dtype)], device)
    else:
        check_forward(lambda a: a.mean_dim(1), lambda a: ref(a, 1, True), [x], device)
    with pytest.raises(ValueRangeError, match="mean"):
        burn.zeros(3, 0, dtype=burn.DType(dtype), device=device).mean(1)


@pytest.mark.op("select_assign")
def test_bool_select_assign_or(device: burn.Device, rng: np.random.Generator) -> None:
    x, v = T(rand(rng, (4, 3), "bool"), "bool", "transposed"), T(rand(rng, (5, 3), "bool"), "bool")
    idx = T(np.array([0, 2, 2, -1, 0]), "int64")
    check_forward(lambda a, i, b: a.select_assign(0, i, b),
                  lambda a, i, b: a.long().index_add(0, i % 4, b.long()) > 0, [x, idx, v], device)


@pytest.mark.op("scatter")
def test_bool_scatter_add_or(device: burn.Device, rng: np.random.Generator) -> None:
    x, v = T(rand(rng, (3, 4), "bool"), "bool", "strided"), T(rand(rng, (2, 4), "bool"), "bool")
    idx = T(rng.integers(0, 3, size=(2, 4)), "int64")
    check_forward(lambda a, i, b: a.scatter(0, i, b, "add"),
                  lambda a, i, b: a.long().scatter_add(0, i, b.long()) > 0, [x, idx, v], device)


@pytest.mark.op("nonzero")
def test_nonzero_none(device: burn.Device) -> None:
    for shape in ((2, 3), (0,), ()):
        out = burn.zeros(*shape, device=device).nonzero()
        assert out == [], out
    check_forward(lambda a: a.nonzero(), lambda a: list(torch.nonzero(a, as_tuple=True)),
                  [T(np.eye(3), "bool")], device)
    assert burn.tensor(True, device=device).nonzero() == []  # 0-d: no dims, no coordinates


@pytest.mark.op("getitem")
def test_all_false_mask_index(device: burn.Device, rng: np.random.Generator) -> None:
    """A mask without a true element selects nothing (nonzero's [] does not leak into it)."""
    x = T(rand(rng, (2, 3), "float32"), "float32", "transposed")
    none = T(np.zeros((2, 3)), "bool")
    check_forward(lambda a, m: a[m], lambda a, m: a[m], [x, none], device)
    check_forward(lambda a, m: a[1:, m[0]], lambda a, m: a[1:, m[0]], [x, none], device)


@pytest.mark.op("split")
def test_split_empty_and_zero_sizes(device: burn.Device, rng: np.random.Generator) -> None:
    check_forward(lambda a: a.split(2), lambda a: [], [T(np.zeros((0, 3)), "float32")], device)
    check_forward(lambda a: a.split([0, 0], 0), lambda a: [], [T(np.zeros((0, 3)), "int64")],
                  device)
    small = "int8" if device.backend.supports(burn.int8) else "int32"
    check_forward(lambda a: a.split([0, 1, 0, 3], dim=1), lambda a: a.split([1, 3], dim=1),
                  [T(rand(rng, (2, 4), small), small, "transposed")], device)


def _conv_transpose1d_ref(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor, stride: int,
                          padding: int, output_padding: int) -> torch.Tensor:
    """The full transposed convolution cropped by `padding`, extended by `output_padding`
    positions that only the bias reaches past the full output."""
    full = torch.conv_transpose1d(x, w, stride=stride)
    size = (x.shape[-1] - 1) * stride - 2 * padding + w.shape[-1] + output_padding
    full = tF.pad(full, (0, max(0, padding + size - full.shape[-1])))
    return full[..., padding:padding + size] + b[:, None]


@pytest.mark.parametrize("name,dtype", [op_param("conv_transpose1d", d) for d in GRAD_DTYPES])
def test_conv_transpose1d_large_output_padding(name: str, dtype: str, device: burn.Device,
                                               grad_device: burn.Device,
                                               rng: np.random.Generator) -> None:
    x, w, b = (T(rand(rng, s, dtype), dtype) for s in ((2, 3, 5), (3, 4, 3), (4,)))
    for stride, padding, out_pad in ((1, 0, 1), (1, 1, 2), (2, 1, 3)):
        def fb(a: burn.Tensor, k: burn.Tensor, c: burn.Tensor, s: int = stride,
               p: int = padding, o: int = out_pad) -> burn.Tensor:
            return F.conv_transpose1d(a, k, c, stride=s, padding=p, output_padding=o)

        def ft(a: torch.Tensor, k: torch.Tensor, c: torch.Tensor, s: int = stride,
               p: int = padding, o: int = out_pad) -> torch.Tensor:
            return _conv_transpose1d_ref(a, k, c, s, p, o)

        check_forward(fb, ft, [x, w, b], device)
        check_backward(fb, ft, [x, w, b], grad_device, rng)
