"""Indexing: t[...] / t[...] = v, select, gather, scatter, masks, where, argwhere, one_hot."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, cast

import numpy as np

from burn.dtype import DEFAULT_INT, DType, Kind, promote
from burn.errors import BurnIndexError, DTypeError, ShapeError, ValueRangeError
from burn.frontend.base import TensorBase
from burn.frontend.validation import (
    as_scalar,
    broadcast_shapes,
    check_device,
    check_fill_value,
    norm_dim,
    promote_tensors,
    require_kind,
    scalar_dtype,
)

if TYPE_CHECKING:
    from burn.frontend.tensor import Tensor

Index = int | slice | None | Any  # also Ellipsis, Tensors, lists / arrays of ints or bools


@dataclass(slots=True)
class _Plan:
    """A parsed index: basic slices of the input, the view shape after ints / None, and the
    advanced (int tensor) indices as (position in that view, index tensor)."""

    slices: list[slice]
    region: tuple[int, ...]  # shape of the sliced region (ints keep a size-1 dim)
    view: tuple[int, ...]  # shape after dropping int dims and inserting None dims
    advanced: list[tuple[int, TensorBase]]


#: Ops indexing with `t[...]`, whose index of a wrong dtype is torch's IndexError; the others
#: (select, gather, scatter, ...) raise torch's RuntimeError there: DTypeError here.
_SUBSCRIPTS = ("getitem", "setitem")


def _index_dtype_error(op: str, what: str, dtype: str) -> BurnIndexError | DTypeError:
    """The error for an index of a wrong dtype: BurnIndexError for `t[...]`, else DTypeError."""
    return (BurnIndexError if op in _SUBSCRIPTS else DTypeError)(op, what, dtype=dtype)


def _as_index_tensor(x: TensorBase, item: object, op: str) -> TensorBase:
    subscript = op in _SUBSCRIPTS
    if isinstance(item, TensorBase):
        check_device(op, x, item)
        if item._k == "float_":
            raise _index_dtype_error(op, "index tensors must be int or bool" if subscript
                                     else "indices must be an int tensor", item._dtype.value)
        return item
    arr = np.asarray(item)
    if arr.dtype == np.bool_:
        return x._wrap(x._bk.bool_from_data(arr, x._device), DType.bool)
    if arr.dtype.kind not in "iu" and arr.size:
        raise _index_dtype_error(op, "index sequences must hold ints" + (
            " or bools" if subscript else ""), str(arr.dtype))
    return x._wrap(x._bk.int_from_data(arr.astype(np.int64), x._device), DEFAULT_INT)


def _norm_slice(s: slice, n: int, op: str) -> tuple[slice, int]:
    """A slice in the protocol's form (start >= 0, stop >= 0 or None) and its length."""
    if s.step == 0:
        raise ValueRangeError(op, "slice step cannot be zero", index=s)
    start, stop, step = s.indices(n)
    length = len(range(start, stop, step))
    if length == 0:
        return slice(0, 0, 1), 0
    last = start + (length - 1) * step
    if step > 0:
        return slice(start, last + 1, step), length
    return slice(start, last - 1 if last > 0 else None, step), length


def checked_indices(op: str, idx: TensorBase, size: int, wrap_negative: bool = True
                    ) -> TensorBase:
    """`idx` (int tensor) with negative entries wrapped, after a range check against `size`;
    the backend decides where the check runs (`Backend.check_indices`: on the host at once for
    the NumPy backend, on the device for device backends).

    Args:
        op: the op the indices serve, for errors.
        idx: the indices.
        size: the extent indexed.
        wrap_negative: accept [-size, size) (else only [0, size)).
    Raises:
        DTypeError: for a non-int tensor (BurnIndexError for `t[...]`, as torch's IndexError).
        BurnIndexError: for an index out of range.
    """
    if idx._k != "int_":
        raise _index_dtype_error(op, "indices must be an int tensor", idx._dtype.value)
    out = idx._bk.check_indices(op, idx._prim, size, wrap_negative)
    return idx if out is idx._prim else idx._wrap(out)


