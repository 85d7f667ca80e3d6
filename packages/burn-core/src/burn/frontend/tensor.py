"""`burn.Tensor`: a backend primitive with its device, dtype and kind."""

from __future__ import annotations

import math
from typing import Any

from burn.device import Device
from burn.dtype import DType
from burn.frontend.arithmetic import ArithmeticMixin
from burn.frontend.autograd import AutogradMixin
from burn.frontend.bitwise import BitwiseMixin
from burn.frontend.comparison import ComparisonMixin
from burn.frontend.conversion import ConversionMixin
from burn.frontend.indexing import IndexingMixin
from burn.frontend.layout import LayoutMixin
from burn.frontend.math import MathMixin
from burn.frontend.numeric import NumericMixin
from burn.frontend.reduction import ReductionMixin
from burn.frontend.validation import norm_dim


class Tensor(ArithmeticMixin, MathMixin, LayoutMixin, IndexingMixin, ComparisonMixin,
             ReductionMixin, BitwiseMixin, ConversionMixin, AutogradMixin, NumericMixin):
    """An n-d array of one dtype on one device; ops dispatch to the device's backend by kind
    (`float_*`, `int_*`, `bool_*`).

    Args:
        data: lists, scalars, numpy arrays or Tensors (see `burn.tensor`, the creation function).
        dtype: element type (inferred when None).
        device: target device (the default device when None).
    """

    __slots__ = ()
    __array_ufunc__ = None  # numpy defers to the reflected operators

    def __init__(self, data: Any, dtype: DType | str | None = None,
                 device: Device | str | None = None) -> None:
        from burn.frontend.creation import tensor

        src = tensor(data, dtype, device)
        self._prim, self._device, self._bk = src._prim, src._device, src._bk
        self._dtype, self._k, self._shape = src._dtype, src._k, src._shape

    def numel(self) -> int:
        """Number of elements."""
        return math.prod(self.shape)

    nelement = numel

    def rank(self) -> int:
        """Number of dims (Burn's rank; `ndim`, torch's `dim()` / `ndimension()`)."""
        return len(self.shape)

    dim = ndimension = rank

    def dims(self) -> list[int]:
        """The shape as a list (Burn's dims)."""
        return list(self.shape)

    def size(self, dim: int | None = None) -> tuple[int, ...] | int:
        """The shape, or the size of one dim."""
        shape = self.shape
        return shape if dim is None else shape[norm_dim("size", dim, len(shape))]
