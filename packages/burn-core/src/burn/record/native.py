"""Burnpack (`.bpk`): burn's native record format, memory-mapped on load.

Layout (little endian):

    0   8 bytes   magic b"BURNPACK"
    8   u32       format version (1)
    12  u32       CRC-32 of the JSON header
    16  u64       JSON header length H
    24  H bytes   JSON header, space-padded so the data starts on a 64-byte boundary:
                  {"tensors": {name: {"dtype", "shape", "offset", "nbytes"}}, "metadata": {...}}
    D   ...       tensor data; each `offset` is relative to D and a multiple of 64

Loading maps the file read-only and hands each tensor's mapped bytes to the NumPy backend as
the primitive itself: no copy is made until an op produces new values. Files are replaced
atomically, so a mapped file is never rewritten under a loaded model.
"""

from __future__ import annotations

import json
import math
import mmap
import os
import struct
import zlib
from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from burn.dtype import DType, from_numpy
from burn.record.arrays import host_array
from burn.record.errors import CorruptRecordError
from burn.record.files import atomic_path
from burn.record.policy import (
    DTypePolicy,
    Entry,
    LoadReport,
    Remap,
    Source,
    check_metadata,
    load_into,
)

if TYPE_CHECKING:
    from burn.nn.module import Module

MAGIC = b"BURNPACK"
VERSION = 1
ALIGN = 64
EXTENSION = ".bpk"
_PREFIX = struct.Struct("<8sIIQ")


def _align(n: int) -> int:
    return -(-n // ALIGN) * ALIGN


def save_native(module: Module, path: str | os.PathLike[str],
                metadata: Mapping[str, str] | None = None) -> None:
    """Save every Param and Buffer of `module` as a burnpack file (atomically).

    Args:
        module: the module to save.
        path: the target file (conventionally `*.bpk`).
        metadata: str -> str pairs stored in the header.
    """
    arrays = {key: host_array(p) for key, p in module.named_tensors()}
    offsets, end = [], 0
    for arr in arrays.values():
        offsets.append(end)
        end = _align(end + arr.nbytes)
    index = {key: {"dtype": from_numpy(arr.dtype).value, "shape": list(arr.shape),
                   "offset": offset, "nbytes": arr.nbytes}
             for (key, arr), offset in zip(arrays.items(), offsets, strict=True)}
    header = json.dumps({"tensors": index, "metadata": check_metadata(metadata, "save_native")},
                        separators=(",", ":")).encode()
    header += b" " * (_align(_PREFIX.size + len(header)) - _PREFIX.size - len(header))
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        f.write(_PREFIX.pack(MAGIC, VERSION, zlib.crc32(header), len(header)))
        f.write(header)
        position = 0
        for arr, offset in zip(arrays.values(), offsets, strict=True):
            f.write(b"\0" * (offset - position))
            f.write(arr.reshape(-1).view(np.uint8).data)
            position = offset + arr.nbytes


def read_native(path: str | os.PathLike[str]) -> tuple[Source, dict[str, str]]:
    """Map a burnpack file and index its tensors.

    Args:
        path: the file.
    Returns:
        (entries by key, reading read-only arrays over the mapping; user metadata).
    Raises:
        CorruptRecordError: for a file that is not a complete, well-formed burnpack.
    """
    name = os.fspath(path)

    def corrupt(message: str, **details: object) -> CorruptRecordError:
        return CorruptRecordError("load_native", f"{name}: {message}", **details)

    with open(name, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        prefix = f.read(_PREFIX.size)
        if len(prefix) < _PREFIX.size:
            raise corrupt("truncated header", size=size)
        magic, version, crc, length = _PREFIX.unpack(prefix)
        if magic != MAGIC:
            raise corrupt("not a burnpack file", magic=magic)
        if version != VERSION:
            raise corrupt("unsupported burnpack version", version=version, supported=VERSION)
        if length > size - _PREFIX.size:
            raise corrupt("truncated header", size=size, header_length=length)
        header = f.read(length)
        if zlib.crc32(header) != crc:
            raise corrupt("header checksum mismatch")
        start = _PREFIX.size + length
        mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    try:
        parsed = json.loads(header)
        source = {key: _entry(mapped, start, size, spec) for key, spec in
                  parsed["tensors"].items()}
        metadata = {str(k): str(v) for k, v in parsed.get("metadata", {}).items()}
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise corrupt("malformed header", error=str(e)) from None
    return source, metadata


def _entry(mapped: mmap.mmap, start: int, size: int, spec: dict[str, object]) -> Entry:
    dtype = DType(spec["dtype"]).numpy
    shape = tuple(int(n) for n in spec["shape"])  # type: ignore[attr-defined]
    offset, nbytes = int(spec["offset"]), int(spec["nbytes"])  # type: ignore[call-overload]
    count = math.prod(shape)
    if (min((offset, nbytes, *shape), default=0) < 0 or offset % ALIGN
            or nbytes != count * dtype.itemsize):
        raise ValueError(f"bad tensor spec {spec}")
    if start + offset + nbytes > size:
        raise ValueError(f"data past the end of the file (truncated?): {spec}")
    return Entry(shape, lambda: np.frombuffer(mapped, dtype, count, start + offset).reshape(shape))


def load_native(module: Module, path: str | os.PathLike[str], *, dtype: DTypePolicy = "cast",
                remap: Remap | None = None, strict: bool = True) -> LoadReport:
    """Load a burnpack file into `module` (memory-mapped: no copy when dtypes match).

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
    source, metadata = read_native(path)
    return load_into(module, source, path=os.fspath(path), op="load_native", metadata=metadata,
                     dtype=dtype, remap=remap, strict=strict)
