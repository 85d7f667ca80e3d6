"""Comparisons (bool results) and the any / all reductions."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np

from burn.dtype import DType
from burn.frontend.base import TensorBase
from burn.frontend.dispatch import BinaryOp, binary, binary_op, reduce
from burn.frontend.validation import norm_dim

if TYPE_CHECKING:
    from burn.frontend.tensor import Tensor


def _compare(name: str, bool_impl: str | None = None) -> BinaryOp:
    tensor = {"float_": f"float_{name}", "int_": f"int_{name}"}
    return BinaryOp(name, {**tensor, **({"bool_": bool_impl} if bool_impl else {})},
                    {k: v + "_elem" for k, v in tensor.items()}, out_bool=True)


EQUAL = _compare("equal", "bool_equal")
NOT_EQUAL = BinaryOp(
    "not_equal",
    {"float_": lambda b, x, y: b.bool_not(b.float_equal(x, y)),
     "int_": lambda b, x, y: b.bool_not(b.int_equal(x, y)), "bool_": "bool_xor"},
    {"float_": lambda b, x, s: b.bool_not(b.float_equal_elem(x, s)),
     "int_": lambda b, x, s: b.bool_not(b.int_equal_elem(x, s))},
    out_bool=True,
)
GREATER = _compare("greater")
GREATER_EQUAL = _compare("greater_equal")
LOWER = _compare("lower")
LOWER_EQUAL = _compare("lower_equal")
_COMPARABLE = (TensorBase, int, float, np.generic)


class ComparisonMixin(TensorBase):
    """Comparison methods and operators of `burn.Tensor`."""

    __slots__ = ()

    # (eq, ne, gt, ge, lt, le: PyTorch's names)
    equal = eq = binary_op(EQUAL, doc="Elementwise `==`, as a bool tensor.")
    not_equal = ne = binary_op(NOT_EQUAL, doc="Elementwise `!=`, as a bool tensor.")
    greater = gt = __gt__ = binary_op(GREATER, doc="Elementwise `>`, as a bool tensor.")
    greater_equal = ge = __ge__ = binary_op(GREATER_EQUAL,
                                            doc="Elementwise `>=`, as a bool tensor.")
    lower = lt = __lt__ = binary_op(LOWER, doc="Elementwise `<`, as a bool tensor.")
    lower_equal = le = __le__ = binary_op(LOWER_EQUAL, doc="Elementwise `<=`, as a bool tensor.")

    def __eq__(self, other: object) -> Tensor:  # type: ignore[override]
        if not isinstance(other, _COMPARABLE):
            return NotImplemented
        return binary(self, other, EQUAL)

    def __ne__(self, other: object) -> Tensor:  # type: ignore[override]
        if not isinstance(other, _COMPARABLE):
            return NotImplemented
        return binary(self, other, NOT_EQUAL)

    __hash__ = object.__hash__

    def _truth(self) -> Tensor:
        return self._cast(DType.bool)

    def any(self, dim: int | Iterable[int] | None = None, keepdim: bool = False) -> Tensor:
        """Whether any element is true / non-zero, over all dims or over `dim` (int or tuple)."""
        return reduce(self._truth(), "any", dim, keepdim, lambda t: t._same("any"),
                      lambda t, d: t._same("any_dim", d), no_dims_is_every=False)

    def all(self, dim: int | Iterable[int] | None = None, keepdim: bool = False) -> Tensor:
        """Whether all elements are true / non-zero, over all dims or over `dim` (int or tuple)."""
        return reduce(self._truth(), "all", dim, keepdim, lambda t: t._same("all"),
                      lambda t, d: t._same("all_dim", d), no_dims_is_every=False)

    def any_dim(self, dim: int) -> Tensor:
        """`any` over one dim, kept with size 1."""
        return self.any(norm_dim("any_dim", dim, self.ndim, scalar=True), keepdim=True)

    def all_dim(self, dim: int) -> Tensor:
        """`all` over one dim, kept with size 1."""
        return self.all(norm_dim("all_dim", dim, self.ndim, scalar=True), keepdim=True)
