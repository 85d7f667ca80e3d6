"""Layout: reshape, permute, expand, repeat, squeeze, narrow, split, roll, pad, tril; cat, stack."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Literal

import numpy as np

from burn.errors import BurnIndexError, DTypeError, ShapeError, ValueRangeError
from burn.frontend.base import TensorBase
from burn.frontend.validation import (
    check_device,
    norm_dim,
    norm_dims,
    promote_all,
    require_tensor,
)

if TYPE_CHECKING:
    from burn.frontend.tensor import Tensor


def _ints(op: str, args: Sequence[object]) -> tuple[int, ...]:
    """Varargs or one sequence of ints, as a tuple."""
    # (the frequent cases without copies: one tuple of ints, or ints as varargs)
    if len(args) == 1 and args[0].__class__ is tuple and all(
            a.__class__ is int for a in args[0]):
        return args[0]  # type: ignore[return-value]
    if args.__class__ is tuple and all(a.__class__ is int for a in args):
        return args  # type: ignore[return-value]
    if len(args) == 1 and (args[0].__class__ in (tuple, list)  # (before the ABC's check)
                           or isinstance(args[0], Sequence | np.ndarray)):
        args = tuple(args[0])
    ints = []
    for a in args:
        if not isinstance(a, int | np.integer) or isinstance(a, bool):
            raise DTypeError(op, "expected ints", args=args)
        ints.append(int(a))
    return tuple(ints)


class LayoutMixin(TensorBase):
    """Shape-changing methods of `burn.Tensor`."""

    __slots__ = ()

    def reshape(self, *shape: int | Sequence[int]) -> Tensor:
        """The same elements in a new shape; one size may be -1 (inferred). A 0 keeps the
        input's size at that position (Burn) when the input has elements (a zero size could not
        hold them); for an empty input, or past the input's rank, 0 is a zero size (PyTorch).

        Raises:
            ShapeError: when the element counts differ or -1 is ambiguous.
        """
        new = _ints("reshape", shape)
        old = self.shape
        numel = math.prod(old)
        if numel and 0 in new:
            new = tuple(old[i] if s == 0 and i < len(old) else s for i, s in enumerate(new))
        if -1 in new:
            known = math.prod(s for s in new if s != -1)
            if new.count(-1) > 1 or known == 0 or numel % known:
                raise ShapeError("reshape", "cannot infer the -1 size", shape=old, target=new)
            new = tuple(numel // known if s == -1 else s for s in new)
        if any(s < 0 for s in new) or math.prod(new) != numel:
            raise ShapeError("reshape", "element counts differ", shape=old, target=new)
        return self._same("reshape", new)

    view = reshape

    def reshape_as(self, other: Tensor) -> Tensor:
        """`reshape(other.shape)` (torch.Tensor.reshape_as).

        Raises:
            DTypeError: for an `other` that is not a Tensor.
            ShapeError: when the element counts differ.
        """
        return self._reshape_as("reshape_as", other)

    def view_as(self, other: Tensor) -> Tensor:
        """`view(other.shape)`, the same as `reshape_as` (tensors are values: see `clone`)."""
        return self._reshape_as("view_as", other)

    def _reshape_as(self, op: str, other: object) -> Tensor:
        shape = require_tensor(op, other, self._dtype).shape
        if math.prod(shape) != math.prod(self.shape):
            raise ShapeError(op, "element counts differ", shape=self.shape, target=shape,
                             dtype=self._dtype.value)
        return self._same("reshape", shape)  # (a tensor's shape: nothing left to resolve)

    def swap_dims(self, dim0: int, dim1: int) -> Tensor:
        """Swap two dims (a 0-d tensor takes dim 0 / -1 and keeps its values, as torch)."""
        n = self.ndim
        d0, d1 = (norm_dim("swap_dims", d, n, scalar=True) for d in (dim0, dim1))
        return self._same("swap_dims", d0, d1) if n else self.clone()

    swapaxes = swapdims = swap_dims

    def transpose(self, dim0: int | None = None, dim1: int | None = None) -> Tensor:
        """Without dims, Burn's `transpose()`: the last two dims swapped (`t`); with both,
        torch's `transpose(dim0, dim1)` (`swap_dims`).

        Raises:
            ValueRangeError: for one dim without the other.
        """
        if dim0 is None and dim1 is None:
            return self.t()
        if dim0 is None or dim1 is None:
            raise ValueRangeError("transpose", "give both dims or neither", dim0=dim0,
                                  dim1=dim1)
        return self.swap_dims(dim0, dim1)

    def t(self) -> Tensor:
        """Swap the last two dims (Burn's `t` / `transpose()`); 0-d and 1-d tensors keep their
        values (torch.Tensor.t)."""
        return self.swap_dims(-2, -1) if self.ndim >= 2 else self.clone()

    @property
    def T(self) -> Tensor:  # noqa: N802 - PyTorch's and NumPy's name
        """Every dim reversed (``permute(n-1, ..., 0)``, torch.Tensor.T); 0-d and 1-d tensors
        keep their values. Unlike PyTorch, no deprecation warning above 2 dims."""
        n = self.ndim
        return self.permute(*range(n - 1, -1, -1)) if n >= 2 else self.clone()

    @property
    def mT(self) -> Tensor:  # noqa: N802 - PyTorch's name
        """The last two dims swapped (torch.Tensor.mT), for batches of matrices.

        Raises:
            ShapeError: for fewer than 2 dims.
        """
        if self.ndim < 2:
            raise ShapeError("mT", "needs at least 2 dims", shape=self.shape)
        return self.swap_dims(-2, -1)

    def clone(self) -> Tensor:
        """A new tensor of the same values (torch.Tensor.clone, Burn's clone): tensors are
        values here (`t[...] = v` gives `t` new contents, never its clones'), so the clone shares
        the storage, as Burn's does, and gradients flow through it to this tensor."""
        t = self._wrap(self._prim)
        t._shape = self._shape
        return t

    def contiguous(self) -> Tensor:
        """The same values in row-major order in memory (torch.Tensor.contiguous): itself where
        its storage already is (a view stays a view), else a dense copy; what DLPack and
        `np.asarray` then share is row-major."""
        return self.reshape(-1).reshape(self.shape)

    def slice_dim(self, dim: int, index: slice | int) -> Tensor:
        """Burn's slice_dim: `index` (a slice with steps / negatives, or an int kept as a size-1
        range) along `dim`, every other dim whole.

        Raises:
            BurnIndexError: for a dim or an int index out of range.
        """
        d = norm_dim("slice_dim", dim, self.ndim)
        if isinstance(index, int):
            n = self.shape[d]
            if not -n <= index < n:
                raise BurnIndexError("slice_dim", "index out of range", shape=self.shape,
                                     dim=dim, index=index)
            index = slice(index % n, index % n + 1)
        return self[(slice(None),) * d + (index,)]  # type: ignore[index]

    def select_dim(self, dim: int, index: int) -> Tensor:
        """Burn's select_dim: the slice at `index` along `dim`, that dim dropped."""
        return self.slice_dim(dim, index).squeeze(norm_dim("select_dim", dim, self.ndim))

    def permute(self, *dims: int | Sequence[int]) -> Tensor:
        """Reorder the dims.

        Raises:
            ShapeError: when `dims` is not a permutation of the dims.
        """
        axes = _ints("permute", dims)
        n = self.ndim
        if len(axes) != n:
            raise ShapeError("permute", "need one entry per dim", shape=self.shape, dims=axes)
        if sorted(axes) != list(range(n)):  # negative, repeated or out-of-range dims
            norm_dims("permute", axes, n)  # rejects repeats
            axes = tuple([norm_dim("permute", d, n) for d in axes])
        return self._same("permute", axes)

    def flip(self, dims: int | Sequence[int], *more: int) -> Tensor:
        """Reverse the order of elements along `dims`: a dim, a sequence of them, or dims as
        separate arguments (``x.flip(0, 1)``, as torch.Tensor.flip).

        Raises:
            DTypeError: for dims that are not ints.
            BurnIndexError: for a dim out of range or given twice.
        """
        axes = norm_dims("flip", _ints("flip", (dims, *more)) if more else dims, self.ndim,
                         scalar=True)
        return self._same("flip", axes) if self.ndim else self._wrap(self._prim)

    def expand(self, *shape: int | Sequence[int]) -> Tensor:
        """Broadcast to `shape` (NumPy rules; new dims on the left; -1 keeps a size).

        Raises:
            ShapeError: when a size other than 1 would change.
        """
        return self._expand("expand", _ints("expand", shape))

    def expand_as(self, other: Tensor) -> Tensor:
        """`expand(other.shape)` (torch.Tensor.expand_as).

        Raises:
            DTypeError: for an `other` that is not a Tensor.
            ShapeError: when self does not broadcast to other's shape.
        """
        return self._expand("expand_as", require_tensor("expand_as", other, self._dtype).shape)

    def _expand(self, op: str, target: tuple[int, ...]) -> Tensor:
        """`expand` to `target`; errors name `op`."""
        old = self.shape
        if len(target) < len(old):
            raise ShapeError(op, "target has fewer dims", shape=old, target=target)
        lead = len(target) - len(old)
        out = list(target)
        for i, size in enumerate(old):
            t = target[lead + i]
            if t == -1:
                out[lead + i] = size
            elif size not in (1, t):
                raise ShapeError(op, "only size-1 dims can grow", shape=old, target=target)
        if any(s < 0 for s in out):
            raise ShapeError(op, "-1 only allowed on existing dims", shape=old, target=target)
        return self._same("expand", tuple(out))

    def repeat_dim(self, dim: int, times: int) -> Tensor:
        """Tile `times` copies along `dim`."""
        if times < 0:
            raise ValueRangeError("repeat_dim", "times must be non-negative", times=times)
        return self._same("repeat_dim", norm_dim("repeat_dim", dim, self.ndim), times)

    def repeat(self, *times: int | Sequence[int]) -> Tensor:
        """Tile along dims 0, 1, ... (Burn's `repeat`): counts start at dim 0, dims without a
        count stay, counts past the last dim must be 1. PyTorch aligns counts to the last dim
        and adds leading dims for extra counts: `x.reshape((1,) * k + x.shape).repeat(...)`.

        Raises:
            ShapeError: for a count other than 1 past the last dim.
            ValueRangeError: for a negative count.
        """
        reps = _ints("repeat", times)
        shape = self.shape
        if any(r != 1 for r in reps[len(shape):]):
            raise ShapeError("repeat", "counts past the last dim must be 1", shape=shape,
                             times=reps)
        x = self._tensor()
        for d, r in enumerate(reps[:len(shape)]):
            if r != 1:
                x = x.repeat_dim(d, r)
        return self._distinct(x)

    def unfold(self, dim: int, size: int, step: int) -> Tensor:
        """Windows of `size` every `step` along `dim`, as a new last dim (torch.unfold).

        Raises:
            ValueRangeError: for a non-positive step or a window larger than the dim.
        """
        shape = self.shape
        d = norm_dim("unfold", dim, len(shape))
        if step <= 0 or size < 0 or size > (shape[d] if shape else 1):
            raise ValueRangeError("unfold", "need 0 <= size <= dim size and step > 0",
                                  shape=shape, dim=dim, size=size, step=step)
        return self._same("unfold", d, size, step)

    def squeeze(self, dim: int | Sequence[int] | None = None) -> Tensor:
        """Drop size-1 dims: all of them, or those of `dim` that have size 1 (as torch)."""
        shape = self.shape
        dims = range(len(shape)) if dim is None else norm_dims("squeeze", dim, len(shape),
                                                                scalar=True)
        if not shape:
            return self.reshape(())
        drop = {d for d in dims if shape[d] == 1}
        return self.reshape(tuple(s for i, s in enumerate(shape) if i not in drop))

    def squeeze_dim(self, dim: int) -> Tensor:
        """Burn's squeeze_dim: drop `dim`, which must have size 1.

        Raises:
            ShapeError: when the dim's size is not 1.
        """
        return self.squeeze_dims((dim,))

    def squeeze_dims(self, dims: Sequence[int] = ()) -> Tensor:
        """Burn's squeeze_dims: drop `dims` (each of size 1); no dims drops every size-1 dim.

        Raises:
            ShapeError: when a given dim's size is not 1.
        """
        shape = self.shape
        if not dims:
            return self.squeeze()
        axes = norm_dims("squeeze_dims", dims, len(shape))
        if any(shape[d] != 1 for d in axes):
            raise ShapeError("squeeze_dims", "only size-1 dims can be dropped", shape=shape,
                             dims=tuple(dims))
        return self.reshape(tuple(s for i, s in enumerate(shape) if i not in axes))

    def unsqueeze_dim(self, dim: int) -> Tensor:
        """Burn's unsqueeze_dim: `unsqueeze(dim)`."""
        return self.unsqueeze(dim)

    def unsqueeze_dims(self, dims: Sequence[int]) -> Tensor:
        """Burn's unsqueeze_dims: size-1 dims at the positions `dims` of the result
        (negatives count from the result's end).

        Raises:
            BurnIndexError: for a position out of range or repeated.
        """
        shape = self.shape
        rank = len(shape) + len(dims)
        axes = set(norm_dims("unsqueeze_dims", dims, rank))
        rest = iter(shape)
        return self.reshape(tuple(1 if i in axes else next(rest) for i in range(rank)))

    def split_with_sizes(self, sizes: Sequence[int], dim: int = 0) -> list[Tensor]:
        """Burn's split_with_sizes: `split(sizes, dim)` (zero sizes give no piece)."""
        return self.split(list(sizes), dim)

    def unsqueeze(self, dim: int) -> Tensor:
        """Insert a size-1 dim at `dim` (in [-ndim - 1, ndim])."""
        shape = self.shape
        d = norm_dim("unsqueeze", dim, len(shape), extra=1)
        return self.reshape(shape[:d] + (1,) + shape[d:])

    def flatten(self, start_dim: int = 0, end_dim: int = -1) -> Tensor:
        """Merge dims `start_dim..end_dim` (inclusive) into one."""
        shape = self.shape
        if not shape:
            return self.reshape((1,))
        s, e = norm_dim("flatten", start_dim, len(shape)), norm_dim("flatten", end_dim, len(shape))
        if s > e:
            raise ValueRangeError("flatten", "start_dim comes after end_dim", shape=shape,
                                  start_dim=start_dim, end_dim=end_dim)
        return self.reshape(shape[:s] + (math.prod(shape[s:e + 1]),) + shape[e + 1:])

    def narrow(self, dim: int, start: int, length: int) -> Tensor:
        """Elements `start .. start + length` along `dim` (a negative start counts from the end).

        Raises:
            BurnIndexError: when the range does not fit in the dim.
        """
        shape = self.shape
        d = norm_dim("narrow", dim, len(shape))
        n = shape[d]
        if start < 0:
            start += n
        if not (0 <= start <= n and 0 <= length <= n - start):
            raise BurnIndexError("narrow", "range exceeds the dim", shape=shape, dim=dim,
                                 start=start, length=length)
        slices = [slice(0, s, 1) for s in shape[:d]] + [slice(start, start + length, 1)]
        return self._same("slice", slices)

    def chunk(self, chunks: int, dim: int = 0) -> list[Tensor]:
        """Split into at most `chunks` pieces of size ceil(n / chunks) (as torch: an empty dim
        gives `chunks` empty pieces)."""
        if chunks <= 0:
            raise ValueRangeError("chunk", "chunks must be positive", chunks=chunks)
        d = norm_dim("chunk", dim, self.ndim)
        n = self.shape[d]
        if n == 0:
            return self._pieces(d, [0] * chunks)
        return self.split(-(-n // chunks), dim)

    def split(self, split_size_or_sections: int | Sequence[int], dim: int = 0) -> list[Tensor]:
        """Pieces of one size (the last may be smaller) or of the given sizes along `dim`.

        As Burn (PyTorch differs): an empty dim gives no pieces and zero sizes give no piece.

        Raises:
            ShapeError: when the given sizes do not sum to the dim's size.
            ValueRangeError: for a non-positive split size.
        """
        d = norm_dim("split", dim, self.ndim)
        n = self.shape[d]
        if isinstance(split_size_or_sections, int):
            size = split_size_or_sections
            if size <= 0:
                raise ValueRangeError("split", "split size must be positive", size=size)
            sizes = [min(size, n - i) for i in range(0, n, size)]
        else:
            sizes = list(split_size_or_sections)
            if sum(sizes) != n or any(s < 0 for s in sizes):
                raise ShapeError("split", "sizes must sum to the dim's size",
                                 shape=self.shape, dim=dim, sizes=sizes)
        return self._pieces(d, [s for s in sizes if s])

    def _pieces(self, d: int, sizes: Sequence[int]) -> list[Tensor]:
        """Consecutive narrows of `sizes` along dim `d`."""
        starts = np.cumsum([0, *sizes])[:len(sizes)]
        return [self.narrow(d, int(s), size) for s, size in zip(starts, sizes, strict=True)]

    def roll(self, shifts: int | Sequence[int], dims: int | Sequence[int] | None = None) -> Tensor:
        """Rotate elements along `dims` (all elements, flattened, when None) as Burn: a positive
        shift moves elements towards index 0 (`out[i] = x[(i + shift) % n]`); PyTorch's
        `roll(s)` is `roll(-s)` here. A dim may repeat: its shifts add up.

        Raises:
            ValueRangeError: when `shifts` and `dims` differ in length.
        """
        if dims is None:
            if not isinstance(shifts, int):
                raise ValueRangeError("roll", "one shift when dims is None", shifts=shifts)
            return self.flatten().roll(shifts, 0).reshape(self.shape)
        shift_t = (shifts,) if isinstance(shifts, int) else tuple(shifts)
        dim_t = (dims,) if isinstance(dims, int) else tuple(dims)
        if len(shift_t) != len(dim_t):
            raise ValueRangeError("roll", "need one shift per dim", shifts=shift_t, dims=dim_t)
        x = self._tensor()
        for s, dim in zip(shift_t, dim_t, strict=True):
            x = x.roll_dim(s, dim)
        return self._distinct(x)

    def roll_dim(self, shift: int, dim: int) -> Tensor:
        """Rotate along one dim, as Burn: `out[i] = x[(i + shift) % n]` (see `roll`)."""
        shape = self.shape
        d = norm_dim("roll_dim", dim, len(shape))
        n = shape[d]
        k = shift % n if n else 0
        if not k:
            return self.clone()
        return cat([self.narrow(d, k, n - k), self.narrow(d, 0, k)], d)

    def movedim(self, source: int | Sequence[int], destination: int | Sequence[int]) -> Tensor:
        """Move dims `source` to positions `destination`, the others keeping their order.

        Raises:
            ValueRangeError: when `source` and `destination` differ in length.
        """
        n = self.ndim
        src, dst = (tuple(norm_dim("movedim", d, n, scalar=True)
                          for d in ((a,) if isinstance(a, int) else a))
                    for a in (source, destination))
        norm_dims("movedim", src, n, scalar=True)  # rejects repeats
        norm_dims("movedim", dst, n, scalar=True)
        if len(src) != len(dst):
            raise ValueRangeError("movedim", "source and destination differ in length",
                                  source=source, destination=destination)
        if not n:
            return self.clone()  # a 0-d tensor takes dim 0 / -1 (as torch)
        order: list[int | None] = [None] * n
        for s, t in zip(src, dst, strict=True):
            order[t] = s
        rest = iter(d for d in range(n) if d not in src)
        return self.permute(tuple(next(rest) if o is None else o for o in order))

    def iter_dim(self, dim: int) -> Iterator[Tensor]:
        """The slices of size 1 along `dim`, in order (the dim is kept, as Burn)."""
        d = norm_dim("iter_dim", dim, self.ndim)
        return (self.narrow(d, i, 1) for i in range(self.shape[d]))

    def pad(self, pads: Sequence[int], value: float = 0,
            mode: Literal["constant", "reflect", "edge", "replicate"] = "constant") -> Tensor:
        """Pad; `pads` as torch's F.pad: (left, right) of the last dim first, then of the dim
        before, .... Modes (Burn's): "constant" fills `value` (negative pads crop); "reflect"
        mirrors without repeating the border (pads < the dim's size); "edge" (torch's
        "replicate", also accepted) repeats the border element.

        Raises:
            ShapeError: for an odd number of pads, more pads than dims, cropping too much, or
                reflect / edge pads the dim cannot supply.
            ValueRangeError: for an unknown mode, or negative reflect / edge pads.
        """
        shape = self.shape
        if len(pads) % 2 or len(pads) > 2 * len(shape):
            raise ShapeError("pad", "need an even number of pads, two per dim at most",
                             shape=shape, pads=tuple(pads))
        if mode != "constant":
            return self._pad_border(tuple(pads), mode)
        x = self._tensor()
        new = list(shape)
        region = [slice(0, s, 1) for s in shape]
        for i in range(len(pads) // 2):
            d = len(shape) - 1 - i
            lo, hi = pads[2 * i], pads[2 * i + 1]
            keep = shape[d] - max(-lo, 0) - max(-hi, 0)
            if keep < 0 or keep + max(lo, 0) + max(hi, 0) < 0:
                raise ShapeError("pad", "negative pads crop more than the dim", shape=shape,
                                 pads=tuple(pads))
            if lo < 0 or hi < 0:
                x = x.narrow(d, max(-lo, 0), keep)
            new[d] = keep + max(lo, 0) + max(hi, 0)
            region[d] = slice(max(lo, 0), max(lo, 0) + keep, 1)
        if tuple(new) == x.shape:
            return self._distinct(x)
        base = x._full(tuple(new), value)
        return base._same("slice_assign", region, x._prim)

    def _pad_border(self, pads: tuple[int, ...], mode: str) -> Tensor:
        """`pad` in "reflect" or "edge" mode (see `pad`)."""
        if mode not in ("reflect", "edge", "replicate"):
            raise ValueRangeError("pad", "mode must be 'constant', 'reflect' or 'edge'",
                                  mode=mode)
        if any(p < 0 for p in pads):
            raise ValueRangeError("pad", f"{mode} pads must be non-negative", pads=pads)
        shape = self.shape
        x = self._tensor()
        for i in range(len(pads) // 2):
            d = len(shape) - 1 - i
            lo, hi, n = pads[2 * i], pads[2 * i + 1], shape[d]
            if not lo and not hi:
                continue
            if mode == "reflect" and max(lo, hi) >= n or n == 0:
                raise ShapeError("pad", f"{mode} pads must be smaller than the dim's size"
                                 if mode == "reflect" else "cannot pad an empty dim by its edge",
                                 shape=shape, pads=pads, dim=d)
            if mode == "reflect":
                parts = [x.narrow(d, 1, lo).flip(d), x, x.narrow(d, n - 1 - hi, hi).flip(d)]
            else:
                parts = [x.narrow(d, 0, 1).repeat_dim(d, lo), x,
                         x.narrow(d, n - 1, 1).repeat_dim(d, hi)]
            x = cat(parts, d)
        return self._distinct(x)

    def _triangle(self, op: str, diagonal: int, lower: bool) -> Tensor:
        shape = self.shape
        if len(shape) < 2:
            raise ShapeError(op, "need at least 2 dims", shape=shape)
        (diagonal,) = _ints(op, (diagonal,))  # tril(0.5) kept everything: np.tri's k=0.5
        from burn.frontend.grids import tri_mask  # (grids builds on this module)

        # (the mask compared on the device from two aranges, read as a broadcast view)
        mask = tri_mask(op, shape, diagonal, "l" if lower else "u", self._device)
        return self.mask_fill(mask, False if self._k == "bool_" else 0)  # type: ignore[attr-defined]

    def tril(self, diagonal: int = 0) -> Tensor:
        """Zero the elements above the `diagonal`-th diagonal of the last two dims."""
        return self._triangle("tril", diagonal, True)

    def triu(self, diagonal: int = 0) -> Tensor:
        """Zero the elements below the `diagonal`-th diagonal of the last two dims."""
        return self._triangle("triu", diagonal, False)


def _tensor_list(op: str, tensors: object) -> list[Tensor]:
    """`tensors` as a list, checked to be a non-empty sequence (list / tuple) of tensors.

    Raises:
        DTypeError: for a tensor or another non-sequence, or elements that are not tensors.
        ValueRangeError: for an empty sequence.
    """
    if not isinstance(tensors, Sequence) or isinstance(tensors, str):
        raise DTypeError(op, "expected a sequence of tensors", tensors=type(tensors).__name__)
    ts = list(tensors)
    if not ts:
        raise ValueRangeError(op, "expected a non-empty sequence of tensors")
    if not all(isinstance(t, TensorBase) for t in ts):
        raise DTypeError(op, "expected tensors", types=[type(t).__name__ for t in ts])
    return ts


def cat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """Concatenate tensors along an existing dim (dtypes promote).

    Args:
        tensors: non-empty sequence of tensors of one device and rank.
        dim: the dim to join along.
    Returns:
        The joined tensor.
    Raises:
        ValueRangeError: for an empty sequence.
        ShapeError: when ranks or sizes outside `dim` differ.
    """
    ts = _tensor_list("cat", tensors)
    for t in ts[1:]:
        check_device("cat", ts[0], t)
    shapes = [t.shape for t in ts]
    d = norm_dim("cat", dim, len(shapes[0]))
    for s in shapes:
        if len(s) != len(shapes[0]) or s[:d] + s[d + 1:] != shapes[0][:d] + shapes[0][d + 1:]:
            raise ShapeError("cat", "sizes must match except along dim", dim=dim, shapes=shapes)
    dtype = promote_all(t._dtype for t in ts)
    ts = [t._cast(dtype) for t in ts]
    return ts[0]._wrap(ts[0]._fn("cat")([t._prim for t in ts], d))


def stack(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """Join tensors of one shape along a new dim.

    Args:
        tensors: non-empty sequence of tensors of one shape.
        dim: position of the new dim (in [-ndim - 1, ndim]).
    Returns:
        The stacked tensor.
    Raises:
        ShapeError: when the shapes differ.
    """
    ts = _tensor_list("stack", tensors)
    shapes = [t.shape for t in ts]
    if any(s != shapes[0] for s in shapes):
        raise ShapeError("stack", "all tensors must have the same shape", shapes=shapes)
    d = norm_dim("stack", dim, len(shapes[0]), extra=1)
    return cat([t.unsqueeze(d) for t in ts], d)
