"""`Param`: a module's trainable tensor, with a stable id."""

from __future__ import annotations

import itertools
from typing import Any

from burn.frontend.tensor import Tensor

_ids = itertools.count()


class Param(Tensor):
    """A tensor owned by a module: a `burn.Tensor` (use it in ops directly) with an `id` that
    optimizers key their state by, and a `trainable` flag (off after `Module.freeze`).

    On an autodiff device a trainable float Param is a gradient leaf. Ops on a Param return plain
    Tensors; optimizers and loaders replace its values in place with `set_`, keeping the id.

    Args:
        value: the initial values.
        trainable: whether optimizers update it and autodiff tracks it.
    """

    __slots__ = ("id", "_trainable")

    def __init__(self, value: Tensor, trainable: bool = True) -> None:
        self.id = next(_ids)
        self._trainable = trainable
        self.set_(value)

    def set_(self, value: Tensor) -> Param:
        """Replace the values (and device) of this param, keeping its id.

        Args:
            value: the new values; on an autodiff device they become a fresh gradient leaf
                when the param is trainable.
        Returns:
            self.
        """
        if value.device.is_autodiff:
            value = value.detach()
        self._prim, self._device, self._bk = value._prim, value._device, value._bk
        self._dtype, self._k, self._shape = value._dtype, value._k, value._shape
        if self._trainable and self._bk.is_autodiff and self._k == "float_":
            self.require_grad()
        return self

    @property
    def trainable(self) -> bool:
        """Whether optimizers update this param (and autodiff tracks it)."""
        return self._trainable

    @trainable.setter
    def trainable(self, flag: bool) -> None:
        self._trainable = flag
        self.set_(self.detach())

    def value(self) -> Tensor:
        """The current values as a plain Tensor sharing the data (no id)."""
        return self._wrap(self._prim)

    def __repr__(self) -> str:
        return f"Param(id={self.id}, shape={self.shape}, dtype={self.dtype.value}, " \
               f"device={self.device}, trainable={self._trainable})"

    def __reduce__(self) -> tuple[Any, ...]:
        raise TypeError("Param is not picklable: save modules with Module.save / burn.record")
