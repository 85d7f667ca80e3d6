"""Op records: an op with its input and output tensor descriptions and host arguments.

`OpIR` is what a decorator backend receives for each op (Burn's `OperationIr`): enough to
defer it (fusion), send it (remote) or log it (the profiler) without running it. Output shapes
and dtypes come from the op table's rules; a record whose given outputs disagree with them, or
whose inputs the op cannot take, is refused where it is made.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from burn.dtype import DType
from burn.errors import BurnError, DTypeError, ShapeError
from burn.ir.opdef import OpDef
from burn.ir.rules import Shape
from burn.ir.table import OPS

#: A fresh tensor id (unique in this process): the counter's own ``__next__``, called with no
#: Python frame (a fusion stream takes one per recorded op).
new_id: Callable[[], int] = itertools.count(1).__next__


class TensorIR(NamedTuple):
    """A tensor as an op record sees it: an id, a shape (None where only a run tells) and a
    dtype. (A named tuple: records are made per op, and tuples are the cheapest to make.)"""

    id: int
    shape: Shape
    dtype: DType


#: A record's value of one tensor parameter: a tensor, None (absent optional), or a list.
TensorArg = TensorIR | None | tuple[TensorIR, ...]


@dataclass(frozen=True)
class OpIR:
    """One op of a stream.

    Attributes:
        op: the op's row in the table.
        inputs: each tensor parameter's value, by name.
        scalars: each host argument, by name.
        outputs: the result tensors (None for an absent optional result).
    Raises:
        BurnError: (ShapeError / DTypeError / BurnIndexError) at construction when the inputs
            do not fit the op, or when `outputs` differ from what the op table infers.
    """

    op: OpDef
    inputs: dict[str, TensorArg]
    scalars: dict[str, Any] = field(default_factory=dict)
    outputs: tuple[TensorIR | None, ...] | None = None

    def __post_init__(self) -> None:
        expected = {p.name for p in self.op.params}
        given = set(self.inputs) | set(self.scalars)
        if given != expected:
            raise BurnError(self.op.name, "parameters do not match the op's signature",
                            missing=sorted(expected - given),
                            unexpected=sorted(given - expected), signature=self.op.signature)
        for param in self.op.tensor_params:
            _check_tensor_arg(self.op.name, param.name, self.inputs[param.name], param.many,
                              param.optional)
        inferred = self.op.infer(*_describe(self.inputs), self.scalars)
        made = tuple(None if shape is None else TensorIR(new_id(), shape, dtype)
                     for shape, dtype in inferred)
        if self.outputs is None:
            object.__setattr__(self, "outputs", made)
            return
        described = tuple(None if t is None else (t.shape, t.dtype) for t in self.outputs)
        inferred_out = tuple(None if t is None else (t.shape, t.dtype) for t in made)
        if len(described) != len(inferred_out) or any(
                not _matches(g, e) for g, e in zip(described, inferred_out, strict=False)):
            raise ShapeError(self.op.name, "record's outputs differ from the op's rules",
                             given=described, inferred=inferred_out)

    @property
    def name(self) -> str:
        """The op's backend method name."""
        return self.op.name

    def __str__(self) -> str:
        ins = ", ".join(f"{k}={_text(v)}" for k, v in self.inputs.items())
        outs = ", ".join(_text(t) for t in self.outputs or ())
        return f"{self.op.name}({ins}) -> {outs or '()'}"


def _check_tensor_arg(op: str, name: str, value: Any, many: bool, optional: bool) -> None:
    """Raise a typed error unless `value` is what a tensor parameter takes: a TensorIR with a
    shape of non-negative ints (or None) and a DType; a tuple of them for a list parameter;
    None only for an optional one."""
    if value is None and optional:
        return
    is_list = isinstance(value, tuple) and not isinstance(value, TensorIR)
    items = value if many and is_list else (value,)
    if many and not is_list:
        raise BurnError(op, f"`{name}` must be a tuple of TensorIR", got=type(value).__name__)
    for t in items:
        if not isinstance(t, TensorIR):
            raise BurnError(op, f"`{name}` must be a TensorIR", got=type(t).__name__)
        if not isinstance(t.shape, tuple) or not all(
                d is None or (type(d) is int and d >= 0) for d in t.shape):
            raise ShapeError(op, f"`{name}` has a malformed shape", shape=t.shape)
        if not isinstance(t.dtype, DType):
            raise DTypeError(op, f"`{name}` has no burn dtype", dtype=t.dtype)


def _describe(inputs: dict[str, TensorArg]) -> tuple[dict[str, Any], dict[str, Any]]:
    shapes: dict[str, Any] = {}
    dtypes: dict[str, Any] = {}
    for name, value in inputs.items():
        if value is None or isinstance(value, TensorIR):
            shapes[name] = None if value is None else value.shape
            dtypes[name] = None if value is None else value.dtype
        else:  # a list parameter
            shapes[name] = [t.shape for t in value]
            dtypes[name] = [t.dtype for t in value]
    return shapes, dtypes


def _matches(given: Any, expected: Any) -> bool:
    """Equal, where a None size in the inferred shape matches any size."""
    if given is None or expected is None:
        return given is expected
    (gs, gd), (es, ed) = given, expected
    return gd is ed and len(gs) == len(es) and all(e is None or g == e for g, e in zip(gs, es,
                                                                                          strict=True))


def _text(value: TensorArg) -> str:
    if value is None:
        return "None"
    if isinstance(value, TensorIR):
        return f"#{value.id}{list(value.shape)}:{value.dtype.value}"
    return "[" + ", ".join(_text(t) for t in value) + "]"


def split_args(op: OpDef, args: Sequence[Any], tensor: Callable[[Any], TensorIR]
               ) -> tuple[dict[str, TensorArg], dict[str, Any]]:
    """A call's arguments as a record's inputs (each tensor through `tensor`, by parameter
    name) and scalars (the host arguments).

    Args:
        op: the op's row.
        args: its arguments in protocol order.
        tensor: turns one tensor argument into its `TensorIR`.
    """
    inputs: dict[str, TensorArg] = {}
    scalars: dict[str, Any] = {}
    for param, value in zip(op.params, args, strict=True):
        if not param.is_tensor:
            scalars[param.name] = value
        elif param.many:
            inputs[param.name] = tuple(map(tensor, value))
        else:
            inputs[param.name] = None if value is None else tensor(value)
    return inputs, scalars


def make_record(name: str, inputs: dict[str, TensorArg], scalars: dict[str, Any] | None = None,
                outputs: tuple[TensorIR | None, ...] | None = None) -> OpIR:
    """An `OpIR` for the op named `name`.

    Args:
        name: a backend method of the op table ("float_add").
        inputs: each tensor parameter's value.
        scalars: each host argument.
        outputs: the results, checked against the rules; inferred when None.
    Returns:
        The record.
    Raises:
        BurnError: for an unknown op, missing parameters or inputs the op cannot take.
    """
    op = OPS.get(name)
    if op is None:
        raise BurnError(name, "not an op of the op table")
    return OpIR(op, dict(inputs), dict(scalars or {}), outputs)
