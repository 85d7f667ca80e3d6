"""Loading rules shared by every format: key remapping, adapters, dtype policy, strict or
partial loading with a report."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import numpy as np

from burn.dtype import from_numpy
from burn.errors import DTypeError
from burn.frontend.creation import tensor
from burn.record.errors import RecordDTypeError, RecordError, RecordKeyError, RecordShapeError


class Recordable(Protocol):
    """What saving and loading need of a module (`burn.nn.Module` is one; `burn.record` does not
    import `burn.nn`, which imports `burn.record` for `Module.save` / `load`)."""

    def named_tensors(self) -> Iterator[tuple[str, Any]]:
        """Every Param and Buffer (with `shape`, `dtype`, `device`, `to_numpy`, `set_`) by
        dotted path."""
        ...

    def named_modules(self) -> Iterator[tuple[str, Any]]:
        """This module (named "") and every submodule by dotted path."""
        ...


DTypePolicy = Literal["cast", "keep"]
Remap = Sequence[tuple[str, str | None]]
Shape = tuple[int, ...]


@dataclass(frozen=True)
class Entry:
    """A stored tensor: its shape, and how to read its values (on demand, in the stored dtype).

    `read` returns an array the loader copies into a tensor (through the backend's
    `*_from_data`).
    """

    shape: Shape
    read: Callable[[], np.ndarray]


Source = dict[str, Entry]
Adapter = Callable[[Source, Recordable], Source]


@dataclass
class LoadReport:
    """What a load did.

    Attributes:
        path: the file read.
        loaded: module keys whose values were replaced.
        missing: module keys the record lacks (left unchanged).
        unexpected: record keys (after remapping) the module lacks (ignored).
        mismatched: key -> (module shape, stored shape) for shapes that differ (left unchanged).
        metadata: the user metadata stored with the record.
    """

    path: str
    loaded: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)
    mismatched: dict[str, tuple[Shape, Shape]] = field(default_factory=dict)
    metadata: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """Whether every module tensor was loaded and every stored tensor used."""
        return not (self.missing or self.unexpected or self.mismatched)


def check_metadata(metadata: Mapping[str, str] | None, op: str) -> dict[str, str]:
    """`metadata` as a plain dict, checked to map str to str (as safetensors requires).

    Raises:
        RecordError: for non-string keys or values.
    """
    out = dict(metadata or {})
    bad = [k for k, v in out.items() if not (isinstance(k, str) and isinstance(v, str))]
    if bad:
        raise RecordError(op, "metadata must map str to str", keys=bad)
    return out


def remap_keys(source: Source, remap: Remap, path: str) -> Source:
    """Rename stored keys by regex rules.

    Args:
        source: stored entries by key.
        remap: (pattern, replacement) rules applied in order, each an `re.sub` over the whole
            key (so rules chain); a None replacement drops the keys the pattern matches.
        path: the file, for error messages.
    Returns:
        The entries under their new keys.
    Raises:
        RecordKeyError: when two stored keys end up with the same name.
    """
    rules = [(re.compile(pattern), repl) for pattern, repl in remap]
    out: Source = {}
    origin: dict[str, str] = {}
    for key, entry in source.items():
        new = _rename(key, rules)
        if new is None:
            continue
        if new in out:
            raise RecordKeyError("remap", f"{path}: two stored keys map to one name",
                                 report=LoadReport(path), name=new, keys=[origin[new], key])
        out[new], origin[new] = entry, key
    return out


def _rename(key: str, rules: list[tuple[re.Pattern[str], str | None]]) -> str | None:
    for pattern, repl in rules:
        if repl is None:
            if pattern.search(key):
                return None
        else:
            key = pattern.sub(repl, key)
    return key


def load_into(module: Recordable, source: Source, *, path: str, op: str,
              metadata: Mapping[str, str] | None = None, dtype: DTypePolicy = "cast",
              remap: Remap | None = None, strict: bool = True,
              adapter: Adapter | None = None) -> LoadReport:
    """Replace `module`'s Params and Buffers (in place, ids kept) by the stored values.

    Args:
        module: the target module.
        source: stored entries by key.
        path: the file read, for the report and error messages.
        op: the public loading function, for error messages.
        metadata: the record's user metadata, copied into the report.
        dtype: "cast" converts values to each module tensor's dtype; "keep" gives the module
            tensor the stored dtype.
        remap: regex (pattern, replacement) rules renaming stored keys (see `remap_keys`).
        strict: raise unless keys and shapes match exactly; when False, load what fits and
            report the rest.
        adapter: renames / transforms stored entries for the module after `remap`
            (e.g. `PyTorchAdapter`).
    Returns:
        The load report.
    Raises:
        RecordKeyError: strict load with missing or unexpected keys (nothing is loaded).
        RecordShapeError: strict load with shape mismatches (nothing is loaded).
        RecordDTypeError: a stored dtype burn has no equivalent for (nothing is loaded).
        CorruptRecordError: a stored tensor that cannot be read (nothing is loaded).
    """
    if dtype not in ("cast", "keep"):
        raise RecordError(op, "dtype policy must be 'cast' or 'keep'", dtype=dtype)
    if remap:
        source = remap_keys(source, remap, path)
    if adapter is not None:
        source = adapter(source, module)
    targets = dict(module.named_tensors())
    report = LoadReport(path, metadata=dict(metadata or {}))
    report.missing = [k for k in targets if k not in source]
    report.unexpected = [k for k in source if k not in targets]
    report.mismatched = {k: (p.shape, source[k].shape) for k, p in targets.items()
                         if k in source and tuple(p.shape) != source[k].shape}
    if strict and (report.missing or report.unexpected):
        raise RecordKeyError(op, f"{path}: stored keys do not match the module", report=report,
                             missing=_short(report.missing), unexpected=_short(report.unexpected))
    if strict and report.mismatched:
        raise RecordShapeError(op, f"{path}: stored shapes do not match the module",
                               report=report, mismatched=_short(
                                   [f"{k}: module {m} vs stored {s}"
                                    for k, (m, s) in report.mismatched.items()]))
    # every value read and converted before any is set: a load that fails leaves the module
    # as it was
    loaded = {}
    for key, param in targets.items():
        if key not in source or key in report.mismatched:
            continue
        values = source[key].read()
        try:
            stored = from_numpy(values.dtype, op)
        except DTypeError:
            raise RecordDTypeError(op, f"{path}: stored dtype has no burn equivalent", key=key,
                                   dtype=str(values.dtype)) from None
        target = param.dtype if dtype == "cast" else stored
        loaded[key] = tensor(values, dtype=target, device=param.device)
    for key, value in loaded.items():
        targets[key].set_(value)
        report.loaded.append(key)
    return report


def _short(keys: list[str], limit: int = 20) -> list[str]:
    return keys if len(keys) <= limit else [*keys[:limit], f"... ({len(keys) - limit} more)"]
