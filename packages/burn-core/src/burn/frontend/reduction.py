"""Reductions (full, per dim, PyTorch-style over dims), cumulative ops, sort and topk."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, cast

from burn.dtype import DEFAULT_FLOAT, DType, Kind
from burn.errors import ShapeError, ValueRangeError
from burn.frontend.base import TensorBase
from burn.frontend.dispatch import check_nonempty, every_dim, reduce
from burn.frontend.validation import norm_dim, norm_dims, require_kind

if TYPE_CHECKING:
    from burn.frontend.tensor import Tensor

Dims = int | Iterable[int] | None


def _mean_all(t: Tensor) -> Tensor:
    """Mean of all elements (NaN for an empty tensor, as torch). float16 / bfloat16 take the
    mean of the flattened tensor along its dim, which accumulates in float32 and divides
    before rounding (their sum overflowed first: the mean of [60000, 60000] was inf)."""
    count = math.prod(t.shape)
    if count and t._dtype in (DType.float16, DType.bfloat16):
        return t.reshape(-1).mean_dim(0).reshape(())
    return t._wrap(t._bk.float_div_scalar(t._bk.float_sum(t._prim), float(count)))


class ReductionMixin(TensorBase):
    """Reduction methods of `burn.Tensor`."""

    __slots__ = ()

    # --- input conversions ---
    def _accumulable(self) -> Tensor:
        """Int and bool tensors accumulate in int64 (as torch's sum / prod / cumsum)."""
        return self if self._k == "float_" else self._cast(DType.int64)  # type: ignore[return-value]

    def _orderable(self) -> Tensor:
        """Bool tensors compare as int64 (values are cast back afterwards)."""
        return self if self._k != "bool_" else self._cast(DType.int64)  # type: ignore[return-value]

    def _dim(self, op: str, dim: int) -> int:
        return norm_dim(op, dim, self.ndim)

    def _along(self, op: str, dim: int) -> Tensor:
        """Backend `<kind>_<op>(x, dim)`; identity on 0-d tensors (dim 0 or -1, as torch)."""
        if not self.shape:
            norm_dim(op, dim, 0, scalar=True)
            return self._wrap(self._prim)
        return self._same(op, self._dim(op, dim))

    def _scalar_with_index(self, op: str, dim: int) -> tuple[Tensor, Tensor]:
        """(self, int64 index 0) of a 0-d tensor after checking `dim` is 0 or -1 (as torch)."""
        norm_dim(op, dim, 0, scalar=True)
        return self._wrap(self._prim), self._full((), 0, DType.int64)

    # --- sum / mean / prod ---
    def sum(self, dim: Dims = None, keepdim: bool = False) -> Tensor:
        """Sum over all dims or over `dim` (int or tuple); ints and bools sum into int64."""
        return reduce(self._accumulable(), "sum", dim, keepdim, lambda t: t._same("sum"),
                      lambda t, d: t._same("sum_dim", d))

    def sum_dim(self, dim: int) -> Tensor:
        """Sum over one dim, kept with size 1."""
        return self._accumulable()._along("sum_dim", dim)

    def mean(self, dim: Dims = None, keepdim: bool = False) -> Tensor:
        """Mean over all dims or over `dim` (int or tuple). Int tensors give Burn's int mean,
        the floor of sum / count in the input's dtype (PyTorch refuses ints).

        Raises:
            DTypeError: for bool tensors.
            ValueRangeError: for the int mean of an empty extent (no int NaN).
        """
        if self._k == "int_":
            return reduce(self._tensor(), "mean", dim, keepdim,
                          lambda t: t._int_mean(None), lambda t, d: t._int_mean(d))
        require_kind("mean", self._dtype, Kind.FLOAT)
        return reduce(self, "mean", dim, keepdim, _mean_all,  # type: ignore[arg-type]
                      lambda t, d: t._same("mean_dim", d))

    def mean_dim(self, dim: int) -> Tensor:
        """Mean over one dim, kept with size 1 (int tensors: see `mean`)."""
        if self._k == "int_":
            if not self.shape:
                return self._distinct(self._tensor())
            return self._int_mean(self._dim("mean_dim", dim))
        require_kind("mean_dim", self._dtype, Kind.FLOAT)
        return self._along("mean_dim", dim)

    def _int_mean(self, dim: int | None) -> Tensor:
        """Floor of sum / count over all elements (None) or one dim (kept), in self's dtype."""
        count = math.prod(self.shape) if dim is None else self.shape[dim]
        if count == 0:
            raise ValueRangeError("mean", "an int mean of nothing is undefined",
                                  shape=self.shape, dtype=self._dtype.value)
        total = self.sum() if dim is None else self.sum_dim(dim)
        return (total // count)._cast(self._dtype)

    def median(self, dim: int) -> Tensor:
        """The median along `dim`, kept with size 1; for an even count the lower of the two
        middle values (Burn and torch.median; float and int tensors); NaN where the line has
        a NaN (torch.median).

        Raises:
            EmptyReductionError: for an empty dim (an IndexError, as torch raises).
        """
        return self.median_with_indices(dim)[0]

    def median_with_indices(self, dim: int) -> tuple[Tensor, Tensor]:
        """`median` and the int64 index of that value along `dim` (both kept with size 1)."""
        require_kind("median", self._dtype, Kind.FLOAT, Kind.INT)
        if not self.shape:
            return self._scalar_with_index("median", dim)
        d = self._dim("median", dim)
        check_nonempty("median", self, (d,))
        values, indices = self.sort_with_indices(d)
        n = self.shape[d]
        mid = (n - 1) // 2
        if not self._dtype.is_float:
            return values.narrow(d, mid, 1), indices.narrow(d, mid, 1)
        # A line with NaN has the median NaN at its first NaN (torch): the sort is stable and
        # puts NaN last, so that one is at n - (its NaN count).
        nans = values.is_nan().int().sum_dim(d)
        at = (n - nans).mask_fill(nans == 0, mid)
        return values.gather(d, at), indices.gather(d, at)

    def cov(self, dim: int = 1, correction: int = 1) -> Tensor:
        """Covariance of the variables of the other dim, the observations along `dim` (Burn's
        cov; for a 2-d [variables, observations] x and dim=1, torch.cov(x, correction)):
        [k, k] for k variables.

        Raises:
            DTypeError: for a non-float tensor.
            ShapeError: for a tensor that is not 2-d.
        """
        require_kind("cov", self._dtype, Kind.FLOAT)
        if self.ndim != 2:
            raise ShapeError("cov", "need a 2-d tensor", shape=self.shape)
        d = self._dim("cov", dim)
        x = self._tensor()
        centered = (x - x.mean_dim(d)).swap_dims(d, 0)  # [observations, variables]
        return centered.transpose(0, 1) @ centered / float(self.shape[d] - correction)

    def prod(self, dim: Dims = None, keepdim: bool = False) -> Tensor:
        """Product over all dims or over `dim` (int or tuple); ints and bools in int64."""
        return reduce(self._accumulable(), "prod", dim, keepdim, lambda t: t._same("prod"),
                      lambda t, d: t._same("prod_dim", d))

    def prod_dim(self, dim: int) -> Tensor:
        """Product over one dim, kept with size 1."""
        return self._accumulable()._along("prod_dim", dim)

    def var(self, dim: Dims = None, correction: int = 1, keepdim: bool = False) -> Tensor:
        """Variance with `correction` (1: unbiased, as torch) over all dims or over `dim`.

        Raises:
            DTypeError: for int and bool tensors.
        """
        require_kind("var", self._dtype, Kind.FLOAT)
        shape = self.shape
        dims = tuple(range(len(shape))) if every_dim(dim) else norm_dims(
            "var", cast("int | Iterable[int]", dim), len(shape), scalar=True)
        dims = dims if shape else ()
        n = math.prod(shape[d] for d in dims)
        bk: Any = self._bk
        if dims and n and bk.is_autodiff:  # (one node, torch's backward rule: `var_dims`)
            reduced = tuple(sorted(dims))
            out = self._wrap(bk.var_dims(self._prim, reduced, correction))
            return out if keepdim else out.squeeze_dims(reduced)
        diff = self - self.mean(dims, keepdim=True)
        total = (diff * diff).sum(dims, keepdim=keepdim)
        return total / float(max(n - correction, 0))

    def _fold(self, op: str, dims: Sequence[int]) -> Tensor:
        """Burn's `<op>_dims`: `<op>_dim` over each of `dims` in turn (all kept)."""
        x = self._tensor()
        for d in dims:
            x = getattr(x, op + "_dim")(d)
        return self._distinct(x)

    def sum_dims(self, dims: Sequence[int]) -> Tensor:
        """Burn's sum_dims: sums over `dims`, kept with size 1."""
        return self._fold("sum", dims)

    def sum_dims_squeeze(self, dims: Sequence[int]) -> Tensor:
        """Burn's sum_dims_squeeze: sums over `dims`, dropped."""
        return self.sum_dims(dims).squeeze_dims(dims) if dims else self._distinct(self._tensor())

    def mean_dims(self, dims: Sequence[int]) -> Tensor:
        """Burn's mean_dims: means over `dims`, kept with size 1."""
        return self._fold("mean", dims)

    def prod_dims(self, dims: Sequence[int]) -> Tensor:
        """Burn's prod_dims: products over `dims`, kept with size 1."""
        return self._fold("prod", dims)

    def max_dims(self, dims: Sequence[int]) -> Tensor:
        """Burn's max_dims: maxima over `dims`, kept with size 1."""
        return self._fold("max", dims)

    def min_dims(self, dims: Sequence[int]) -> Tensor:
        """Burn's min_dims: minima over `dims`, kept with size 1."""
        return self._fold("min", dims)

    def max_abs_dims(self, dims: Sequence[int]) -> Tensor:
        """Burn's max_abs_dims: largest absolute values over `dims`, kept with size 1."""
        return self._fold("max_abs", dims)

    def var_bias(self, dim: int) -> Tensor:
        """Burn's var_bias: the population variance (correction 0) along `dim`, kept."""
        return self.var(dim, correction=0, keepdim=True)

    def var_mean(self, dim: int) -> tuple[Tensor, Tensor]:
        """Burn's var_mean: (unbiased variance, mean) along `dim`, both kept."""
        return self.var(dim, keepdim=True), self.mean(dim, keepdim=True)

    def var_mean_bias(self, dim: int) -> tuple[Tensor, Tensor]:
        """Burn's var_mean_bias: (population variance, mean) along `dim`, both kept."""
        return self.var_bias(dim), self.mean(dim, keepdim=True)

    def dot(self, other: Tensor) -> Tensor:
        """Burn's dot: the sum of the elementwise product, as a 0-d tensor (Burn: shape [1];
        shapes broadcast, dtypes promote; ints and bools sum in int64)."""
        return (self._tensor() * other).sum()

    def std(self, dim: Dims = None, correction: int = 1, keepdim: bool = False) -> Tensor:
        """Standard deviation: `var(dim, correction, keepdim).sqrt()`; where the variance is 0
        (a constant line) the gradient is 0, as torch's (sqrt's is infinite there: NaN).

        Raises:
            DTypeError: for int and bool tensors.
        """
        if dim is not None:
            norm_dims("std", dim, self.ndim, scalar=True)
        var = self.var(dim, correction, keepdim)
        zero = var == 0
        return var.mask_fill(zero, 1.0).sqrt().mask_fill(zero, 0.0)

    def logsumexp(self, dim: int | Iterable[int], keepdim: bool = False) -> Tensor:
        """log(sum(exp(x))) over `dim` (int or tuple), computed stably: the max along the dims
        is taken out first; rows of -inf give -inf and rows with +inf give +inf (as torch).

        Int and bool tensors are cast to float32 first (torch's result dtype).
        """
        dims = norm_dims("logsumexp", dim, self.ndim, scalar=True)
        dims = dims if self.ndim else ()
        x = self._tensor()
        if x._k != "float_":
            x = x._cast(DEFAULT_FLOAT)
        if x.numel() == 0:
            return x.exp().sum(dims, keepdim=keepdim).log()
        m = x.max(dims, keepdim=True).detach()
        m = m.mask_fill(m.is_inf(), 0.0)  # -inf rows: exp(x - 0) = 0, log(0) = -inf
        out = (x - m).exp().sum(dims, keepdim=True).log() + m
        if keepdim:
            return out
        shape = x.shape
        return out.reshape(tuple(s for i, s in enumerate(shape) if i not in dims))

    # --- max / min ---
    def max(self, dim: Dims = None, keepdim: bool = False) -> Tensor:
        """Largest value over all dims or over `dim` (int or tuple); values only (torch.amax),
        the gradient of a tie along `dim` going to its first element (torch.max(dim), Burn's
        max_dim; over all dims split evenly, as torch).

        Raises:
            EmptyReductionError: when reducing an empty extent (an IndexError and a
                ValueRangeError).
        """
        return self._extreme("max", dim, keepdim)

    def min(self, dim: Dims = None, keepdim: bool = False) -> Tensor:
        """Smallest value over all dims or over `dim` (int or tuple); values only (torch.amin),
        ties' gradients as `max`'s.

        Raises:
            EmptyReductionError: when reducing an empty extent (an IndexError and a
                ValueRangeError).
        """
        return self._extreme("min", dim, keepdim)

    def amax(self, dim: Dims = None, keepdim: bool = False) -> Tensor:
        """Largest value over all dims or over `dim` (int or tuple), as torch.amax: `max`'s
        values, the gradient of a tie split evenly among its elements (also along `dim`,
        where `max` gives it to the first).

        Raises:
            EmptyReductionError: when reducing an empty extent (as torch: also for dim=None).
        """
        return self._even_extreme("amax", "max", dim, keepdim)

    def amin(self, dim: Dims = None, keepdim: bool = False) -> Tensor:
        """Smallest value over all dims or over `dim` (int or tuple), as torch.amin; ties'
        gradients as `amax`'s.

        Raises:
            EmptyReductionError: when reducing an empty extent.
        """
        return self._even_extreme("amin", "min", dim, keepdim)

    def _extreme(self, op: str, dim: Dims, keepdim: bool, name: str = "") -> Tensor:
        """`op` ("max" / "min") over `dim`; errors name `name` (default `op`)."""
        name = name or op
        dims = None if every_dim(dim) or not self.ndim else norm_dims(
            name, cast("int | Iterable[int]", dim), self.ndim)
        check_nonempty(name, self, dims)
        x = self._orderable()
        out = reduce(x, name, dim, keepdim, lambda t: t._same(op),
                     lambda t, d: t._wrap(t._fn(f"{op}_dim_with_indices")(t._prim, d)[0]))
        return out._cast(self._dtype)

    def _even_extreme(self, name: str, op: str, dim: Dims, keepdim: bool) -> Tensor:
        """`_extreme(op, dim, keepdim)`, whose gradient, on an autodiff device, is split evenly
        among the tied elements of each reduced extent (torch.amax / amin), or among the NaNs
        of a line holding NaN (as the reduction over every dim; torch: NaN gradients). The
        backend's reduction over every dim splits it already; along dims it goes to the
        first, so the value is `m - sum(((m - x) where x ties m, else 0) * w)`, m the detached
        extreme and w 1 / (count of ties): exactly m forward (m - x is +0.0 on ties; an
        infinite m is taken out first, the sum is then m itself), gradient w on each tie."""
        if not (self._bk.is_autodiff and self._k == "float_") or every_dim(dim) or not self.ndim:
            return self._extreme(op, dim, keepdim, name)
        dims = norm_dims(name, cast("int | Iterable[int]", dim), self.ndim)
        x = self._tensor()
        m = x._extreme(op, dims, True, name).detach()
        tie = (x == m) | x.is_nan()  # (a NaN line's m is NaN)
        weight = tie._cast(x._dtype) / tie.sum(dims, keepdim=True).clamp_min(1)
        base = m.mask_fill(m.is_inf(), 0.0)
        out = base - ((base - x).mask_fill(~tie, 0.0) * weight).sum(dims, keepdim=True)
        return out if keepdim else out.squeeze(dims)

    def max_dim(self, dim: int) -> Tensor:
        """Largest value along one dim, kept with size 1."""
        return self._extreme_with_indices("max_dim_with_indices", dim, "max_dim")[0]

    def min_dim(self, dim: int) -> Tensor:
        """Smallest value along one dim, kept with size 1."""
        return self._extreme_with_indices("min_dim_with_indices", dim, "min_dim")[0]

    def max_dim_with_indices(self, dim: int) -> tuple[Tensor, Tensor]:
        """Largest value along one dim (kept) and the int64 index of its first occurrence."""
        return self._extreme_with_indices("max_dim_with_indices", dim)

    def min_dim_with_indices(self, dim: int) -> tuple[Tensor, Tensor]:
        """Smallest value along one dim (kept) and the int64 index of its first occurrence."""
        return self._extreme_with_indices("min_dim_with_indices", dim)

    def _extreme_with_indices(self, op: str, dim: int, name: str = "") -> tuple[Tensor, Tensor]:
        """`op` ("max_dim_with_indices" / "min_dim_with_indices") along `dim`; errors name
        `name` (default `op`)."""
        name = name or op
        if not self.shape:
            return self._scalar_with_index(name, dim)
        d = self._dim(name, dim)
        check_nonempty(name, self, (d,))
        x = self._orderable()
        values, indices = x._fn(op)(x._prim, d)
        return x._wrap(values)._cast(self._dtype), x._wrap(indices, DType.int64)

    def argmax(self, dim: int | None = None, keepdim: bool = False) -> Tensor:
        """int64 index of the first largest value (of the flattened tensor when `dim` is None)."""
        return self._arg("argmax", dim, keepdim)

    def argmin(self, dim: int | None = None, keepdim: bool = False) -> Tensor:
        """int64 index of the first smallest value (of the flattened tensor when `dim` is None)."""
        return self._arg("argmin", dim, keepdim)

    def _arg(self, op: str, dim: int | None, keepdim: bool) -> Tensor:
        x = self._orderable()
        if dim is None:
            check_nonempty(op, self)
            out = x.flatten()._arg(op, 0, False)
            return out.reshape((1,) * self.ndim) if keepdim else out
        if not self.shape:
            return self._scalar_with_index(op, dim)[1]
        d = self._dim(op, dim)
        check_nonempty(op, self, (d,))
        out = x._wrap(x._fn(op)(x._prim, d), DType.int64)
        return out if keepdim else out.squeeze(d)

    # --- cumulative ---
    def cumsum(self, dim: int) -> Tensor:
        """Running sum along `dim` (ints and bools in int64)."""
        return self._accumulable()._along("cumsum", dim)

    def cumprod(self, dim: int) -> Tensor:
        """Running product along `dim` (ints and bools in int64)."""
        return self._accumulable()._along("cumprod", dim)

    def cummax(self, dim: int) -> tuple[Tensor, Tensor]:
        """Running max along `dim` and the int64 index where it was reached."""
        return self._running("cummax", dim)

    def cummin(self, dim: int) -> tuple[Tensor, Tensor]:
        """Running min along `dim` and the int64 index where it was reached."""
        return self._running("cummin", dim)

    def _running(self, op: str, dim: int) -> tuple[Tensor, Tensor]:
        if not self.shape:
            return self._scalar_with_index(op, dim)
        x = self._orderable()
        values, indices = x._fn(op)(x._prim, self._dim(op, dim))
        return x._wrap(values)._cast(self._dtype), x._wrap(indices, DType.int64)

    # --- sort / topk ---
    def sort_with_indices(self, dim: int = -1, descending: bool = False, *,
                          stable: bool | None = False) -> tuple[Tensor, Tensor]:
        """Stable sort along `dim`: values and their int64 source indices (NaN the largest,
        equal values in index order; `stable` is torch's keyword: every sort here is stable)."""
        if not self.shape:
            return self._scalar_with_index("sort", dim)
        x = self._orderable()
        values, indices = x._fn("sort_with_indices")(x._prim, self._dim("sort", dim),
                                                      descending)
        return x._wrap(values)._cast(self._dtype), x._wrap(indices, DType.int64)

    def sort(self, dim: int = -1, descending: bool = False, *, stable: bool | None = False
             ) -> Tensor:
        """Values sorted along `dim` (stable whatever `stable` says, as `sort_with_indices`)."""
        return self.sort_with_indices(dim, descending)[0]

    def argsort(self, dim: int = -1, descending: bool = False, *, stable: bool | None = False
                ) -> Tensor:
        """int64 indices that sort along `dim` (stable whatever `stable` says)."""
        return self.sort_with_indices(dim, descending)[1]

    def topk_with_indices(self, k: int, dim: int = -1, largest: bool = True
                          ) -> tuple[Tensor, Tensor]:
        """The `k` largest (or smallest) values along `dim`, sorted, and their int64 indices.

        Raises:
            ValueRangeError: when k is negative or larger than the dim.
        """
        d = norm_dim("topk", dim, self.ndim, scalar=True)
        n = self.shape[d] if self.shape else 1
        if not 0 <= k <= n:
            raise ValueRangeError("topk", "k out of range for the dim", k=k, shape=self.shape,
                                  dim=dim)
        values, indices = self.sort_with_indices(d, descending=largest)
        if not self.shape:
            return values, indices  # torch: a 0-d input gives its one value for k 0 or 1
        return values.narrow(d, 0, k), indices.narrow(d, 0, k)

    def sort_descending(self, dim: int = -1) -> Tensor:
        """Burn's sort_descending: `sort(dim, descending=True)`."""
        return self.sort(dim, descending=True)

    def sort_descending_with_indices(self, dim: int = -1) -> tuple[Tensor, Tensor]:
        """Burn's sort_descending_with_indices: `sort_with_indices(dim, descending=True)`."""
        return self.sort_with_indices(dim, descending=True)

    def argsort_descending(self, dim: int = -1) -> Tensor:
        """Burn's argsort_descending: `argsort(dim, descending=True)`."""
        return self.argsort(dim, descending=True)

    def argtopk(self, k: int, dim: int = -1) -> Tensor:
        """Burn's argtopk: the int64 indices of the k largest values along `dim`."""
        return self.topk_with_indices(k, dim)[1]

    def topk(self, k: int, dim: int = -1, largest: bool = True) -> Tensor:
        """The `k` largest (or smallest) values along `dim`, sorted."""
        return self.topk_with_indices(k, dim, largest)[0]


def logsumexp(x: Tensor, dim: int | Iterable[int], keepdim: bool = False) -> Tensor:
    """`x.logsumexp(dim, keepdim)`: log(sum(exp(x))) over `dim`, computed stably."""
    return x.logsumexp(dim, keepdim)
