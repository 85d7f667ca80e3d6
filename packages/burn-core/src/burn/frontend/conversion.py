"""Conversions: numpy / DLPack / Python values, dtype casts, device moves, repr."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from burn.device import Device, as_device
from burn.dtype import DEFAULT_FLOAT, DEFAULT_INT, DType, as_dtype
from burn.errors import DTypeError, ShapeError, UnsupportedDTypeError
from burn.frontend.base import TensorBase, make
from burn.frontend.validation import require_tensor

if TYPE_CHECKING:
    from burn.frontend.tensor import Tensor



class ConversionMixin(TensorBase):
    """Conversion methods of `burn.Tensor`."""

    __slots__ = ()

    # --- to host values ---
    def to_numpy(self) -> np.ndarray:
        """The values as a new numpy array (bfloat16 as ml_dtypes.bfloat16)."""
        return self._fn("into_data")(self._prim)

    numpy = to_numpy

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        """The values as numpy (shared with the tensor where the backend allows and `copy`
        is not True: the cpu cube backend's memory)."""
        shared = None if copy else self._exported()
        arr = shared if isinstance(shared, np.ndarray) else self.to_numpy()
        return arr if dtype is None else arr.astype(dtype, copy=False)

    def __dlpack__(self, **kwargs: Any) -> Any:
        """DLPack capsule of the values: zero-copy where the backend shares its memory (the
        cpu and cuda cube backends), else of a host copy (bfloat16 is not exportable)."""
        if self._dtype is DType.bfloat16:
            raise DTypeError("__dlpack__", "bfloat16 has no DLPack export via numpy or CuPy",
                             dtype=self._dtype.value)
        return self._exported().__dlpack__(**{k: v for k, v in kwargs.items() if v is not None})

    def __dlpack_device__(self) -> tuple[int, int]:
        device: tuple[int, int] = self._exported().__dlpack_device__()
        return device

    def _exported(self) -> Any:
        bk: Any = self._bk  # an AutodiffBackend has float_inner
        return bk.exported(bk.float_inner(self._prim) if bk.is_autodiff and self._k == "float_"
                           else self._prim)

    def item(self) -> float | int | bool:
        """The value of a one-element tensor as a Python scalar.

        Raises:
            ShapeError: when the tensor does not have exactly one element.
        """
        arr = self.to_numpy()
        if arr.size != 1:
            raise ShapeError("item", "only one-element tensors convert to a scalar",
                             shape=arr.shape)
        return _python(arr.reshape(()), self._dtype)

    def tolist(self) -> Any:
        """The values as (nested) Python lists, a scalar for 0-d tensors."""
        return _python(self.to_numpy(), self._dtype)

    def __bool__(self) -> bool:
        return bool(self.item())

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __index__(self) -> int:
        if self._k != "int_":
            raise DTypeError("__index__", "only int tensors can be used as an index",
                             dtype=self._dtype.value)
        return int(self.item())

    def __len__(self) -> int:
        shape = self.shape
        if not shape:
            raise ShapeError("len", "len() of a 0-d tensor", shape=shape)
        return shape[0]

    def __iter__(self) -> Iterator[Tensor]:
        return (self[i] for i in range(len(self)))  # type: ignore[index]

    def __contains__(self, element: object) -> bool:
        """Whether any element equals `element` (a number or a tensor that broadcasts), as
        torch's ``in``."""
        return bool((self == element).any().item())  # type: ignore[attr-defined]

    def __format__(self, spec: str) -> str:
        """A 0-d tensor formats as its value (``f"{loss:.3f}"``, ``f"{loss}"``); others only
        with an empty spec, as their `repr` (torch's rule).

        Raises:
            ShapeError: a format spec for a tensor that is not 0-d.
        """
        if not self.shape:
            return format(self.item(), spec)
        if spec:
            raise ShapeError("format", "only 0-d tensors take a format spec", shape=self.shape,
                             spec=spec)
        return str(self)

    # --- dtype and device ---
    def cast(self, dtype: DType | str) -> Tensor:
        """The values converted to `dtype` (float -> int truncates toward zero)."""
        return self._cast(as_dtype(dtype, "cast"))

    def to(self, target: DType | Device | str | None) -> Tensor:
        """`cast` for a dtype (or dtype name), `to_device` for a device (or device spec);
        itself for None (torch's ``to(None)``)."""
        if target is None:
            return self  # type: ignore[return-value]
        if isinstance(target, Device):
            return self.to_device(target)
        if isinstance(target, str):
            try:
                dtype = as_dtype(target, "to")
            except DTypeError:
                return self.to_device(target)
            return self._cast(dtype)
        return self._cast(as_dtype(target, "to"))

    def float(self) -> Tensor:
        """Converted to float32 (itself when float32)."""
        return self._cast(DEFAULT_FLOAT)

    def int(self) -> Tensor:
        """Converted to int64, the default int dtype (itself when int64)."""
        return self._cast(DEFAULT_INT)

    def bool(self) -> Tensor:
        """Converted to bool (non-zero is true)."""
        return self._cast(DType.bool)

    def double(self) -> Tensor:
        """Converted to float64 (itself when float64).

        Raises:
            UnsupportedDTypeError: on a device without float64 (wgpu).
        """
        return self._cast(DType.float64, "double")

    def half(self) -> Tensor:
        """Converted to float16 (itself when float16).

        Raises:
            UnsupportedDTypeError: on a device without float16.
        """
        return self._cast(DType.float16, "half")

    def long(self) -> Tensor:
        """Converted to int64 (itself when int64; `int()`, Burn's int, is the same)."""
        return self._cast(DType.int64, "long")

    def type_as(self, other: Tensor) -> Tensor:
        """Converted to `other`'s dtype (itself when it has it already).

        Raises:
            DTypeError: for an `other` that is not a Tensor.
            UnsupportedDTypeError: when this device lacks other's dtype.
        """
        return self._cast(require_tensor("type_as", other, self._dtype)._dtype, "type_as")

    def to_device(self, device: Device | str) -> Tensor:
        """The tensor on `device`; moving between backends copies through host memory (and
        leaves the autodiff graph).

        Raises:
            UnsupportedDTypeError: when `device` cannot hold the tensor's dtype (float64 or
                int8 on wgpu), naming dtype and device.
        """
        dev = as_device(device)
        if dev == self._device:
            return self  # type: ignore[return-value]
        if not dev.backend.supports(self._dtype):
            raise UnsupportedDTypeError("to_device", "dtype not supported on this device",
                                        dtype=self._dtype.value, device=str(dev))
        if dev.backend is self._bk:
            return make(self._fn("to_device")(self._prim, dev), dev, self._dtype)
        prim = getattr(dev.backend, self._k + "from_data")(self.to_numpy(), dev)
        return make(prim, dev, self._dtype)

    # --- printing, pickling ---
    def __repr__(self) -> str:
        arr = self.to_numpy()
        if self._dtype is DType.bfloat16:
            arr = arr.astype(np.float32)
        body = np.array2string(arr, separator=", ", prefix="Tensor(", threshold=1000)
        return f"Tensor({body}, dtype={self._dtype.value}, device={self._device})"

    __str__ = __repr__

    def __reduce__(self) -> tuple[Any, ...]:
        if self.is_require_grad():  # type: ignore[attr-defined]
            return _unpickled_leaf, (self.to_numpy(), self._dtype, str(self._device))
        from burn.frontend.creation import tensor

        return tensor, (self.to_numpy(), self._dtype, str(self._device))


def _unpickled_leaf(array: np.ndarray, dtype: DType, device: str) -> Tensor:
    """A pickled leaf that required grad: the tensor again, requiring grad (as torch's).

    Args:
        array: its values.
        dtype: its dtype.
        device: its device spec (an autodiff device).
    Returns:
        The tensor.
    """
    from burn.frontend.creation import tensor

    return tensor(array, dtype, device).require_grad()


def _python(arr: np.ndarray, dtype: DType) -> Any:
    """`arr.tolist()` with bfloat16 values as Python floats.

    Args:
        arr: the tensor's values.
        dtype: the tensor's dtype (read instead of `arr.dtype.name`, which costs microseconds).
    """
    return (arr.astype(np.float32) if dtype is DType.bfloat16 else arr).tolist()
