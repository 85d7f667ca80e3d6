"""The one dispatch path of binary ops (tensor or scalar operand, all kinds) and of reductions."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, cast

from burn.dtype import DEFAULT_FLOAT, DEFAULT_INT, DType
from burn.errors import DTypeError, EmptyReductionError
from burn.frontend.base import PREFIX, TensorBase, _new, _tensor_class
from burn.frontend.validation import (
    HOST_INT_END,
    HOST_INT_MIN,
    Scalar,
    as_scalar,
    broadcast_shapes,
    check_device,
    norm_dims,
    promote_tensors,
    scalar_dtype,
)

if TYPE_CHECKING:
    from burn.backend.protocol import Backend
    from burn.frontend.tensor import Tensor

#: a backend op name, or a composite fn(backend, lhs, rhs) -> primitive.
Impl = str | Callable[["Backend", Any, Any], Any]
# Kinds an op lifts to when it has no implementation for the operands' kind (as torch does).
_LIFT = {DType.bool: DEFAULT_INT, DType.int64: DEFAULT_FLOAT, DType.int32: DEFAULT_FLOAT,
         DType.int8: DEFAULT_FLOAT, DType.uint8: DEFAULT_FLOAT}


@dataclass(frozen=True, slots=True)
class BinaryOp:
    """A binary op: its backend implementation per kind prefix, for a tensor and a scalar rhs.

    A kind absent from `tensor` lifts bool -> int64 -> float32 until one is present (so `/` on
    ints is float division); a kind absent from `scalar` turns the scalar into a 0-d tensor.
    `on_bool` says what two bool operands give: "lift" (the lifted result), "bool" (the lifted
    result cast back to bool: `+` is or, `*` is and, as torch), "refuse" (DTypeError for any
    bool operand, tensor or Python bool, as torch for `-`) or "refuse_pair" (DTypeError for two
    bool operands only, as torch for `//` and `%`).
    """

    name: str
    tensor: dict[str, Impl]
    scalar: dict[str, Impl] = field(default_factory=dict)
    commutative: bool = False
    out_bool: bool = False
    on_bool: Literal["lift", "bool", "refuse", "refuse_pair"] = "lift"


def _call(impl: Impl, bk: Backend, a: Any, b: Any) -> Any:
    return getattr(bk, impl)(a, b) if impl.__class__ is str else impl(bk, a, b)  # type: ignore


def _lift(op: BinaryOp, dtype: DType, lhs: DType, rhs: object, reflected: bool = False
          ) -> DType:
    """The dtype `op` computes in for operands promoting to `dtype` (`lhs`: the tensor's
    dtype, `rhs`: the other's dtype or the scalar; `reflected`: the scalar is the left
    operand, as an error names them)."""
    rhs_bool = rhs is DType.bool or rhs.__class__ is bool
    if (op.on_bool == "refuse" and (lhs is DType.bool or rhs_bool)
            or op.on_bool == "refuse_pair" and lhs is DType.bool and rhs_bool):
        which = "two bool operands" if op.on_bool == "refuse_pair" else "a bool operand"
        named = (getattr(rhs, "value", rhs), lhs.value) if reflected \
            else (lhs.value, getattr(rhs, "value", rhs))
        raise DTypeError(op.name, f"not supported with {which}", lhs=named[0], rhs=named[1])
    while PREFIX[dtype] not in op.tensor:
        if dtype not in _LIFT:
            raise DTypeError(op.name, f"not supported for {dtype.kind.value} tensors",
                             lhs=lhs.value, rhs=getattr(rhs, "value", rhs))
        dtype = _LIFT[dtype]
    return dtype


def binary(x: TensorBase, other: object, op: BinaryOp, reflected: bool = False) -> Tensor:
    """`x op other` (or `other op x` when `reflected`), validated, promoted and dispatched.

    Args:
        x: the tensor operand.
        other: a Tensor or a Python / NumPy scalar.
        op: the op.
        reflected: whether `other` is the left operand.
    Returns:
        The result tensor (bool for comparisons).
    Raises:
        ShapeError, DTypeError, DeviceError: for operands that do not broadcast, an unsupported
            kind or operand type, or tensors on different devices.
    """
    if isinstance(other, TensorBase):
        return _binary_tensors(x, other, op, reflected)
    return _binary_scalar(x, as_scalar(other), op, reflected)


def _binary_tensors(x: TensorBase, y: TensorBase, op: BinaryOp, reflected: bool) -> Tensor:
    if reflected:
        x, y = y, x
    check_device(op.name, x, y)
    promoted = promote_tensors((x, y))
    dtype = _lift(op, promoted, x._dtype, y._dtype)
    a, b = x._cast(dtype), y._cast(dtype)
    broadcast_shapes(op.name, a.shape, b.shape, dtypes=(x._dtype, y._dtype))
    out = a._wrap(_call(op.tensor[a._k], a._bk, a._prim, b._prim),
                  DType.bool if op.out_bool else None)
    return _bool_back(op, promoted, out)


def _bool_back(op: BinaryOp, promoted: DType, out: Tensor) -> Tensor:
    """`out` cast back to bool when both operands were bool and `op` keeps bools closed."""
    if promoted is DType.bool and op.on_bool == "bool":
        return out._cast(DType.bool)
    return out


#: Normal range (smallest normal, largest finite) of the 2-byte floats: a Python scalar outside
#: it would round to inf, 0 or a subnormal in the tensor's dtype, where torch's mul and div keep
#: it in float32 ("opmath"; its add, sub and comparisons round it to the tensor's dtype).
_NARROW_RANGE = {DType.float16: (6.103515625e-05, 65504.0),
                 DType.bfloat16: (1.1754943508222875e-38, 3.3895313892515355e38)}
_WIDE_SCALAR_OPS = ("mul", "div")


def _outside_narrow(dtype: DType, value: object) -> bool:
    """Whether `value` is a finite non-zero number outside the normal range of the 2-byte float
    `dtype` (False for other dtypes)."""
    bounds = _NARROW_RANGE.get(dtype)
    if bounds is None or value.__class__ not in (int, float) or not value:
        return False
    magnitude = abs(cast(float, value))
    return magnitude < bounds[0] or bounds[1] < magnitude < float("inf")


def _binary_scalar(x: TensorBase, value: object, op: BinaryOp, reflected: bool) -> Tensor:
    promoted = scalar_dtype(op.name, x._dtype, value)
    dtype = _lift(op, promoted, x._dtype, value, reflected)
    if op.name in _WIDE_SCALAR_OPS and _outside_narrow(dtype, value):
        # computed in float32 and rounded once, as torch (float16 x * 70000 was inf, x / 1e5 0)
        return _binary_scalar(x._cast(DType.float32), value, op, reflected)._cast(dtype)
    a = x._cast(dtype)
    impl = op.scalar.get(a._k)
    if impl is None or (reflected and not op.commutative):
        s = a._full((), value)
        out = (_binary_tensors(s, a, op, False) if reflected
               else _binary_tensors(a, s, op, False))
        return _bool_back(op, promoted, out)
    scalar = cast(Scalar, value)  # scalar_dtype above let only a bool / int / float through
    v = float(scalar) if a._k == "float_" else int(scalar)
    return _bool_back(op, promoted, a._wrap(_call(impl, a._bk, a._prim, v),
                                            DType.bool if op.out_bool else None))


def binary_op(op: BinaryOp, reflected: bool = False, doc: str = "") -> Callable[..., Tensor]:
    """A Tensor method computing `op` (the reflected operator when `reflected`).

    The method has the hot path inline: a tensor of the same dtype and device, or a Python
    scalar of the tensor's kind, with a direct backend op, goes straight to the backend;
    everything else goes through `binary`. The reflected method of a commutative op is the
    op's own (its operands swapped give the same values, dtype and shape).
    """
    tensor_impls, scalar_impls, out_bool, name = op.tensor, op.scalar, op.out_bool, op.name
    narrow = _NARROW_RANGE if name in _WIDE_SCALAR_OPS else {}  # dtypes to check scalars of

    def method(self: TensorBase, other: object) -> Tensor:
        k = self._k
        shape: tuple[int, ...] | None  # the result's, when known without asking the backend
        tensor_cls = _tensor_class()  # results are plain Tensors, also for subclasses (Param)
        if other.__class__ is tensor_cls or isinstance(other, TensorBase):
            impl = tensor_impls.get(k)
            if (impl.__class__ is str and other._dtype is self._dtype  # type: ignore
                    and (other._device is self._device  # type: ignore[attr-defined]
                         or other._device == self._device)):  # type: ignore[attr-defined]
                bk = self._bk
                sa = self._shape or self.shape  # cached shapes first: the hot path
                sb = other._shape or other.shape  # type: ignore[attr-defined]
                shape = sa if sa == sb else broadcast_shapes(name, sa, sb,
                                                             dtypes=(self._dtype, self._dtype))
                out = getattr(bk, impl)(self._prim, other._prim)  # type: ignore
            else:
                return binary(self, other, op)
        elif (cls := other.__class__) is float and k == "float_" or cls is int and k != "bool_" \
                and HOST_INT_MIN <= other < HOST_INT_END:  # type: ignore[operator]
            impl = scalar_impls.get(k)
            if impl.__class__ is not str or (self._dtype in narrow
                                             and _outside_narrow(self._dtype, other)):
                return binary(self, other, op)
            bk, shape = self._bk, self._shape
            out = getattr(bk, impl)(self._prim, float(other) if k == "float_" else other)  # type: ignore
        else:
            return binary(self, other, op)
        t = _new(tensor_cls)
        t._prim, t._device, t._bk, t._shape = out, self._device, bk, shape
        if out_bool:
            t._dtype, t._k = DType.bool, "bool_"
        else:
            t._dtype, t._k = self._dtype, k
        return t  # type: ignore[return-value]

    def reflected_method(self: TensorBase, other: object) -> Tensor:
        return binary(self, other, op, True)

    # (a commutative op's reflected form is the op itself: `0.5 * x` takes the hot path)
    fn = reflected_method if reflected and not op.commutative else method
    fn.__doc__ = doc or f"Elementwise `{name}` with a tensor or scalar (broadcasts)."
    return fn


def reduce(
    x: Tensor,
    name: str,
    dim: int | Iterable[int] | None,
    keepdim: bool,
    full: Callable[[Tensor], Tensor],
    per_dim: Callable[[Tensor, int], Tensor],
    no_dims_is_every: bool = True,
) -> Tensor:
    """A PyTorch-style reduction over all dims (`dim=None`) or over an int / tuple of dims.

    Args:
        x: the input.
        name: op name for errors.
        dim: None, a dim or dims (negative allowed); None or no dims: every dim.
        keepdim: keep the reduced dims with size 1.
        full: the reduction over all elements (0-d result).
        per_dim: the reduction over one dim, kept.
        no_dims_is_every: an empty tuple of dims reduces every dim (torch's sum, mean, amax),
            else none (torch's any / all: the input, as it is).
    Returns:
        The reduced tensor (a 0-d input takes dim 0 / -1 and gives a 0-d result, as torch).
    """
    if dim is None or (no_dims_is_every and every_dim(dim)):
        out = full(x)
        return out.reshape((1,) * x.ndim) if keepdim else out
    assert dim is not None  # (every_dim took None)
    shape = x.shape
    dims = norm_dims(name, dim, len(shape), scalar=True)
    if not shape:
        return full(x)
    for d in dims:
        x = per_dim(x, d)
    if keepdim:
        return x
    # (the reduced dims are 1: the backend's reshape, without the frontend's checks)
    return x._same("reshape", tuple([s for i, s in enumerate(x.shape) if i not in dims]))


def every_dim(dim: object) -> bool:
    """Whether a reduction's `dim` means every dim: None, or an empty tuple or list, as
    torch's sum / mean / amax / amin / var / std with ``dim=()`` reduce them all."""
    return dim is None or (isinstance(dim, tuple | list) and not dim)


def check_nonempty(name: str, x: TensorBase, dims: Iterable[int] | None = None) -> None:
    """Raise EmptyReductionError (a ValueRangeError and an IndexError, as torch raises) when
    reducing an empty extent (max / min / argmax of nothing), naming the empty dim reduced."""
    shape = x.shape
    if dims is None:
        if 0 in shape:
            raise EmptyReductionError(name, "cannot reduce an empty tensor", shape=shape)
        return
    for d in dims:
        if shape[d] == 0:
            raise EmptyReductionError(name, "cannot reduce an empty tensor", shape=shape,
                                      dim=d)
