"""Data types and tensor kinds, with their numpy equivalents.

numpy is imported on the first lookup of a numpy equivalent (`DType.numpy`, `from_numpy`), not
with this module, so that `import burn` does not load it.
"""

from __future__ import annotations

import builtins
import enum

from burn.errors import DTypeError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

    import numpy as np


class Kind(enum.Enum):
    """The three tensor kinds, as in Burn: float, int and bool tensors."""

    FLOAT = "float"
    INT = "int"
    BOOL = "bool"


class DType(enum.Enum):
    """Element types; `.kind` says which kind of tensor holds them."""

    float64 = "float64"
    float32 = "float32"
    float16 = "float16"
    bfloat16 = "bfloat16"
    int64 = "int64"
    int32 = "int32"
    int8 = "int8"
    uint8 = "uint8"
    bool = "bool"

    #: members are singletons compared by identity: an identity hash, in C (Enum's own hashes
    #: the name in Python, and dicts keyed by dtype are read on every op).
    __hash__ = object.__hash__

    @property
    def kind(self) -> Kind:
        """Kind of tensor holding this dtype."""
        return _KINDS[self]

    @property
    def numpy(self) -> np.dtype:
        """The numpy dtype (ml_dtypes for bfloat16)."""
        return _TO_NUMPY[self]

    @property
    def itemsize(self) -> int:
        """Bytes per element."""
        return _ITEMSIZE[self]

    @property
    def is_float(self) -> builtins.bool:  # `bool` is a member here
        return self.kind is Kind.FLOAT

    def __repr__(self) -> str:
        return f"burn.{self.value}"

    __str__ = __repr__


_KINDS = {d: Kind.BOOL if d.value == "bool" else
          Kind.FLOAT if d.value.startswith(("float", "bfloat")) else Kind.INT for d in DType}
_ITEMSIZE = {DType.float64: 8, DType.float32: 4, DType.float16: 2, DType.bfloat16: 2,
             DType.int64: 8, DType.int32: 4, DType.int8: 1, DType.uint8: 1, DType.bool: 1}


def _bfloat16_numpy() -> np.dtype:
    """ml_dtypes' bfloat16, imported on first use (the import costs ~0.5 s at start-up)."""
    import ml_dtypes
    import numpy as np

    dt = np.dtype(ml_dtypes.bfloat16)
    _TO_NUMPY[DType.bfloat16] = dt
    FROM_NUMPY_MAP[dt] = DType.bfloat16
    return dt


def _fill_numpy_maps() -> None:
    """Import numpy and fill both maps (all dtypes but bfloat16): done on their first miss."""
    import numpy as np

    pairs: dict[DType, np.dtype] = {d: np.dtype(d.value) for d in DType if d is not DType.bfloat16}
    _TO_NUMPY.update(pairs)
    FROM_NUMPY_MAP.update({v: k for k, v in pairs.items()})


class _ToNumpy(dict[DType, "np.dtype"]):
    """DType -> numpy dtype, empty until its first lookup imports numpy; bfloat16 is added
    (loading ml_dtypes) on its own first lookup."""

    def __missing__(self, key: DType) -> np.dtype:
        if not self:
            _fill_numpy_maps()
            return self[key]
        if key is DType.bfloat16:
            return _bfloat16_numpy()
        raise KeyError(key)


class _FromNumpy(dict["np.dtype", DType]):
    """numpy dtype -> DType, filled on its first lookup (with numpy already loaded by the
    caller's array); a bfloat16 array (ml_dtypes loaded by the user) adds its entry."""

    def __missing__(self, key: Any) -> DType:
        if not self:
            _fill_numpy_maps()
            return self[key]
        if getattr(key, "name", None) == "bfloat16" and _bfloat16_numpy() == key:
            return DType.bfloat16
        raise KeyError(key)


_TO_NUMPY: dict[DType, np.dtype] = _ToNumpy()
#: numpy dtype -> DType, shared with the NumPy backend's hot path (plain dict lookups).
FROM_NUMPY_MAP: dict[np.dtype, DType] = _FromNumpy()

float64, float32, float16, bfloat16 = DType.float64, DType.float32, DType.float16, DType.bfloat16
int64, int32, int8, uint8, bool_ = DType.int64, DType.int32, DType.int8, DType.uint8, DType.bool

DEFAULT_FLOAT = DType.float32
DEFAULT_INT = DType.int64

