"""Layout ops (reshape ... triu, cat, stack) against torch on float / int / bool tensors."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as tF

import burn
from burn.errors import ShapeError

from .reference import GRAD_DTYPES, T, check_backward, check_forward, op_param, rand


@dataclass
class V:
    """One variant of a layout op: input shapes, burn call, torch call, kinds it accepts."""

    shapes: tuple[tuple[int, ...], ...]
    fb: Callable[..., Any]
    ft: Callable[..., Any]
    kinds: str = "fib"  # f(loat), i(nt), b(ool)
    grad: bool = True   # part of the backward check


def _kind(dtype: str) -> str:
    return "b" if dtype == "bool" else ("i" if "int" in dtype else "f")


OPS: dict[str, list[V]] = {
    "reshape": [
        V(((2, 3, 4),), lambda x: x.reshape(4, 6), lambda x: x.reshape(4, 6)),
        V(((2, 3, 4),), lambda x: x.reshape((-1, 3)), lambda x: x.reshape(-1, 3)),
        V(((2, 3),), lambda x: x.reshape(6), lambda x: x.reshape(6)),
        V(((0, 3),), lambda x: x.reshape(3, 0), lambda x: x.reshape(3, 0), grad=False),
        V(((2, 3, 0),), lambda x: x.flatten(1), lambda x: x.flatten(1), grad=False),
        V(((2, 6),), lambda x: x.reshape(0, 2, -1), lambda x: x.reshape(2, 2, 3)),  # 0 keeps
        V(((2, 3, 4),), lambda x: x.reshape((0, 0, 2, 2)), lambda x: x.reshape(2, 3, 2, 2)),
        V(((),), lambda x: x.reshape(1, 1), lambda x: x.reshape(1, 1)),
        V(((1,),), lambda x: x.reshape(()), lambda x: x.reshape(())),
        V(((2, 3, 4),), lambda x: x.mT.contiguous(), lambda x: x.mT.contiguous()),
        V(((2, 3, 4),), lambda x: x.contiguous(), lambda x: x.contiguous()),
        V(((),), lambda x: x.contiguous(), lambda x: x.contiguous()),
    ],
    "swap_dims": [
        V(((2, 3, 4),), lambda x: x.swap_dims(0, 2), lambda x: x.transpose(0, 2)),
        V(((2, 3, 4),), lambda x: x.swap_dims(-1, 1), lambda x: x.transpose(-1, 1)),
        V(((2, 3, 4),), lambda x: x.mT, lambda x: x.mT),
        V(((2, 3, 4),), lambda x: x.mT.clone(), lambda x: x.mT.clone()),
    ],
    "transpose": [
        V(((2, 3, 4),), lambda x: x.transpose(1, 2), lambda x: x.transpose(1, 2)),
        V(((3, 2),), lambda x: x.transpose(0, -1), lambda x: x.transpose(0, -1)),
    ],
    "permute": [
        V(((2, 3, 4),), lambda x: x.permute(2, 0, 1), lambda x: x.permute(2, 0, 1)),
        V(((2, 3, 4),), lambda x: x.permute((1, 2, 0)), lambda x: x.permute(1, 2, 0)),
        V(((2, 3, 4),), lambda x: x.permute(-1, 0, 1), lambda x: x.permute(-1, 0, 1)),
        V(((2, 3, 4),), lambda x: x.T, lambda x: x.permute(2, 1, 0)),  # torch warns above 2-d
        V(((3, 2),), lambda x: x.T, lambda x: x.T),
        V(((5,),), lambda x: x.T, lambda x: x),  # torch warns for 1-d too
    ],
    "flip": [
        V(((2, 3, 4),), lambda x: x.flip((0, 2)), lambda x: x.flip((0, 2))),
        V(((3, 4),), lambda x: x.flip([-1]), lambda x: x.flip([-1])),
    ],
    "expand": [
        V(((3, 1),), lambda x: x.expand(2, 3, 4), lambda x: x.expand(2, 3, 4)),
        V(((3, 1),), lambda x: x.expand((-1, 5)), lambda x: x.expand(-1, 5)),
        V(((),), lambda x: x.expand(2, 3), lambda x: x.expand(2, 3)),
    ],
    "repeat_dim": [
        V(((2, 3),), lambda x: x.repeat_dim(1, 3), lambda x: x.repeat(1, 3)),
        V(((2, 1, 3),), lambda x: x.repeat_dim(0, 2), lambda x: x.repeat(2, 1, 1)),
    ],
    "repeat": [
        V(((2, 3),), lambda x: x.repeat(2, 1), lambda x: x.repeat(2, 1)),
        V(((1, 3),), lambda x: x.repeat(4, 1, 1), lambda x: x.repeat(4, 1)),  # Burn: extra 1s
        V(((2, 3, 2),), lambda x: x.repeat((2, 3)), lambda x: x.repeat(2, 3, 1)),  # from dim 0
        V(((2, 3),), lambda x: x.repeat(1, 0), lambda x: x.repeat(1, 0), grad=False),
    ],
    "unfold": [
        V(((5, 4),), lambda x: x.unfold(0, 2, 1), lambda x: x.unfold(0, 2, 1)),
        V(((2, 7),), lambda x: x.unfold(1, 3, 2), lambda x: x.unfold(1, 3, 2)),
    ],
    "squeeze": [
        V(((1, 3, 1, 2),), lambda x: x.squeeze(), lambda x: x.squeeze()),
        V(((1, 3, 1, 2),), lambda x: x.squeeze(2), lambda x: x.squeeze(2)),
        V(((1, 3, 1, 2),), lambda x: x.squeeze(-4), lambda x: x.squeeze(-4)),
    ],
    "unsqueeze": [
        V(((2, 3),), lambda x: x.unsqueeze(0), lambda x: x.unsqueeze(0)),
        V(((2, 3),), lambda x: x.unsqueeze(-1), lambda x: x.unsqueeze(-1)),
        V(((),), lambda x: x.unsqueeze(0), lambda x: x.unsqueeze(0)),
    ],
    "flatten": [
        V(((2, 3, 4),), lambda x: x.flatten(), lambda x: x.flatten()),
        V(((2, 3, 4),), lambda x: x.flatten(1), lambda x: x.flatten(1)),
        V(((2, 3, 4, 2),), lambda x: x.flatten(0, 1), lambda x: x.flatten(0, 1)),
        V(((),), lambda x: x.flatten(), lambda x: x.flatten()),
    ],
    "narrow": [
        V(((3, 5),), lambda x: x.narrow(1, 1, 3), lambda x: x.narrow(1, 1, 3)),
        V(((4, 2),), lambda x: x.narrow(-2, 0, 2), lambda x: x.narrow(-2, 0, 2)),
    ],
    "chunk": [
        V(((6, 4),), lambda x: x.chunk(3), lambda x: x.chunk(3)),
        V(((2, 5),), lambda x: x.chunk(3, dim=1), lambda x: x.chunk(3, dim=1)),
        V(((6, 4),), lambda x: x.chunk(2, dim=1)[1], lambda x: x.chunk(2, dim=1)[1]),
    ],
    "split": [
        V(((5, 3),), lambda x: x.split(2), lambda x: x.split(2)),
        V(((2, 4),), lambda x: x.split([1, 3], dim=1), lambda x: x.split([1, 3], dim=1)),
        V(((5, 3),), lambda x: x.split(2)[-1], lambda x: x.split(2)[-1]),
        V(((5, 3),), lambda x: x.split([2, 0, 3]), lambda x: x.split([2, 3])),  # Burn: no 0s
        V(((0, 3),), lambda x: x.split(2), lambda x: [], grad=False),  # Burn: no pieces
    ],
    "roll": [  # Burn's direction: torch's roll with the shifts negated
        V(((3, 4),), lambda x: x.roll(1, 0), lambda x: x.roll(-1, 0)),
        V(((3, 4),), lambda x: x.roll((1, -2), (0, 1)), lambda x: x.roll((-1, 2), (0, 1))),
        V(((5,),), lambda x: x.roll(7, 0), lambda x: x.roll(-7, 0)),
        V(((3, 4),), lambda x: x.roll((1, 2), (1, 1)), lambda x: x.roll(-3, 1)),
        V(((2, 3),), lambda x: x.roll(4), lambda x: x.roll(-4)),
        V(((0, 3),), lambda x: x.roll(1, 0), lambda x: x, grad=False),
    ],
    "roll_dim": [
        V(((3, 4),), lambda x: x.roll_dim(-1, 1), lambda x: x.roll(1, 1)),
        V(((3, 4),), lambda x: x.roll_dim(5, -2), lambda x: x.roll(-5, 0)),
    ],
    "movedim": [
        V(((2, 3, 4),), lambda x: x.movedim(0, -1), lambda x: x.movedim(0, -1)),
        V(((2, 3, 4, 5),), lambda x: x.movedim((0, 3), (2, 0)),
          lambda x: x.movedim((0, 3), (2, 0))),
    ],
    "iter_dim": [
        V(((3, 4),), lambda x: tuple(x.iter_dim(1)), lambda x: x.split(1, 1)),
        V(((2, 3),), lambda x: tuple(x.iter_dim(-2))[1], lambda x: x[1:2]),
    ],
    "pad": [
        V(((2, 3, 4),), lambda x: x.pad((1, 2)), lambda x: tF.pad(x, (1, 2)), kinds="fi"),
        V(((2, 3),), lambda x: x.pad((1, 0, 2, 1), value=2), lambda x: tF.pad(x, (1, 0, 2, 1),
                                                                              value=2),
          kinds="fi"),
        V(((2, 3),), lambda x: x.pad((0, 0, 1, 1), value=1.5),
          lambda x: tF.pad(x, (0, 0, 1, 1), value=1.5), kinds="f"),
        V(((2, 3, 4),), lambda x: x.pad((1, 3, 2, 0), mode="reflect"),
          lambda x: tF.pad(x, (1, 3, 2, 0), mode="reflect"), kinds="f"),
        V(((2, 3, 4),), lambda x: x.pad((2, 1, 0, 3), mode="edge"),
          lambda x: tF.pad(x, (2, 1, 0, 3), mode="replicate"), kinds="f"),
        V(((2, 3, 4),), lambda x: x.pad((1, 3, 2, 0), mode="reflect"),  # ints / bools: numpy
          lambda x: torch.from_numpy(np.pad(x.numpy(), ((0, 0), (2, 0), (1, 3)), "reflect")),
          kinds="ib"),
        V(((3, 2),), lambda x: x.pad((0, 2, 1, 1), mode="replicate"),
          lambda x: torch.from_numpy(np.pad(x.numpy(), ((1, 1), (0, 2)), "edge")), kinds="ib"),
        V(((0, 3),), lambda x: x.pad((1, 1), mode="reflect"),
          lambda x: torch.zeros(0, 5, dtype=x.dtype), grad=False),
    ],
    "tril": [
        V(((4, 5),), lambda x: x.tril(), lambda x: x.tril()),
        V(((2, 3, 3),), lambda x: x.tril(1), lambda x: x.tril(1)),
        V(((3, 4),), lambda x: x.tril(-1), lambda x: x.tril(-1)),
        V(((3, 4),), lambda x: x.tril(2**62), lambda x: x.tril(2**62)),  # past the matrix
        V(((3, 4),), lambda x: x.tril(-2**62), lambda x: x.tril(-2**62)),
        V(((2, 0, 3),), lambda x: x.tril(1), lambda x: x.tril(1)),
        V(((4, 3),), lambda x: x.swap_dims(0, 1).tril(1), lambda x: x.T.tril(1)),
    ],
    "triu": [
        V(((4, 5),), lambda x: x.triu(), lambda x: x.triu()),
        V(((2, 3, 3),), lambda x: x.triu(1), lambda x: x.triu(1)),
        V(((3, 4),), lambda x: x.triu(-1), lambda x: x.triu(-1)),
        V(((3, 4),), lambda x: x.triu(2**62), lambda x: x.triu(2**62)),
        V(((3, 4),), lambda x: x.triu(-2**62), lambda x: x.triu(-2**62)),
        V(((3, 0),), lambda x: x.triu(), lambda x: x.triu()),
        V(((4, 3),), lambda x: x.swap_dims(0, 1).triu(-1), lambda x: x.T.triu(-1)),
    ],
    "cat": [
        V(((2, 3), (4, 3)), lambda a, b: burn.cat([a, b]), lambda a, b: torch.cat([a, b])),
        V(((2, 3), (2, 1)), lambda a, b: burn.cat([a, b], dim=1),
          lambda a, b: torch.cat([a, b], dim=1)),
        V(((0, 3), (2, 3)), lambda a, b: burn.cat((a, b), dim=0),
          lambda a, b: torch.cat((a, b), dim=0)),
        V(((2, 3), (2, 3)), lambda a, b: burn.cat([a, b, a], dim=-1),
          lambda a, b: torch.cat([a, b, a], dim=-1)),
    ],
    "stack": [
        V(((2, 3), (2, 3)), lambda a, b: burn.stack([a, b]), lambda a, b: torch.stack([a, b])),
        V(((2, 3), (2, 3)), lambda a, b: burn.stack([a, b], dim=2),
          lambda a, b: torch.stack([a, b], dim=2)),
        V(((), ()), lambda a, b: burn.stack([a, b], dim=0), lambda a, b: torch.stack([a, b])),
    ],
}

FORWARD_DTYPES = [("float32", "contiguous"), ("float64", "transposed"), ("bfloat16", "strided"),
                  ("int64", "transposed"), ("int8", "contiguous"), ("bool", "strided")]


@pytest.mark.parametrize("name,dtype,layout", [op_param(n, d, lay) for n in OPS
                                               for d, lay in FORWARD_DTYPES
                                               if any(_kind(d) in v.kinds for v in OPS[n])])
def test_layout_forward(name: str, dtype: str, layout: str, device: burn.Device,
                        rng: np.random.Generator) -> None:
    ran = 0
    for v in OPS[name]:
        if _kind(dtype) not in v.kinds:
            continue
        args = [T(rand(rng, s, dtype), dtype, layout) for s in v.shapes]
        check_forward(v.fb, v.ft, args, device)
        ran += 1
    assert ran, f"no variant of {name} accepts {dtype}"


@pytest.mark.op("swap_dims")
def test_matrix_transpose_needs_two_dims(device: burn.Device) -> None:
    """``mT`` of fewer than 2 dims is refused (torch raises too); ``T`` of 0-d is the tensor."""
    with pytest.raises(ShapeError, match="mT"):
        _ = burn.zeros(3, device=device).mT
    scalar = burn.tensor(2.5, device=device)
    assert scalar.T.shape == () and scalar.T.item() == 2.5


@pytest.mark.op("slice_assign")
def test_clone_is_independent_and_contiguous_is_row_major(device: burn.Device) -> None:
    """Assigning into a clone leaves the original as it was (torch's clone); ``contiguous()``
    of a transposed view shares row-major memory (DLPack strides as torch's contiguous)."""
    data = np.arange(12, dtype=np.float32).reshape(3, 4)
    x = burn.tensor(data, device=device)
    y = x.clone()
    y[0, 1] = -5.0
    expected = torch.from_numpy(data).clone()
    expected[0, 1] = -5.0
    assert y.shape == (3, 4) and y.dtype == burn.float32
    np.testing.assert_array_equal(y.to_numpy(), expected.numpy())
    np.testing.assert_array_equal(x.to_numpy(), data)
    dense = x.T.contiguous()
    shared = torch.from_dlpack(dense)
    assert shared.shape == (4, 3) and shared.is_contiguous()
    np.testing.assert_array_equal(shared.cpu().numpy(), data.T)


def _single(out: Any) -> Any:
    return out if not isinstance(out, (tuple, list)) else out[0]


@pytest.mark.parametrize("name,dtype", [op_param(n, d) for n in OPS for d in GRAD_DTYPES])
def test_layout_backward(name: str, dtype: str, grad_device: burn.Device,
                         rng: np.random.Generator) -> None:
    for v in OPS[name]:
        if not v.grad or "f" not in v.kinds:
            continue
        args = [T(rand(rng, s, dtype), dtype, "transposed") for s in v.shapes]
        check_backward(lambda *a, v=v: _single(v.fb(*a)), lambda *a, v=v: _single(v.ft(*a)),
                       args, grad_device, rng)
