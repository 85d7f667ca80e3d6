"""Scalar dtypes and the ``Tensor[...]`` / ``Comptime[...]`` parameter annotations."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np


@dataclass(frozen=True)
class DType:
    """A scalar element type of the kernel language.

    Args:
        name: Short name (``f32``); also the name used in generated helper functions.
        kind: One of ``float``, ``int``, ``uint``, ``bool``.
        bits: Width in bits.
        rank: Position in the implicit promotion order (higher wins).
        lanes: Elements per value: 1 for scalars, 2 or 4 for a ``Line`` (a short vector that
            is loaded and stored as one 64/128-bit access; arithmetic is element-wise).
    """

    name: str
    kind: str
    bits: int
    rank: int
    lanes: int = 1

    @cached_property
    def scalar(self) -> DType:
        """The element type (itself for scalars)."""
        return DTYPES[self.name.split("x")[0]] if self.lanes > 1 else self

    @cached_property
    def numpy(self) -> np.dtype:
        """The matching numpy dtype (of one element, for lines; cached: launches ask often)."""
        if self.scalar.name == "bf16":
            import ml_dtypes  # on first use: its import costs ~0.7 s of every start-up

            return np.dtype(ml_dtypes.bfloat16)
        prefix = {"float": "float", "int": "int", "uint": "uint"}.get(self.kind)
        return np.dtype(f"{prefix}{self.bits}" if prefix else "bool")

    @property
    def is_float(self) -> bool:
        """Whether this is a floating-point type."""
        return self.kind == "float"

    @property
    def is_integer(self) -> bool:
        """Whether this is a signed or unsigned integer type."""
        return self.kind in ("int", "uint")

    def __call__(self, value: Any) -> Any:
        """Outside kernels: convert a Python value to a numpy scalar of this dtype."""
        return self.numpy.type(value)

    def __repr__(self) -> str:
        return self.name


bool_ = DType("bool", "bool", 8, 0)
u8 = DType("u8", "uint", 8, 1)  # 8-bit ints: C and CUDA only (WGSL has no 8-bit scalars)
i8 = DType("i8", "int", 8, 2)
u32 = DType("u32", "uint", 32, 3)
i32 = DType("i32", "int", 32, 4)
i64 = DType("i64", "int", 64, 5)
f16 = DType("f16", "float", 16, 6)
bf16 = DType("bf16", "float", 16, 6)  # same rank as f16: mixing the two gives f32
f32 = DType("f32", "float", 32, 7)
f64 = DType("f64", "float", 64, 8)

DTYPES: dict[str, DType] = {d.name: d for d in (bool_, u8, i8, u32, i32, i64, f16, bf16, f32,
                                                 f64)}


LINE_LANES = (2, 4)


def line(dtype: DType, lanes: int) -> DType:
    """The ``Line`` of ``lanes`` elements of a scalar dtype (the dtype itself for 1 lane)."""
    if lanes == 1:
        return dtype
    if lanes not in LINE_LANES or dtype.lanes != 1 or dtype.kind == "bool":
        raise TypeError(f"a Line has 2 or 4 numeric elements, got Line[{dtype}, {lanes}]")
    return DType(f"{dtype.name}x{lanes}", dtype.kind, dtype.bits, dtype.rank, lanes)


def dtype_named(name: str) -> DType:
    """A dtype by name: ``f32``, or a line such as ``f32x4``."""
    base, _, lanes = name.partition("x")
    return line(DTYPES[base], int(lanes or 1))


def from_numpy(dtype: np.dtype | type) -> DType | None:
    """Map a numpy dtype to a kernel dtype.

    Args:
        dtype: numpy dtype or scalar type.

    Returns:
        The kernel dtype, or None when the language has none for it.
    """
    target = np.dtype(dtype)
    for d in DTYPES.values():  # bf16 only for ml_dtypes' bfloat16 (not loading it otherwise)
        if (d.name == "bf16") == (target.name == "bfloat16") and d.numpy == target:
            return d
    return None


def promote(a: DType, b: DType) -> DType:
    """Implicit promotion of two operand types: the higher rank wins (f16 with bf16 gives f32);
    bool becomes i32; a scalar meeting a line is broadcast (lines of different widths do not
    mix)."""
    if a.lanes > 1 and b.lanes > 1 and a.lanes != b.lanes:
        raise TypeError(f"cannot mix {a} and {b}")
    if a.rank == b.rank and a.scalar != b.scalar:
        out = f32
    else:
        out = a.scalar if a.rank >= b.rank else b.scalar
    return line(i32 if out is bool_ else out, max(a.lanes, b.lanes))


@dataclass(frozen=True)
class TensorType:
    """Annotation for a tensor parameter; ``dtype`` None means inferred at launch."""

    dtype: DType | None = None


@dataclass(frozen=True)
class ComptimeType:
    """Annotation for a compile-time parameter, baked into the generated code."""

    pytype: Any = None


@dataclass(frozen=True)
class ParamSpec:
    """How one parameter is specialized: a tensor, a scalar, or a comptime value."""

    kind: str  # "tensor" | "scalar" | "comptime"
    dtype: DType | None = None
    rank: int = 0
    value: Any = None


class Tensor:
    """``Tensor[f32]`` annotates a tensor parameter of that element type."""

    def __class_getitem__(cls, dtype: DType) -> TensorType:
        return TensorType(dtype)


class Line:
    """``Line[f32, 4]``: a tensor element type of 4 f32 values (``Tensor[Line[f32, 4]]``);
    ``x[i]`` is then line ``i`` (elements ``4i .. 4i+3``) and ``len(x)`` counts lines."""

    def __class_getitem__(cls, args: tuple[DType, int]) -> DType:
        dtype, lanes = args
        return line(dtype, lanes)


class Comptime:
    """``Comptime[int]`` annotates a compile-time parameter (part of the cache key)."""

    def __class_getitem__(cls, pytype: Any) -> ComptimeType:
        return ComptimeType(pytype)
