"""Bad input raises the right burn.errors type with a message naming the op, shapes, dtypes."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import burn
import burn.functional as F
from burn.errors import (
    AutodiffError,
    BurnError,
    BurnIndexError,
    DeviceError,
    DTypeError,
    ShapeError,
    ValueRangeError,
)

AD = burn.Device("numpy").autodiff()
f23, f34, f3 = burn.ones(2, 3), burn.ones(3, 4), burn.ones(3)
i23 = burn.ones(2, 3, dtype=burn.int64)
b23 = burn.ones(2, 3, dtype=burn.bool_)

CASES: list[tuple[str, Callable[[], object], type[BurnError], tuple[str, ...]]] = [
    ("add broadcast", lambda: f23 + f34, ShapeError, ("add", "(2, 3)", "(3, 4)")),
    ("mul broadcast mixed dtypes", lambda: f23 * burn.ones(4, dtype=burn.int32), ShapeError,
     ("mul", "(2, 3)", "(4,)")),
    ("compare broadcast", lambda: f23 < f34, ShapeError, ("lower", "(2, 3)")),
    ("matmul inner", lambda: f23 @ f23, ShapeError, ("matmul", "(2, 3)")),
    ("matmul 0-d", lambda: burn.tensor(1.0) @ f3, ShapeError, ("matmul", "()")),
    ("reshape numel", lambda: f23.reshape(4, 2), ShapeError, ("reshape", "(2, 3)", "(4, 2)")),
    ("reshape two -1", lambda: f23.reshape(-1, -1), ShapeError, ("reshape",)),
    ("expand", lambda: f23.expand(4, 3), ShapeError, ("expand", "(2, 3)", "(4, 3)")),
    ("cat sizes", lambda: burn.cat([f23, f34]), ShapeError, ("cat", "(2, 3)", "(3, 4)")),
    ("stack shapes", lambda: burn.stack([f23, f34]), ShapeError, ("stack", "(2, 3)")),
    ("bitwise on float", lambda: f23 & f23, DTypeError, ("bitwise_and", "float32")),
    ("shift on float", lambda: f23 << 1, DTypeError, ("bitwise_left_shift", "float32")),
    ("invert float", lambda: ~f23, DTypeError, ("bitwise_not", "float32")),
    ("neg bool", lambda: -b23, DTypeError, ("neg", "bool")),
    ("mean of bool", lambda: b23.mean(), DTypeError, ("mean", "bool")),
    ("var of int", lambda: i23.var(), DTypeError, ("var", "int64")),
    ("add string", lambda: f23 + "a", DTypeError, ("add", "float32", "str")),
    ("mask not bool", lambda: f23.mask_fill(i23, 0.0), DTypeError, ("mask_fill", "int64")),
    ("where cond", lambda: burn.where(f23, f23, f23), DTypeError, ("where", "float32")),
    ("pad reflect too far", lambda: f23.pad((3, 0), mode="reflect"), ShapeError,
     ("pad", "reflect", "(2, 3)")),
    ("pad mode", lambda: f23.pad((1, 0), mode="wrap"), ValueRangeError, ("pad", "wrap")),
    ("pad edge negative", lambda: f23.pad((-1, 0), mode="edge"), ValueRangeError,
     ("pad", "non-negative")),
    ("pad edge empty", lambda: burn.zeros(2, 0).pad((1, 0), mode="edge"), ShapeError,
     ("pad", "empty dim")),
    ("celu alpha 0", lambda: F.celu(f3, 0.0), ValueRangeError, ("celu", "alpha")),
    ("hardtanh bounds", lambda: F.hardtanh(f3, 1.0, -1.0), ValueRangeError,
     ("hardtanh", "min_val")),
    ("glu odd", lambda: F.glu(f3), ShapeError, ("glu", "(3,)")),
    ("relu6 int", lambda: F.relu6(i23), DTypeError, ("relu6", "int64")),
    ("one_hot bool", lambda: b23.one_hot(3), DTypeError, ("one_hot", "bool")),
    ("conv2d int", lambda: F.conv2d(burn.ones(1, 1, 3, 3, dtype=burn.int64),
                                    burn.ones(1, 1, 1, 1)), DTypeError, ("conv2d", "int64")),
    ("relu int", lambda: F.relu(i23), DTypeError, ("relu", "int64")),
    ("conv2d rank", lambda: F.conv2d(f23, burn.ones(1, 1, 1, 1)), ShapeError,
     ("conv2d", "(2, 3)")),
    ("conv2d channels", lambda: F.conv2d(burn.ones(1, 4, 5, 5), burn.ones(2, 3, 3, 3)),
     ShapeError, ("conv2d", "(1, 4, 5, 5)", "(2, 3, 3, 3)")),
    ("conv2d too small", lambda: F.conv2d(burn.ones(1, 1, 2, 2), burn.ones(1, 1, 3, 3)),
     ShapeError, ("conv2d", "(1, 1, 2, 2)")),
    ("pool padding", lambda: F.max_pool2d(burn.ones(1, 1, 4, 4), 2, padding=2), ValueRangeError,
     ("max_pool2d", "padding")),
    ("attention dims", lambda: F.attention(burn.ones(2, 3, 4), burn.ones(2, 5, 3),
                                           burn.ones(2, 5, 6)), ShapeError,
     ("attention", "(2, 3, 4)", "(2, 5, 3)")),
    ("embedding range", lambda: F.embedding(burn.ones(4, 2), burn.tensor([5])), BurnIndexError,
     ("embedding", "size=4")),
    ("dim out of range", lambda: f23.sum(2), BurnIndexError, ("sum", "dim=2", "ndim=2")),
    ("negative dim out of range", lambda: F.softmax(f23, -3), BurnIndexError,
     ("softmax", "dim=-3")),
    ("unsqueeze range", lambda: f23.unsqueeze(4), BurnIndexError, ("unsqueeze", "dim=4")),
    ("index range", lambda: f23[2], BurnIndexError, ("getitem", "index=2", "size=2")),
    ("too many indices", lambda: f23[0, 0, 0], BurnIndexError, ("getitem", "(2, 3)")),
    ("tensor index range", lambda: f23[burn.tensor([0, 5])], BurnIndexError,
     ("getitem", "index 5 out of range [-2, 2)")),
    ("select range", lambda: f23.select(1, burn.tensor([3])), BurnIndexError,
     ("select", "size=3")),
    ("narrow range", lambda: f23.narrow(1, 2, 2), BurnIndexError, ("narrow", "(2, 3)")),
    ("item many", lambda: f23.item(), ShapeError, ("item", "(2, 3)")),
    ("max empty", lambda: burn.ones(0).max(), ValueRangeError, ("max", "(0,)")),
    ("arange step", lambda: burn.arange(0, 3, 0), ValueRangeError, ("arange", "step=0")),
    ("zeros negative", lambda: burn.zeros(-1), ValueRangeError, ("zeros", "-1")),
    ("int negative pow", lambda: i23 ** -1, ValueRangeError, ("pow", "int64")),
    ("ragged data", lambda: burn.tensor([[1, 2], [3]]), ShapeError, ("tensor",)),
    ("different devices", lambda: f23 + burn.ones(2, 3, device=AD), DeviceError,
     ("add", "numpy", "numpy+autodiff")),
    ("different devices matmul", lambda: f23 @ burn.ones(3, 2, device=AD),
     DeviceError, ("matmul", "numpy+autodiff")),
    ("backward off autodiff", lambda: f23.sum().backward(), AutodiffError,
     ("backward", "numpy")),
    ("backward int", lambda: burn.ones(2, dtype=burn.int64, device=AD).sum().backward(),
     AutodiffError, ("backward", "int64")),
    ("backward untracked", lambda: burn.ones(2, device=AD).sum().backward(), AutodiffError,
     ("backward",)),
    ("require_grad int", lambda: burn.ones(2, dtype=burn.int64, device=AD).require_grad(),
     AutodiffError, ("require_grad", "int64")),
]


@pytest.mark.parametrize(("name", "fn", "error", "fragments"), CASES, ids=[c[0] for c in CASES])
def test_error_type_and_message(name: str, fn: Callable[[], object], error: type[BurnError],
                                fragments: tuple[str, ...]) -> None:
    with pytest.raises(error) as info:
        fn()
    message = str(info.value)
    for fragment in fragments:
        assert fragment in message, (name, message)


def test_errors_are_builtin_subclasses() -> None:
    with pytest.raises(ValueError):
        f23 + f34
    with pytest.raises(TypeError):
        f23 & f23
    with pytest.raises(IndexError):
        f23[5]


def test_second_backward_raises() -> None:
    x = burn.ones(2, device=AD).require_grad()
    y = (x * x).sum()
    y.backward()
    with pytest.raises(AutodiffError, match="backward"):
        y.backward()


def test_int_math_promotes_like_torch() -> None:
    assert i23.sin().dtype == burn.float32
    assert (i23 / 2).dtype == burn.float32
    assert (i23 // 2).dtype == burn.int64