# Order used to promote two dtypes of one kind (the larger wins), as PyTorch does.
_FLOAT_RANK = {DType.float16: 0, DType.bfloat16: 0, DType.float32: 1, DType.float64: 2}
_INT_RANK = {DType.bool: 0, DType.uint8: 1, DType.int8: 1, DType.int32: 2, DType.int64: 3}


def from_numpy(dtype: np.dtype | type, op: str = "from_data") -> DType:
    """The burn dtype of a numpy dtype.

    Args:
        dtype: numpy dtype (or scalar type).
        op: op name used in the error message.
    Returns:
        The matching DType; other integer/float widths map to the nearest supported one.
    Raises:
        DTypeError: for dtypes burn has no equivalent for (complex, strings, objects).
    """
    import numpy as np

    try:
        dt = np.dtype(dtype)
    except TypeError:  # (not a dtype at all: a number, an enum member)
        raise DTypeError(op, "not a dtype", dtype=repr(dtype)) from None
    try:
        return FROM_NUMPY_MAP[dt]
    except KeyError:
        pass
    if dt.kind == "f":
        return DType.float64 if dt.itemsize > 4 else DType.float32
    if dt.kind in "iu":
        return DType.int64 if dt.itemsize >= 4 else DType.int32
    raise DTypeError(op, "unsupported numpy dtype", dtype=str(dt))


def as_dtype(value: DType | str | np.dtype | type, op: str = "dtype") -> DType:
    """Normalise a user dtype argument (DType, name, numpy dtype, torch-like name) to a DType.

    Raises:
        DTypeError: naming `op`, for None (numpy would read it as float64), an unknown name
            or anything else that is not a dtype.
    """
    if isinstance(value, DType):
        return value
    if value is None:
        raise DTypeError(op, "needs a dtype, got None", dtype=None)
    if isinstance(value, str):
        name = value.removeprefix("burn.").removeprefix("torch.")
        name = {"float": "float32", "half": "float16", "double": "float64", "long": "int64",
                "int": "int32", "bool_": "bool"}.get(name, name)
        try:
            return DType(name)
        except ValueError:
            raise DTypeError(op, "unknown dtype name", dtype=value) from None
    if value is bool:
        return DType.bool
    if value is float:
        return DEFAULT_FLOAT
    if value is int:
        return DEFAULT_INT
    return from_numpy(value, op)


def promote(a: DType, b: DType) -> DType:
    """Result dtype of a binary op between two tensors (PyTorch's rules for these dtypes)."""
    if a == b:
        return a
    if a.is_float and b.is_float:
        if {a, b} == {DType.float16, DType.bfloat16}:
            return DType.float32
        return a if _FLOAT_RANK[a] >= _FLOAT_RANK[b] else b
    if a.is_float:
        return a
    if b.is_float:
        return b
    if {a, b} == {DType.uint8, DType.int8}:
        return DType.int32  # PyTorch gives int16, which burn does not have
    return a if _INT_RANK[a] >= _INT_RANK[b] else b


_CATEGORY = {Kind.BOOL: 0, Kind.INT: 1, Kind.FLOAT: 2}


def _promote_group(dtypes: Iterable[DType]) -> DType | None:
    out = None
    for d in dtypes:
        out = d if out is None else promote(out, d)
    return out


def _combine(higher: DType | None, lower: DType | None) -> DType | None:
    """PyTorch's `combine_categories`: a lower-priority group only counts with a higher category."""
    if higher is None:
        return lower
    if lower is None or higher.is_float:
        return higher
    if higher is DType.bool or _CATEGORY[lower.kind] > _CATEGORY[higher.kind]:
        return promote(higher, lower)
    return higher


def result_type(dims: Iterable[DType], zero_dims: Iterable[DType] = ()) -> DType:
    """Result dtype of an op over tensors with dims and 0-d tensors (torch.result_type).

    A 0-d tensor takes part like a Python scalar: it decides the dtype only when its category
    (bool < int < float) is higher than that of every tensor with dims; `float32 + 0-d float64`
    stays float32, `int8 + 0-d float64` gives float64.

    Args:
        dims: dtypes of the operands with at least one dim.
        zero_dims: dtypes of the 0-d operands.
    Returns:
        The result dtype.
    Raises:
        DTypeError: when no operand is given.
    """
    out = _combine(_promote_group(dims), _promote_group(zero_dims))
    if out is None:
        raise DTypeError("result_type", "needs at least one operand")
    return out
