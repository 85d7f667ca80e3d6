"""Parameters and results of an op, parsed from a compact signature text.

A row of the op table writes its parameters as ``"x: T, dim: int"`` and its results as ``"T"``
or ``"(T, I64)"``. Tensor kinds:

- ``T``: a tensor of the row's own kind (float rows take float tensors, int rows int ...);
- ``F`` / ``I`` / ``B``: a float / int / bool tensor whatever the row's kind;
- ``I64``: (results only) an int64 tensor; ``B`` results are bool;
- a ``?`` suffix makes a tensor optional (None), ``[T]`` is a list of tensors.

Other parameter types are host values: ``int``, ``float``, ``bool``, ``str``, ``scalar`` (a
number of the row's kind), ``scalar?``, ``float?``, ``shape``, ``dtype``, ``device``,
``slices``, ``options``, ``dist`` and ``data`` (a numpy array). A result ``data`` is a numpy
array on the host (``into_data``); ``none`` is no result.
"""

from __future__ import annotations

from dataclasses import dataclass

from burn.dtype import Kind

TENSOR_TYPES = ("T", "F", "I", "B")
HOST_TYPES = ("int", "float", "bool", "str", "scalar", "scalar?", "float?", "shape", "dtype",
              "device", "slices", "options", "dist", "data")
RESULT_TYPES = ("T", "F", "I", "B", "I64", "F?")
_KIND_OF = {"F": Kind.FLOAT, "I": Kind.INT, "B": Kind.BOOL}


@dataclass(frozen=True, slots=True)
class Param:
    """One parameter of an op.

    Attributes:
        name: the parameter's name in the backend protocol.
        type: one of TENSOR_TYPES or HOST_TYPES.
        kind: the tensor kind it takes (None for host values).
        optional: a tensor that may be None.
        many: a list of tensors.
    """

    name: str
    type: str
    kind: Kind | None = None
    optional: bool = False
    many: bool = False

    @property
    def is_tensor(self) -> bool:
        """Whether the parameter is a tensor (or an optional tensor, or a list of them)."""
        return self.kind is not None


@dataclass(frozen=True, slots=True)
class Result:
    """One result of an op: its tensor kind, and whether it is an int64 index or optional."""

    type: str
    kind: Kind
    optional: bool = False


def _tensor_kind(code: str, row_kind: Kind | None, where: str) -> Kind:
    if code == "T":
        if row_kind is None:
            raise ValueError(f"{where}: `T` needs a row of kind float, int or bool")
        return row_kind
    return _KIND_OF[code]


def parse_params(text: str, row_kind: Kind | None, where: str) -> tuple[Param, ...]:
    """Parameters of a signature text such as ``"x: T, mask: B, value: scalar"``.

    Args:
        text: comma-separated ``name: type`` pairs (empty for none).
        row_kind: the row's tensor kind (what ``T`` means); None for module ops.
        where: the op name, for errors.
    Returns:
        The parameters in order.
    Raises:
        ValueError: for an unknown type (a table bug, found at import).
    """
    params = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, _, code = (s.strip() for s in item.partition(":"))
        many = code.startswith("[") and code.endswith("]")
        optional = code.endswith("?") and code[:-1] in TENSOR_TYPES
        base = code.strip("[]").rstrip("?") if (many or optional) else code
        if base in TENSOR_TYPES:
            params.append(Param(name, base, _tensor_kind(base, row_kind, where), optional, many))
        elif code in HOST_TYPES:
            params.append(Param(name, code))
        else:
            raise ValueError(f"{where}: unknown parameter type {code!r}")
    return tuple(params)


def parse_results(text: str, row_kind: Kind | None, where: str) -> tuple[Result, ...]:
    """Results of a signature text: ``"T"``, ``"(T, I64)"``, ``"data"`` or ``"none"``.

    Args:
        text: one result type, or a parenthesised tuple of them.
        row_kind: the row's tensor kind (what ``T`` means).
        where: the op name, for errors.
    Returns:
        The tensor results in order (empty for ``data`` and ``none``).
    """
    if text in ("data", "none"):
        return ()
    results = []
    for code in (s.strip() for s in text.strip("()").split(",")):
        optional = code.endswith("?")
        base = code.rstrip("?")
        if base == "I64":
            results.append(Result(code, Kind.INT))
        elif base in TENSOR_TYPES:
            results.append(Result(code, _tensor_kind(base, row_kind, where), optional))
        else:
            raise ValueError(f"{where}: unknown result type {code!r}")
    return tuple(results)