def _parse(x: TensorBase, index: object, op: str) -> _Plan:
    items = list(index) if isinstance(index, tuple) else [index]
    shape = x.shape
    for i, item in enumerate(items):
        if isinstance(item, bool):
            raise BurnIndexError(op, "bool scalars are not supported as indices", index=index)
        if not (item is None or item is Ellipsis or isinstance(item, int | np.integer | slice)):
            items[i] = _as_index_tensor(x, item, op)
    consumed = sum(it.ndim if isinstance(it, TensorBase) and it._k == "bool_" else
                   0 if it is None or it is Ellipsis else 1 for it in items)
    ellipses = sum(it is Ellipsis for it in items)
    if ellipses > 1 or consumed > len(shape):
        raise BurnIndexError(op, "too many indices" if ellipses < 2 else "more than one '...'",
                             shape=shape, index=index)
    at = next((i for i, it in enumerate(items) if it is Ellipsis), len(items))
    items[at:at + ellipses] = [slice(None)] * (len(shape) - consumed)
    slices: list[slice] = []
    region: list[int] = []
    view: list[int] = []
    advanced: list[tuple[int, TensorBase]] = []
    d = 0
    for item in items:
        if item is None:
            view.append(1)
        elif isinstance(item, slice):
            s, length = _norm_slice(item, shape[d], op)
            slices.append(s)
            region.append(length)
            view.append(length)
            d += 1
        elif isinstance(item, TensorBase) and item._k == "bool_":
            k = item.ndim
            if item.shape != shape[d:d + k]:
                raise BurnIndexError(op, "mask shape does not match the indexed dims",
                                     shape=shape, mask=item.shape, dim=d)
            for j, coords in enumerate(item._coords()):  # type: ignore[attr-defined]
                advanced.append((len(view) + j, coords))
            for n in shape[d:d + k]:
                slices.append(slice(0, n, 1))
                region.append(n)
                view.append(n)
            d += k
        elif isinstance(item, TensorBase):
            advanced.append((len(view), checked_indices(op, item, shape[d])))
            slices.append(slice(0, shape[d], 1))
            region.append(shape[d])
            view.append(shape[d])
            d += 1
        else:  # an int: the first loop made every other index a tensor
            i = int(cast("int | np.integer", item))
            if not -shape[d] <= i < shape[d]:
                raise BurnIndexError(op, "index out of range", index=i, dim=d, size=shape[d])
            i %= shape[d]
            slices.append(slice(i, i + 1, 1))
            region.append(1)
            d += 1
    return _Plan(slices, tuple(region), tuple(view), advanced)


@dataclass(slots=True)
class _Advanced:
    """Layout of an advanced index: the indexed dims moved to the front and flattened."""

    perm: tuple[int, ...]  # view dims -> [indexed dims..., other dims...]
    front: tuple[int, ...]  # sizes of the indexed dims
    rest: tuple[int, ...]  # sizes of the other dims
    batch: tuple[int, ...]  # broadcast shape of the index tensors
    flat: TensorBase  # flat int64 index into prod(front), shape [prod(batch)]
    at: int  # where the batch dims go in the result (0 unless the indexed dims are adjacent)


def _advanced(op: str, view: tuple[int, ...], adv: list[tuple[int, TensorBase]]) -> _Advanced:
    dims = [p for p, _ in adv]
    if len(set(dims)) != len(dims):
        raise BurnIndexError(op, "one index tensor per dim", dims=dims)
    others = [i for i in range(len(view)) if i not in dims]
    front = tuple(view[p] for p in dims)
    batch = broadcast_shapes(op, *(t.shape for _, t in adv))
    flat: TensorBase | None = None
    stride = 1
    for (_, t), n in zip(reversed(adv), reversed(front), strict=True):
        term = t._cast(DEFAULT_INT).expand(batch)  # type: ignore[attr-defined]
        term = term * stride if stride != 1 else term
        flat = term if flat is None else flat + term
        stride *= n
    assert flat is not None
    adjacent = dims == list(range(dims[0], dims[0] + len(dims)))
    return _Advanced(tuple(dims + others), front, tuple(view[i] for i in others), batch,
                     flat.reshape((math.prod(batch),)),  # type: ignore[attr-defined]
                     dims[0] if adjacent else 0)


def _batch_perm(a: _Advanced) -> tuple[int, ...]:
    """Permutation from [batch..., rest...] to the result layout (batch dims at `a.at`)."""
    nb, order = len(a.batch), list(range(len(a.batch), len(a.batch) + len(a.rest)))
    return tuple(order[:a.at] + list(range(nb)) + order[a.at:])


