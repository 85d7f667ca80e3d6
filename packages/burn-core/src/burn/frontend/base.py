"""The Tensor's storage (primitive, device, backend, dtype) and the helpers every mixin uses."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import TYPE_CHECKING, Any

from burn.dtype import DType, Kind
from burn.errors import DTypeError, UnsupportedDTypeError

if TYPE_CHECKING:
    from burn.backend.protocol import Backend
    from burn.device import Device
    from burn.frontend.tensor import Tensor

#: backend op-name prefix of each dtype's kind.
PREFIX: dict[DType, str] = {d: d.kind.value + "_" for d in DType}
_KIND_OF_PREFIX = {k.value + "_": k for k in Kind}
_new = object.__new__


class TensorBase:
    """Slots and core helpers of `burn.Tensor` (see `burn.frontend.tensor.Tensor`)."""

    __slots__ = ("_prim", "_device", "_bk", "_dtype", "_k", "_shape")
    _prim: Any
    _device: Device
    _bk: Backend
    _dtype: DType
    _k: str
    #: the shape once known (None until asked); ops that know their result's shape set it.
    _shape: tuple[int, ...] | None

    # --- attributes ---
    @property
    def shape(self) -> tuple[int, ...]:
        """The shape, as a tuple of ints."""
        shape = self._shape
        if shape is None:
            shape = self._shape = self._bk.shape(self._prim)
        return shape

    @property
    def dtype(self) -> DType:
        """The element type."""
        return self._dtype

    @property
    def kind(self) -> Kind:
        """The tensor kind (FLOAT, INT or BOOL)."""
        return _KIND_OF_PREFIX[self._k]

    @property
    def device(self) -> Device:
        """The device holding the tensor."""
        return self._device

    @property
    def ndim(self) -> int:
        """Number of dims."""
        return len(self.shape)

    # --- private helpers ---
    def _tensor(self) -> Tensor:
        """This object as the `burn.Tensor` it is: TensorBase and its mixins exist only as bases
        of Tensor, which the checker cannot see from inside a mixin."""
        return self  # type: ignore[return-value]

    def _distinct(self, out: Tensor) -> Tensor:
        """`out`, or a new tensor of the same values where an op that changed nothing returns
        this tensor itself: tensors are values, so `t[...] = v` must not reach a result of `t`
        (a roll by 0, a zero pad or a repeat of ones, as torch's copies)."""
        if out is not self:
            return out
        t = self._wrap(self._prim)
        t._shape = self._shape
        return t

    def _wrap(self, prim: Any, dtype: DType | None = None) -> Tensor:
        """A tensor on this tensor's device holding `prim` (of `dtype`, default this dtype)."""
        t = _new(_tensor_class())
        t._prim = prim
        t._shape = None
        t._device = self._device
        t._bk = self._bk
        if dtype is None or dtype is self._dtype:
            t._dtype = self._dtype
            t._k = self._k
        else:
            t._dtype = dtype
            t._k = PREFIX[dtype]
        return t  # type: ignore[return-value]

    def _fn(self, op: str, name: str | None = None) -> Callable[..., Any]:
        """The backend function `<kind>_<op>` for this tensor's kind.

        Raises:
            DTypeError: naming `name` (default `op`) when the backend has no such op for this kind.
        """
        fn = getattr(self._bk, self._k + op, None)
        if fn is None:
            raise DTypeError(name or op, f"not supported for {self._k[:-1]} tensors",
                             dtype=self._dtype.value)
        return fn

    def _same(self, op: str, *args: Any) -> Tensor:
        """`<kind>_<op>(prim, *args)` wrapped with this tensor's dtype."""
        return self._wrap(self._fn(op)(self._prim, *args))

    def _cast(self, dtype: DType, op: str = "cast") -> Tensor:
        """This tensor converted to `dtype` (any kind to any kind); itself when already it.
        An unsupported dtype's error names `op` (the method converting)."""
        if dtype is self._dtype:
            return self._tensor()
        if not self._bk.supports(dtype):
            raise UnsupportedDTypeError(op, "dtype not supported on this device",
                                        dtype=dtype.value, device=str(self._device),
                                        shape=self.shape, input_dtype=self._dtype.value)
        return self._wrap(_CASTS[self._k, PREFIX[dtype]](self._bk, self._prim, dtype), dtype)

    def _to_float(self) -> Tensor:
        """Itself when float, else converted to the default float dtype (as torch for sin(int))."""
        return self._tensor() if self._k == "float_" else self._cast(DType.float32)

    def _full(self, shape: tuple[int, ...], value: Any, dtype: DType | None = None) -> Tensor:
        """A tensor of `shape` filled with `value`, on this device, of `dtype` (default own)."""
        dtype = dtype or self._dtype
        if dtype is DType.bool:
            prim = self._bk.bool_full(shape, bool(value), self._device)
        elif dtype.is_float:
            prim = self._bk.float_full(shape, float(value), dtype, self._device)
        else:
            prim = self._bk.int_full(shape, int(value), dtype, self._device)
        return self._wrap(prim, dtype)


@cache
def _tensor_class() -> type[Tensor]:
    """`burn.Tensor` (results of ops on subclasses such as `nn.Param` are plain Tensors)."""
    from burn.frontend.tensor import Tensor

    return Tensor


def make(prim: Any, device: Device, dtype: DType) -> Tensor:
    """A Tensor around a primitive of `device`'s backend (no validation)."""
    t = _new(_tensor_class())
    t._prim = prim
    t._shape = None
    t._device = device
    t._bk = device.backend
    t._dtype = dtype
    t._k = PREFIX[dtype]
    return t


# (from kind prefix, to kind prefix) -> fn(backend, prim, dtype) converting a primitive.
_CASTS: dict[tuple[str, str], Callable[[Any, Any, DType], Any]] = {
    ("float_", "float_"): lambda b, x, d: b.float_cast(x, d),
    ("float_", "int_"): lambda b, x, d: b.float_into_int(x, d),
    ("float_", "bool_"): lambda b, x, _d: b.bool_not(b.float_equal_elem(x, 0.0)),
    ("int_", "float_"): lambda b, x, d: b.int_into_float(x, d),
    ("int_", "int_"): lambda b, x, d: b.int_cast(x, d),
    ("int_", "bool_"): lambda b, x, _d: b.bool_not(b.int_equal_elem(x, 0)),
    ("bool_", "float_"): lambda b, x, d: b.bool_into_float(x, d),
    ("bool_", "int_"): lambda b, x, d: b.bool_into_int(x, d),
}
