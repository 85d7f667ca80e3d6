"""`OpDef`: one row of the op table, and what can be worked out from it alone.

A row names a backend method, its kind and family, its parameters and results (see
`burn.ir.signature`), a shape rule (`burn.ir.rules`), and for elementwise ops the burn-cube
expression it lowers to. The result dtypes follow from the signature:

- a bool result is bool, an ``I64`` result int64;
- otherwise the ``dtype`` argument when the op takes one (casts, creation);
- otherwise the host array's dtype (``from_data``);
- otherwise the dtype of the first tensor input of the result's kind.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from burn.dtype import DType, Kind, from_numpy
from burn.errors import DTypeError
from burn.ir.rules import Rule, Shape
from burn.ir.signature import Param, Result

#: A burn-cube lowering: (cube op, operand, ...) where an operand is a parameter name, a
#: constant, or a nested lowering; e.g. ("div", 1.0, "x") for recip.
CubeExpr = tuple[Any, ...]


@dataclass(frozen=True)
class OpDef:
    """One op of the backend protocol, as data.

    Attributes:
        name: the backend method ("float_add", "conv", "relu").
        kind: the tensor kind it works on: float, int, bool, or None for module ops.
        family: creation, arithmetic, math, comparison, bitwise, layout, indexing, reduction,
            activation or module.
        params: parameters in protocol order.
        results: tensor results in order (empty for host data and none).
        returns: the result text of the signature ("T", "(T, I64)", "data", "none").
        shape_rule: result shapes from input shapes and host arguments.
        cube: the burn-cube expression of an elementwise op, else None.
        default: whether the protocol writes it with other ops (a backend may override).
    """

    name: str
    kind: Kind | None
    family: str
    params: tuple[Param, ...]
    results: tuple[Result, ...]
    returns: str
    shape_rule: Rule
    cube: CubeExpr | None = None
    default: bool = False
    tensor_params: tuple[Param, ...] = field(init=False, repr=False)
    #: position of the `device` parameter, if any (decorators map it to the inner device).
    device_at: int | None = field(init=False, repr=False)
    #: positions of the single (maybe optional) tensor parameters and of the tensor lists.
    tensor_at: tuple[int, ...] = field(init=False, repr=False)
    list_at: tuple[int, ...] = field(init=False, repr=False)
    #: the name users call it by, which its errors name ("add" for ``float_add``).
    user_name: str = field(init=False, repr=False)

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "tensor_params", tuple(p for p in self.params if p.is_tensor))
        names = [p.name for p in self.params]
        set_(self, "device_at", names.index("device") if "device" in names else None)
        set_(self, "tensor_at",
             tuple(i for i, p in enumerate(self.params) if p.is_tensor and not p.many))
        set_(self, "list_at", tuple(i for i, p in enumerate(self.params) if p.many))
        set_(self, "user_name",
             self.name.removeprefix(f"{self.kind.value}_") if self.kind else self.name)

    @property
    def signature(self) -> str:
        """The signature text, e.g. ``float_add(lhs: T, rhs: T) -> T``."""
        params = ", ".join(f"{p.name}: {_param_text(p)}" for p in self.params)
        return f"{self.name}({params}) -> {self.returns}"

    @property
    def dtype_rule(self) -> str:
        """The result dtype rule in words (for docs/ops.md)."""
        return ", ".join(self._dtype_source(r) for r in self.results) or "-"

    def _dtype_source(self, result: Result) -> str:
        if result.kind is Kind.BOOL:
            return "bool"
        if result.type == "I64":
            return "int64"
        names = [p.name for p in self.params]
        if "dtype" in names:
            return "dtype argument"
        if "data" in names:
            return "data's dtype"
        first = next((p for p in self.tensor_params if p.kind is result.kind), None)
        return f"as {first.name}" if first else "?"

    def result_dtypes(self, dtypes: dict[str, Any], args: dict[str, Any]) -> tuple[DType, ...]:
        """The dtype of each result.

        Args:
            dtypes: each tensor parameter's dtype (a list for a list parameter, None if absent).
            args: the host arguments.
        Returns:
            One dtype per result.
        """
        out = []
        for result in self.results:
            source = self._dtype_source(result)
            if source == "bool":
                out.append(DType.bool)
            elif source == "int64":
                out.append(DType.int64)
            elif source == "dtype argument":
                out.append(args["dtype"])
            elif source == "data's dtype":
                out.append(from_numpy(args["data"].dtype, self.name))
            else:
                value = dtypes[source.removeprefix("as ")]
                out.append(value[0] if isinstance(value, list) else value)
        return tuple(out)

    def check_kinds(self, dtypes: dict[str, Any]) -> None:
        """Raise DTypeError unless every tensor input has the parameter's kind, and the
        inputs of the row's own kind (``T``) share one dtype.

        Args:
            dtypes: each tensor parameter's dtype (a list for a list parameter, None if absent).
        """
        same: set[DType] = set()
        for p in self.tensor_params:
            value = dtypes[p.name]
            for dtype in value if isinstance(value, list) else [value]:
                if dtype is None:
                    if not p.optional:
                        raise DTypeError(self.name, f"`{p.name}` is required")
                    continue
                if dtype.kind is not p.kind:
                    kind = p.kind.value if p.kind else "?"
                    raise DTypeError(self.name, f"`{p.name}` must be a {kind} tensor",
                                     dtype=dtype.value)
                if p.type == "T":
                    same.add(dtype)
        if len(same) > 1:
            raise DTypeError(self.name, "tensor inputs must share one dtype",
                             dtypes=sorted(d.value for d in same))

    def infer(self, shapes: dict[str, Any], dtypes: dict[str, Any], args: dict[str, Any]
              ) -> tuple[tuple[Shape, DType], ...]:
        """Result shapes and dtypes, without running the op.

        Args:
            shapes: each tensor parameter's shape (a list for a list parameter, None if absent).
            dtypes: each tensor parameter's dtype, likewise.
            args: the host arguments.
        Returns:
            (shape, dtype) per result.
        Raises:
            ShapeError, DTypeError, BurnIndexError: for inputs the op cannot take.
        """
        self.check_kinds(dtypes)
        result_shapes = self.shape_rule(self.name, shapes, args)
        return tuple(zip(result_shapes, self.result_dtypes(dtypes, args), strict=True))


def _param_text(p: Param) -> str:
    if p.many:
        return f"[{p.type}]"
    return p.type + ("?" if p.optional else "")
