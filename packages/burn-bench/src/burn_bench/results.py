"""The results document (JSON, schema below), its checks, and atomic saving.

Schema, version 1 (every key present; `null` where not measured)::

    {"schema": "burn-bench/results", "version": 1,
     "machine": str, "commit": str, "created": ISO-8601 UTC str,
     "versions": {"python": str, "burn": str, "torch": str, "numpy": str},
     "settings": {"rounds": int, "min_time": float, "compare": [str], "threads": int,
                  "shapes": "square" | "burn"},
     "rows": [{"bench": str, "backend": str, "dtype": str, "size": int,
               "shape": [int] | null,                # operand shape when not size x size
               "case": str | null,                   # compile suite: cold, warm or edit
               "status": "ok" | "unavailable" | "error", "reason": str | null,
               "kernels": int | null, "compile_s": float | null,
               "times": {candidate: {"min": s, "median": s, "max": s}},
               "ratios": {reference: float}}],      # burn median / reference median, > 1 slower
     "reports": {suite: str}}                        # text of the report suites
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from burn_bench.errors import ResultSchemaError
from burn_bench.files import write_atomic

SCHEMA, VERSION = "burn-bench/results", 1
_TOP = {"schema": str, "version": int, "machine": str, "commit": str, "created": str,
        "versions": dict, "settings": dict, "rows": list, "reports": dict}
_ROW = {"bench": str, "backend": str, "dtype": str, "size": int, "status": str,
        "times": dict, "ratios": dict}
_OPTIONAL_ROW = {"reason": str, "kernels": int, "compile_s": float, "shape": list,
                 "case": str, "fusion_compile_s": float}
STATUSES = ("ok", "unavailable", "error")


def validate(doc: Any, source: str = "<results>") -> dict[str, Any]:
    """Check `doc` against the schema.

    Args:
        doc: the parsed JSON document.
        source: the file name used in error messages.
    Returns:
        `doc`, unchanged.
    Raises:
        ResultSchemaError: the first mismatch, naming `source` and the key.
    """
    def fail(what: str) -> ResultSchemaError:
        return ResultSchemaError(f"{source}: not a burn-bench results file ({what})")

    if not isinstance(doc, dict):
        raise fail(f"top level is {type(doc).__name__}, not an object")
    _check_keys(doc, _TOP, {}, fail, "")
    if doc["schema"] != SCHEMA or doc["version"] != VERSION:
        raise fail(f"schema {doc['schema']!r} version {doc['version']!r}, "
                   f"expected {SCHEMA!r} version {VERSION}")
    for i, row in enumerate(doc["rows"]):
        if not isinstance(row, dict):
            raise fail(f"rows[{i}] is not an object")
        _check_keys(row, _ROW, _OPTIONAL_ROW, fail, f"rows[{i}].")
        if row["status"] not in STATUSES:
            raise fail(f"rows[{i}].status {row['status']!r} not in {STATUSES}")
        for name, stats in row["times"].items():
            if not isinstance(stats, dict) or not all(
                    isinstance(stats.get(k), (int, float)) for k in ("min", "median", "max")):
                raise fail(f"rows[{i}].times[{name!r}] needs numeric min, median and max")
    return doc


def _check_keys(obj: dict[str, Any], required: dict[str, type], optional: dict[str, type],
                fail: Any, prefix: str) -> None:
    for key, kind in required.items():
        if key not in obj:
            raise fail(f"missing key {prefix}{key}")
        if not isinstance(obj[key], kind) or isinstance(obj[key], bool):
            raise fail(f"{prefix}{key} is {type(obj[key]).__name__}, not {kind.__name__}")
    for key, kind in optional.items():
        value = obj.get(key)
        if value is not None and not isinstance(value, (kind, int) if kind is float else kind):
            raise fail(f"{prefix}{key} is {type(value).__name__}, not {kind.__name__} or null")


def load(path: Path) -> dict[str, Any]:
    """Read and validate a results file.

    Raises:
        ResultSchemaError: unreadable, not JSON, or not matching the schema (names the file).
    """
    try:
        doc = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise ResultSchemaError(f"{path}: cannot read results ({exc})") from exc
    return validate(doc, str(path))


def row_key(row: dict[str, Any]) -> tuple[Any, ...]:
    """What a row measures: bench, backend, dtype, size, operand shape and compile case."""
    shape = row.get("shape")
    return (row["bench"], row["backend"], row["dtype"], row["size"],
            None if shape is None else tuple(shape), row.get("case"))


def merged(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """`new` with the rows and reports of `old` (an earlier run of the same commit and
    machine) that it does not measure again: its rows replace those of the same `row_key`
    (and its reports those of the same suite), earlier ones stay, before its own.

    Args:
        old: the earlier document.
        new: this run's document.
    Returns:
        The merged document (`new`'s other fields).
    """
    measured = {row_key(row) for row in new["rows"]}
    rows = [row for row in old["rows"] if row_key(row) not in measured] + new["rows"]
    return {**new, "rows": rows, "reports": {**old["reports"], **new["reports"]}}


def save(doc: dict[str, Any], path: Path) -> Path:
    """Validate `doc` and write it to `path` atomically (temp file, then os.replace).

    Returns:
        `path`.
    """
    validate(doc, str(path))
    return write_atomic(path, lambda f: f.write(json.dumps(doc, indent=1, sort_keys=True) + "\n"))