class IndexingMixin(TensorBase):
    """Indexing methods of `burn.Tensor`."""

    __slots__ = ()

    def __getitem__(self, index: Index) -> Tensor:
        """NumPy / PyTorch indexing: ints (drop the dim), slices (steps, negatives), `...`,
        None (new dim), int tensors or lists (select) and bool masks (mask_select).

        Raises:
            BurnIndexError: for too many indices or an index out of range.
        """
        plan = _parse(self, index, "getitem")
        y: Tensor = self  # type: ignore[assignment]
        if plan.region != self.shape or any(s.step != 1 for s in plan.slices):
            y = y._same("slice", plan.slices)
        if plan.view != plan.region:
            y = y.reshape(plan.view)
        if not plan.advanced:
            return y if y is not self else self._same("slice", plan.slices)
        a = _advanced("getitem", plan.view, plan.advanced)
        z = y.permute(a.perm).reshape((math.prod(a.front),) + a.rest)
        out = z._same("select", 0, a.flat._prim).reshape(a.batch + a.rest)
        return out.permute(_batch_perm(a)) if a.at else out

    def __setitem__(self, index: Index, value: Tensor | float) -> None:
        """Assign `value` (broadcast, cast to this dtype) to the indexed elements; replaces this
        tensor's primitive (a recorded slice_assign / scatter under autodiff).

        Raises:
            ShapeError: when `value` does not broadcast to the indexed shape.
        """
        v = self._value_tensor("setitem", value)
        if (isinstance(index, TensorBase) and index._k == "bool_" and index.shape == self.shape
                and math.prod(v.shape) == 1):
            self._prim = self.mask_where(index._tensor(), v.reshape(()))._prim
            return
        plan = _parse(self, index, "setitem")
        if not plan.advanced:
            target = plan.view
            self._check_fits("setitem", v.shape, target)
            v = v.expand(target).reshape(plan.region)
            self._prim = self._fn("slice_assign")(self._prim, plan.slices, v._prim)
            return
        a = _advanced("setitem", plan.view, plan.advanced)
        result = a.batch + a.rest
        if a.at:
            perm = _batch_perm(a)
            result = tuple(result[p] for p in perm)
        self._check_fits("setitem", v.shape, result)
        v = v.expand(result)
        if a.at:
            v = v.permute(tuple(np.argsort(_batch_perm(a))))
        rows = (math.prod(a.batch),)
        v = v.reshape(rows + a.rest)
        region = self._same("slice", plan.slices).reshape(plan.view)
        z = region.permute(a.perm).reshape((math.prod(a.front),) + a.rest)
        idx = a.flat.reshape(rows + (1,) * len(a.rest)).expand(rows + a.rest)  # type: ignore
        z = z.scatter(0, idx, v)
        back = z.reshape(a.front + a.rest).permute(tuple(np.argsort(a.perm)))
        self._prim = self._fn("slice_assign")(self._prim, plan.slices,
                                              back.reshape(plan.region)._prim)

    def _value_tensor(self, op: str, value: object) -> Tensor:
        """`value` (Tensor or scalar) as a tensor of this dtype on this device."""
        return self._value(value, self._dtype, op)

    def _value(self, value: object, dtype: DType, op: str) -> Tensor:
        """`value` (Tensor or scalar) as a tensor of `dtype` on this device."""
        if isinstance(value, TensorBase):
            check_device(op, self, value)
            return value._cast(dtype)
        value = as_scalar(value)
        scalar_dtype(op, dtype, value)  # rejects non-scalars
        check_fill_value(op, dtype, value)  # type: ignore[arg-type]
        return self._full((), value, dtype)

    @staticmethod
    def _check_fits(op: str, shape: tuple[int, ...], target: tuple[int, ...]) -> None:
        if len(shape) > len(target) or broadcast_shapes(op, shape, target) != target:
            raise ShapeError(op, "value cannot be broadcast to the indexed shape", value=shape,
                             indexed=target)

    def slice_assign(self, slices: Sequence[slice | int], values: Tensor | float) -> Tensor:
        """A copy with the region `self[slices]` replaced by `values` (broadcast)."""
        out = self._wrap(self._prim)
        out[tuple(slices)] = values
        return out

    def slice_fill(self, slices: Sequence[slice | int], value: float) -> Tensor:
        """Burn's slice_fill: a copy with the region `self[slices]` set to the scalar `value`."""
        return self.slice_assign(slices, value)

    def select(self, dim: int, indices: Tensor | Sequence[int]) -> Tensor:
        """Rows `indices` (1-d ints, negatives wrap) along `dim` (torch.index_select)."""
        d = norm_dim("select", dim, self.ndim)
        idx = checked_indices("select", _as_index_tensor(self, indices, "select"),
                              self.shape[d])
        if idx.ndim != 1:
            raise ShapeError("select", "indices must be 1-d", indices=idx.shape)
        return self._same("select", d, idx._prim)

    index_select = select

    def take(self, dim: int, indices: Tensor | Sequence[int]) -> Tensor:
        """Rows `indices` (ints of any shape, negatives wrap) along `dim`: the result's shape is
        `shape[:dim] + indices.shape + shape[dim + 1:]` (Burn's take, numpy.take with an axis;
        torch.take indexes the flattened tensor instead).

        Raises:
            BurnIndexError: for non-int or out-of-range indices.
        """
        d = norm_dim("take", dim, self.ndim)
        shape = self.shape
        idx = checked_indices("take", _as_index_tensor(self, indices, "take"), shape[d])
        flat = idx.reshape((-1,))  # type: ignore[attr-defined]
        return self._same("select", d, flat._prim).reshape(shape[:d] + idx.shape + shape[d + 1:])

    def select_assign(self, dim: int, indices: Tensor, values: Tensor,
                      update: Literal["add", "assign"] = "add") -> Tensor:
        """A copy with `values` added (update="add": torch.index_add; bool tensors
        or-accumulate, as Burn) or written (update="assign": torch.index_copy; which of repeated
        indices wins is undefined, as Burn) at rows `indices` along `dim`.

        Raises:
            ShapeError: when `values` is not the selected shape.
            ValueRangeError: for another `update`.
        """
        if update not in ("add", "assign"):
            raise ValueRangeError("select_assign", "update must be 'add' or 'assign'",
                                  update=update)
        d = norm_dim("select_assign", dim, self.ndim)
        idx = checked_indices("select_assign", _as_index_tensor(self, indices, "select_assign"),
                              self.shape[d])
        v = self._value_tensor("select_assign", values)
        want = self.shape[:d] + idx.shape + self.shape[d + 1:]
        if idx.ndim != 1 or v.shape != want:
            raise ShapeError("select_assign", "values must match the selected shape",
                             shape=self.shape, indices=idx.shape, values=v.shape)
        if update == "assign":
            view = [1] * self.ndim
            view[d] = idx.shape[0]
            rows = idx.reshape(tuple(view)).expand(v.shape)  # type: ignore[attr-defined]
            return self.scatter(d, rows, v)
        if self._k == "bool_":  # Burn: or-accumulate
            acc = self._cast(DType.int64)._same("select_assign", d, idx._prim,
                                                v._cast(DType.int64)._prim)
            return acc._cast(DType.bool)
        return self._same("select_assign", d, idx._prim, v._prim)

    def gather(self, dim: int, indices: Tensor) -> Tensor:
        """torch.gather: out[i][j] = self[indices[i][j]][j] for dim 0 (indices of self's rank;
        as torch, a 0-d input or index next to a 1-d or 0-d other counts as one element)."""
        shape = self.shape
        index = _as_index_tensor(self, indices, "gather")
        if len(shape) + len(index.shape) < 2 or (len(shape) == 1 and not index.shape):
            norm_dim("gather", dim, 1)
            flat = self._tensor().reshape((-1,)).gather(0, index._tensor().reshape((-1,)))
            return flat.reshape(index.shape)
        d = norm_dim("gather", dim, len(shape))
        idx = checked_indices("gather", index, shape[d])
        ishape = idx.shape
        if len(ishape) != len(shape) or any(
                i > s for k, (i, s) in enumerate(zip(ishape, shape, strict=True)) if k != d):
            raise ShapeError("gather", "indices must have the input's rank and fit in it",
                             shape=shape, indices=ishape, dim=dim)
        return self._wrap(self._fn("gather")(d, self._prim, idx._prim))

    def scatter(self, dim: int, indices: Tensor, values: Tensor | float,
                reduce: Literal["assign", "add"] = "assign") -> Tensor:
        """torch.scatter (reduce="assign") / scatter_add (reduce="add") on a copy; bool tensors
        or-accumulate with "add" (Burn; PyTorch refuses)."""
        shape = self.shape
        d = norm_dim("scatter", dim, len(shape))
        idx = checked_indices("scatter", _as_index_tensor(self, indices, "scatter"), shape[d])
        v = self._value_tensor("scatter", values)
        if not v.shape:
            v = v.expand(idx.shape)
        ishape = idx.shape
        if (len(ishape) != len(shape) or len(v.shape) != len(shape)
                or any(i > s for i, s in zip(ishape, v.shape, strict=True))
                or any(i > s for k, (i, s) in enumerate(zip(ishape, shape, strict=True))
                       if k != d)):
            raise ShapeError("scatter", "indices must fit in the input and the values",
                             shape=shape, indices=ishape, values=v.shape, dim=dim)
        if reduce not in ("assign", "add"):
            raise ValueRangeError("scatter", "reduce must be 'assign' or 'add'", reduce=reduce)
        if self._k == "bool_":
            if reduce == "add":  # Burn: or-accumulate
                return self._cast(DType.int64).scatter(d, idx._tensor(), v._cast(DType.int64),
                                                       "add")._cast(DType.bool)
            return self._wrap(self._bk.bool_scatter(d, self._prim, idx._prim, v._prim))
        return self._wrap(self._fn("scatter")(d, self._prim, idx._prim, v._prim, reduce))

    def scatter_add(self, dim: int, indices: Tensor, values: Tensor) -> Tensor:
        """torch.scatter_add on a copy."""
        return self.scatter(dim, indices, values, "add")

    def _flat_nd(self, op: str, indices: Tensor) -> tuple[Tensor, tuple[int, ...], Tensor]:
        """For gather_nd / scatter_nd: self as [prod(first k dims), *rest], the batch shape of
        `indices` [..., k], and the flat row of each index."""
        idx = _as_index_tensor(self, indices, op)
        require_kind(op, idx._dtype, Kind.INT)
        shape, ishape = self.shape, idx.shape
        if not ishape or not 1 <= ishape[-1] <= len(shape):
            raise ShapeError(op, "indices must be [..., k] with 1 <= k <= ndim", shape=shape,
                             indices=ishape)
        k = ishape[-1]
        cols = [checked_indices(op, c.reshape(ishape[:-1]), shape[j])  # type: ignore
                for j, c in enumerate(idx.chunk(k, -1))]  # type: ignore[attr-defined]
        adv = _advanced(op, shape, list(enumerate(cols)))
        table = self._tensor().reshape((math.prod(shape[:k]),) + shape[k:])
        return table, ishape[:-1], adv.flat  # type: ignore[return-value]

    def gather_nd(self, indices: Tensor) -> Tensor:
        """Elements (or slices) at `indices` [..., k] into the first k dims -> [..., *rest]."""
        table, batch, flat = self._flat_nd("gather_nd", indices)
        return table._same("select", 0, flat._prim).reshape(batch + table.shape[1:])

    def scatter_nd(self, indices: Tensor, values: Tensor | float,
                   reduce: Literal["assign", "add", "mul", "min", "max"] = "assign") -> Tensor:
        """A copy with `values` [..., *rest] combined at `indices` [..., k] into the first k
        dims: written ("assign"), added ("add", repeats accumulate), multiplied ("mul") or
        reduced with the current value ("min" / "max", Burn's min_pair / max_pair). As Burn,
        repeated indices are only defined for "add".

        Raises:
            ShapeError: for indices that are not [..., k] or values that do not broadcast.
            ValueRangeError: for another `reduce`.
        """
        if reduce not in ("assign", "add", "mul", "min", "max"):
            raise ValueRangeError("scatter_nd", "reduce must be 'assign', 'add', 'mul', 'min' "
                                  "or 'max'", reduce=reduce)
        table, batch, flat = self._flat_nd("scatter_nd", indices)
        rest = table.shape[1:]
        v = self._value_tensor("scatter_nd", values)
        self._check_fits("scatter_nd", v.shape, batch + rest)
        rows = (math.prod(batch),)
        v = v.expand(batch + rest).reshape(rows + rest)
        idx = flat.reshape(rows + (1,) * len(rest)).expand(rows + rest)
        if reduce == "add":
            return table.scatter(0, idx, v, "add").reshape(self.shape)
        if reduce != "assign":
            current = table._same("select", 0, flat._prim)
            v = (current * v if reduce == "mul" else current.min_pair(v) if reduce == "min"
                 else current.max_pair(v))
        return table.scatter(0, idx, v).reshape(self.shape)

    def mask_where(self, mask: Tensor, value: Tensor | float) -> Tensor:
        """Take `value` (tensor or scalar; broadcasts) where the bool `mask` is true, else self."""
        m = self._mask("mask_where", mask)
        if not isinstance(value, TensorBase):
            return self.mask_fill(m, value)
        check_device("mask_where", self, value)
        dtype = promote(self._dtype, value._dtype)
        x, v = self._cast(dtype), value._cast(dtype)
        shape = broadcast_shapes("mask_where", x.shape, m.shape, v.shape,
                                 dtypes=(x._dtype, m._dtype, v._dtype))
        if x.shape != shape:
            x = x.expand(shape)
        return x._same("mask_where", m._prim, v._prim)

    def where(self, condition: Tensor, other: Tensor | float) -> Tensor:
        """Self where the bool `condition` is true, else `other` (tensor or scalar; all three
        broadcast, self and other promote): torch's `x.where(condition, y)`,
        `burn.where(condition, self, other)`.

        Raises:
            DTypeError: when `condition` is not a bool tensor.
        """
        return where(condition, self._tensor(), other)

    def mask_fill(self, mask: Tensor, value: float) -> Tensor:
        """Fill `value` (a scalar) where the bool `mask` (broadcasts to self) is true; the
        result keeps self's dtype (as torch: 2.5 fills an int tensor with 2).

        Raises:
            ValueRangeError: for a nan / inf value on an int or bool tensor, a value outside
                [-2**63, 2**64) on an int tensor.
        """
        m = self._mask("mask_fill", mask)
        if isinstance(value, TensorBase):
            return self.mask_where(m, value)
        value = as_scalar(value)  # type: ignore[assignment]
        scalar_dtype("mask_fill", self._dtype, value)  # rejects non-scalars
        check_fill_value("mask_fill", self._dtype, value)  # type: ignore[arg-type]
        x = self._tensor()
        shape = broadcast_shapes("mask_fill", x.shape, m.shape)
        if shape != x.shape:
            x = x.expand(shape)
        if x._k == "bool_":
            return x._same("mask_where", m._prim, x._full((), value)._prim)
        return x._same("mask_fill", m._prim, float(value) if x._k == "float_" else int(value))

    masked_fill = mask_fill

    def _mask(self, op: str, mask: object) -> Tensor:
        if not isinstance(mask, TensorBase) or mask._k != "bool_":
            raise DTypeError(op, "mask must be a bool tensor", shape=self.shape,
                             mask=getattr(mask, "dtype", type(mask).__name__))
        check_device(op, self, mask)
        broadcast_shapes(op, self.shape, mask.shape, dtypes=(self._dtype, mask._dtype))
        return mask  # type: ignore[return-value]

    def mask_select(self, mask: Tensor) -> Tensor:
        """The elements where the bool `mask` (broadcast with self) is true, as a 1-d tensor."""
        m = self._mask("mask_select", mask)
        shape = broadcast_shapes("mask_select", self.shape, m.shape)
        flat = self._tensor().expand(shape).reshape((-1,))
        rows = m.expand(shape).reshape((-1,)).argwhere().reshape((-1,))
        return flat._same("select", 0, rows._prim)

    def argwhere(self) -> Tensor:
        """int64 [n, ndim] coordinates of the non-zero (true) elements, in row-major order."""
        b = self if self._k == "bool_" else self._cast(DType.bool)
        return b._wrap(b._bk.bool_argwhere(b._prim), DType.int64)

    def nonzero(self) -> list[Tensor]:
        """Coordinates of the non-zero elements: one 1-d int64 tensor per dim; an empty list
        when there are none (Burn; PyTorch gives empty tensors)."""
        coords = self._coords()
        return coords if coords and coords[0].shape[0] else []

    def _coords(self) -> list[Tensor]:
        """One 1-d int64 tensor of coordinates of the non-zero elements per dim (empty ones
        when there are none; none for a 0-d tensor)."""
        if not self.ndim:
            return []
        coords = self.argwhere()
        n = coords.shape[0]
        return [c.reshape((n,)) for c in coords.chunk(self.ndim, 1)]

    def one_hot(self, num_classes: int = -1) -> Tensor:
        """One-hot encoding along a new last dim (num_classes=-1: max + 1): int64 for int
        tensors (as torch), the input's dtype for float tensors (Burn; PyTorch refuses floats,
        whose values are truncated to class indices).

        Raises:
            DTypeError: for bool tensors or a non-int num_classes.
            ValueRangeError: for values outside [0, num_classes).
        """
        if self._k == "float_":
            return self._cast(DType.int64).one_hot(num_classes)._cast(self._dtype)
        require_kind("one_hot", self._dtype, Kind.INT)
        if not isinstance(num_classes, int | np.integer) or isinstance(num_classes, bool):
            raise DTypeError("one_hot", "num_classes must be an int", num_classes=num_classes)
        if num_classes < 0:  # the size depends on the values: read them (as torch does)
            data = self._bk.int_into_data(self._prim)
            if data.size and int(data.min()) < 0:
                raise ValueRangeError("one_hot", "class values must be non-negative",
                                      min=int(data.min()))
            num_classes = int(data.max()) + 1 if data.size else 0
        else:  # the backend checks where its data lives
            checked_indices("one_hot", self, num_classes, wrap_negative=False)
        return (self._cast(DType.int64).unsqueeze(-1) == self._classes(num_classes)
                )._cast(DType.int64)

    def _classes(self, num_classes: int) -> Tensor:
        """int64 [0, 1, ..., num_classes - 1] on this device."""
        return self._wrap(self._bk.int_arange(0, num_classes, 1, DType.int64, self._device),
                          DType.int64)

    def one_hot_fill(self, num_classes: int, on_value: float = 1.0, off_value: float = 0.0,
                     axis: int = -1) -> Tensor:
        """Burn's one_hot_fill: `on_value` at each value's class, `off_value` elsewhere, along a
        new dim at `axis`; negative values count from `num_classes` (-1: the last class); the
        result has the input's dtype (floats are truncated to class indices).

        Raises:
            DTypeError: for bool tensors or a non-int num_classes.
            ValueRangeError: for a negative num_classes.
            BurnIndexError: for values outside [-num_classes, num_classes).
        """
        require_kind("one_hot_fill", self._dtype, Kind.INT, Kind.FLOAT)
        if not isinstance(num_classes, int | np.integer) or isinstance(num_classes, bool):
            raise DTypeError("one_hot_fill", "num_classes must be an int",
                             num_classes=num_classes)
        if num_classes < 0:
            raise ValueRangeError("one_hot_fill", "num_classes must be non-negative",
                                  num_classes=num_classes)
        ax = norm_dim("one_hot_fill", axis, self.ndim, extra=1)
        idx = checked_indices("one_hot_fill", self._cast(DType.int64), num_classes)._tensor()
        shape = [1] * (self.ndim + 1)
        shape[ax] = num_classes
        hit = idx.unsqueeze(ax) == self._classes(num_classes).reshape(shape)
        return where(hit, on_value, off_value)._cast(self._dtype)

def where(condition: Tensor, x: Tensor | float, y: Tensor | float) -> Tensor:
    """Elementwise `x if condition else y`; all three broadcast, x and y promote.

    Raises:
        DTypeError: when `condition` is not a bool tensor.
    """
    if not isinstance(condition, TensorBase) or condition._k != "bool_":
        raise DTypeError("where", "condition must be a bool tensor",
                         condition=getattr(condition, "dtype", type(condition).__name__),
                         shape=getattr(condition, "shape", None))
    tensors = [t for t in (x, y) if isinstance(t, TensorBase)]
    dtype = promote_tensors(tensors) if tensors else DType.bool
    for s in (x, y):
        if not isinstance(s, TensorBase):
            dtype = scalar_dtype("where", dtype, as_scalar(s))
    xt, yt = (condition._value(s, dtype, "where") for s in (x, y))
    shape = broadcast_shapes("where", condition.shape, xt.shape, yt.shape,
                             dtypes=(condition._dtype, xt._dtype, yt._dtype))
    return yt.expand(shape).mask_where(condition, xt)


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """`tensor.one_hot(num_classes)`."""
    return tensor.one_hot(num_classes)
