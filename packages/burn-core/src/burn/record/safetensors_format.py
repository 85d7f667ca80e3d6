"""The safetensors format, through the `safetensors` package (bfloat16 via ml_dtypes)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import numpy as np
from safetensors import SafetensorError, safe_open
from safetensors.numpy import save_file

from burn.record.errors import CorruptRecordError, RecordDTypeError
from burn.record.files import atomic_path
from burn.record.policy import (
    DTypePolicy,
    Entry,
    LoadReport,
    Recordable,
    Remap,
    Source,
    check_metadata,
    load_into,
)

EXTENSION = ".safetensors"


def save_safetensors(module: Recordable, path: str | os.PathLike[str],
                     metadata: Mapping[str, str] | None = None) -> None:
    """Save every Param and Buffer of `module` as a safetensors file (atomically).

    Args:
        module: the module to save.
        path: the target file (conventionally `*.safetensors`).
        metadata: str -> str pairs stored in the header.
    """
    arrays = {key: np.asarray(p.to_numpy(), order="C") for key, p in module.named_tensors()}
    meta = check_metadata(metadata, "save_safetensors")
    with atomic_path(path) as tmp:
        save_file(arrays, tmp, metadata=meta or None)


def read_safetensors(path: str | os.PathLike[str]) -> tuple[Source, dict[str, str]]:
    """Open a safetensors file and index its tensors (each read on demand).

    Args:
        path: the file.
    Returns:
        (entries by key, reading fresh arrays; user metadata).
    Raises:
        CorruptRecordError: for a file safetensors cannot parse (truncated, bad header).
    """
    name = os.fspath(path)
    try:
        handle = safe_open(name, framework="numpy")
        source = {key: _entry(handle, name, key) for key in handle.keys()}
        metadata = handle.metadata() or {}
    except SafetensorError as e:
        raise CorruptRecordError("load_safetensors", f"{name}: unreadable safetensors file",
                                 error=str(e)) from None
    return source, metadata


def _entry(handle: Any, name: str, key: str) -> Entry:
    def read() -> np.ndarray:
        try:
            return handle.get_tensor(key)  # type: ignore[no-any-return]
        except SafetensorError as e:
            raise CorruptRecordError("load_safetensors", f"{name}: cannot read tensor",
                                     key=key, error=str(e)) from None
        except (AttributeError, TypeError, ValueError):  # a dtype numpy lacks (float8)
            raise RecordDTypeError("load_safetensors",
                                   f"{name}: stored dtype has no burn equivalent", key=key,
                                   dtype=handle.get_slice(key).get_dtype()) from None

    return Entry(tuple(handle.get_slice(key).get_shape()), read)


def load_safetensors(module: Recordable, path: str | os.PathLike[str], *,
                     dtype: DTypePolicy = "cast", remap: Remap | None = None,
                     strict: bool = True) -> LoadReport:
    """Load a safetensors file into `module`.

    Args:
        module: the target module (values replaced in place, ids kept).
        path: the file.
        dtype: "cast" to each module tensor's dtype, or "keep" the stored dtype.
        remap: regex (pattern, replacement) rules renaming stored keys.
        strict: raise on missing / unexpected keys and shape mismatches; else report them.
    Returns:
        The load report.
    Raises:
        CorruptRecordError, RecordKeyError, RecordShapeError.
    """
    source, metadata = read_safetensors(path)
    return load_into(module, source, path=os.fspath(path), op="load_safetensors",
                     metadata=metadata, dtype=dtype, remap=remap, strict=strict)
