"""Bitwise ops on int (and bool) tensors, and logical ops on bool tensors."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from burn.dtype import DType
from burn.frontend.base import TensorBase
from burn.frontend.dispatch import BinaryOp, binary, binary_op
from burn.frontend.validation import as_scalar, promote_tensors

if TYPE_CHECKING:
    from burn.frontend.tensor import Tensor

AND = BinaryOp("bitwise_and", {"int_": "int_bitwise_and", "bool_": "bool_and"}, commutative=True)
OR = BinaryOp("bitwise_or", {"int_": "int_bitwise_or", "bool_": "bool_or"}, commutative=True)
XOR = BinaryOp("bitwise_xor", {"int_": "int_bitwise_xor", "bool_": "bool_xor"}, commutative=True)
SHL = BinaryOp("bitwise_left_shift", {"int_": "int_bitwise_left_shift"})
SHR = BinaryOp("bitwise_right_shift", {"int_": "int_bitwise_right_shift"})
LOGICAL_AND = BinaryOp("bool_and", {"bool_": "bool_and"})
LOGICAL_OR = BinaryOp("bool_or", {"bool_": "bool_or"})
LOGICAL_XOR = BinaryOp("bool_xor", {"bool_": "bool_xor"})


def _logical(op: BinaryOp) -> Callable[[TensorBase, object], Tensor]:
    def method(self: TensorBase, other: object) -> Tensor:
        if not isinstance(other, TensorBase):
            return binary(self._cast(DType.bool), bool(as_scalar(other)), op)
        # (as torch, the operands first take their promoted dtype: a 0-d int64 operand of an
        # int32 tensor wraps into int32, -2**63 to 0, as for `==`)
        common = promote_tensors((self, other))
        return binary(self._cast(common)._cast(DType.bool), other._cast(common)._cast(DType.bool),
                      op)

    method.__doc__ = (f"Elementwise logical {op.name[5:]} (operands are converted to bool, "
                      "tensors after taking their promoted dtype).")
    return method


class BitwiseMixin(TensorBase):
    """Bitwise and logical methods and operators of `burn.Tensor`."""

    __slots__ = ()

    bitwise_and = __and__ = binary_op(AND, doc="Elementwise `&` (int or bool tensors).")
    __rand__ = binary_op(AND, reflected=True)
    bitwise_or = __or__ = binary_op(OR, doc="Elementwise `|` (int or bool tensors).")
    __ror__ = binary_op(OR, reflected=True)
    bitwise_xor = __xor__ = binary_op(XOR, doc="Elementwise `^` (int or bool tensors).")
    __rxor__ = binary_op(XOR, reflected=True)
    bitwise_left_shift = __lshift__ = binary_op(SHL, doc="Elementwise `<<` (int tensors).")
    __rlshift__ = binary_op(SHL, reflected=True)
    bitwise_right_shift = __rshift__ = binary_op(
        SHR, doc="Elementwise arithmetic `>>` (int tensors).")
    __rrshift__ = binary_op(SHR, reflected=True)
    bool_and = logical_and = _logical(LOGICAL_AND)
    bool_or = logical_or = _logical(LOGICAL_OR)
    bool_xor = logical_xor = _logical(LOGICAL_XOR)

    def bitwise_not(self) -> Tensor:
        """Elementwise `~`: bit flip of int tensors, logical not of bool tensors."""
        return self._same("not" if self._k == "bool_" else "bitwise_not")

    __invert__ = bitwise_not

    def bool_not(self) -> Tensor:
        """Elementwise logical not (non-bool tensors: `self == 0`)."""
        return self._cast(DType.bool)._same("not")

    logical_not = bool_not
