"""Saving and loading modules: burnpack (`.bpk`, burn's format, checksummed), safetensors, and
PyTorch checkpoint import (`.pt` / `.pth`, no pickle code run).

`save(module, path)` / `load(module, path)` pick the format from the extension. Every loader
shares the options `dtype` ("cast" to the module's dtypes, or "keep" the stored ones), `remap`
(regex key renames) and `strict` (raise on any difference, or load what fits), and returns a
`LoadReport`. Loading replaces Param / Buffer values in place, keeping their ids.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from burn.record import errors
from burn.record.errors import (
    CorruptRecordError,
    RecordChecksumError,
    RecordDTypeError,
    RecordError,
    RecordKeyError,
    RecordMismatchError,
    RecordShapeError,
    UnknownFormatError,
    UnsafePickleError,
)
from burn.record.native import EXTENSION as NATIVE_EXTENSION
from burn.record.native import load_native, read_native, save_native
from burn.record.policy import DTypePolicy, Entry, LoadReport, Recordable, Remap
from burn.record.safetensors_format import EXTENSION as SAFETENSORS_EXTENSION
from burn.record.safetensors_format import load_safetensors, read_safetensors, save_safetensors
from burn.record.torch_import import EXTENSIONS as PYTORCH_EXTENSIONS
from burn.record.torch_import import PyTorchAdapter, load_pytorch, read_pytorch

# format name -> (extensions, saver or None for import-only, loader)
FORMATS: dict[str, tuple[tuple[str, ...], Callable[..., None] | None,
                         Callable[..., LoadReport]]] = {
    "burnpack": ((NATIVE_EXTENSION,), save_native, load_native),
    "safetensors": ((SAFETENSORS_EXTENSION,), save_safetensors, load_safetensors),
    "pytorch": (PYTORCH_EXTENSIONS, None, load_pytorch),
}


def format_of(path: str | os.PathLike[str], format: str | None = None) -> str:
    """The format name for `path`: `format` when given, else by extension.

    Raises:
        UnknownFormatError: for an unknown format name or extension.
    """
    if format is not None:
        if format not in FORMATS:
            raise UnknownFormatError("record", "unknown format", format=format,
                                     known=sorted(FORMATS))
        return format
    suffix = Path(path).suffix.lower()
    for name, (extensions, _, _) in FORMATS.items():
        if suffix in extensions:
            return name
    raise UnknownFormatError("record", f"{os.fspath(path)}: no format for this extension; "
                             "pass format=", known=[e for x, _, _ in FORMATS.values() for e in x])


def save(module: Recordable, path: str | os.PathLike[str], format: str | None = None,
         metadata: Mapping[str, str] | None = None) -> None:
    """Save `module`'s Params and Buffers (atomically: a crash leaves any old file intact).

    Args:
        module: the module.
        path: the target file; `.bpk` -> burnpack, `.safetensors` -> safetensors.
        format: "burnpack" or "safetensors", overriding the extension.
        metadata: str -> str pairs stored with the tensors.
    Raises:
        UnknownFormatError: for an unknown or import-only format (pytorch).
    """
    name = format_of(path, format)
    saver = FORMATS[name][1]
    if saver is None:
        raise UnknownFormatError("save", f"{os.fspath(path)}: the {name} format is import-only",
                                 format=name)
    saver(module, path, metadata)


def load(module: Recordable, path: str | os.PathLike[str], format: str | None = None, *,
         dtype: DTypePolicy = "cast", remap: Remap | None = None, strict: bool = True,
         **options: Any) -> LoadReport:
    """Load a record into `module` (values replaced in place, ids kept).

    Args:
        module: the target module.
        path: the file; `.bpk`, `.safetensors`, `.pt` / `.pth`.
        format: "burnpack", "safetensors" or "pytorch", overriding the extension.
        dtype: "cast" to each module tensor's dtype, or "keep" the stored dtype.
        remap: regex (pattern, replacement) rules renaming stored keys, applied in order;
            a None replacement drops matching keys.
        strict: raise on missing / unexpected keys and shape mismatches; when False load what
            fits and report the rest.
        options: format-specific options (burnpack: `mmap`, `verify`; pytorch: `adapter`).
    Returns:
        The LoadReport (loaded, missing, unexpected, mismatched keys; stored metadata).
    Raises:
        UnknownFormatError, CorruptRecordError (RecordChecksumError), UnsafePickleError,
        RecordKeyError, RecordShapeError.
    """
    loader = FORMATS[format_of(path, format)][2]
    return loader(module, path, dtype=dtype, remap=remap, strict=strict, **options)


__all__ = [
    "FORMATS", "CorruptRecordError", "DTypePolicy", "Entry", "LoadReport", "PyTorchAdapter",
    "RecordChecksumError", "RecordDTypeError", "RecordError", "RecordKeyError",
    "RecordMismatchError",
    "RecordShapeError", "Recordable", "Remap",
    "UnknownFormatError", "UnsafePickleError", "errors", "format_of", "load", "load_native",
    "load_pytorch", "load_safetensors", "read_native", "read_pytorch", "read_safetensors",
    "save", "save_native", "save_safetensors",
]
