"""Burnpack (`.bpk`): burn's native record format, with a CRC-32 per tensor.

Layout (little endian):

    0   8 bytes   magic b"BURNPACK"
    8   u32       format version (2; version 1 files, without data checksums, are still read)
    12  u32       CRC-32 of the JSON header
    16  u64       JSON header length H
    24  H bytes   JSON header, space-padded so the data starts on a 64-byte boundary:
                  {"tensors": {name: {"dtype", "shape", "offset", "nbytes", "crc32"}},
                   "metadata": {...}}
    D   ...       tensor data; each `offset` is relative to D and a multiple of 64

Loading copies each tensor out of the file (the file can be truncated or rewritten afterwards
without touching the loaded values) and checks its CRC-32; `mmap=True` reads through a
read-only memory map instead (see `read_native` for the risk).
"""

from __future__ import annotations

import json
import math
import mmap as mmap_module
import os
import struct
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import IO

import numpy as np

from burn.dtype import DType, from_numpy
from burn.record.errors import CorruptRecordError, RecordChecksumError
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

MAGIC = b"BURNPACK"
VERSION = 2
READABLE_VERSIONS = (1, 2)  # version 1: no per-tensor checksums
ALIGN = 64
EXTENSION = ".bpk"
_PREFIX = struct.Struct("<8sIIQ")
_OP = "load_native"


def _align(n: int) -> int:
    return -(-n // ALIGN) * ALIGN


def _raw(array: np.ndarray) -> memoryview:
    """The bytes of a C-contiguous array."""
    return array.reshape(-1).view(np.uint8).data


def save_native(module: Recordable, path: str | os.PathLike[str],
                metadata: Mapping[str, str] | None = None) -> None:
    """Save every Param and Buffer of `module` as a burnpack file (atomically).

    Args:
        module: the module to save.
        path: the target file (conventionally `*.bpk`).
        metadata: str -> str pairs stored in the header.
    """
    arrays = {key: np.asarray(p.to_numpy(), order="C") for key, p in module.named_tensors()}
    offsets, end = [], 0
    for arr in arrays.values():
        offsets.append(end)
        end = _align(end + arr.nbytes)
    index = {key: {"dtype": from_numpy(arr.dtype).value, "shape": list(arr.shape),
                   "offset": offset, "nbytes": arr.nbytes, "crc32": zlib.crc32(_raw(arr))}
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
            f.write(_raw(arr))
            position = offset + arr.nbytes


@dataclass(frozen=True)
class _Spec:
    """One stored tensor: where its bytes are (absolute `position`) and their CRC-32 (None in
    version 1 files)."""

    key: str
    dtype: np.dtype
    shape: tuple[int, ...]
    position: int
    nbytes: int
    crc32: int | None

    @property
    def count(self) -> int:
        return math.prod(self.shape)


def read_native(path: str | os.PathLike[str], *, mmap: bool = False,
                verify: bool = True) -> tuple[Source, dict[str, str]]:
    """Index a burnpack file's tensors (each read on demand).

    Args:
        path: the file.
        mmap: read through a read-only memory map, and return arrays that *view* the map.
            Opt-in, because a mapped file that anything truncates or rewrites in place while
            such an array lives kills the process with SIGBUS on the next access, or silently
            changes the values. The default copies each tensor out of the file when it is read.
        verify: check each tensor's CRC-32 when it is read (costs one pass over its bytes;
            version 1 files have no checksums and are never verified).
    Returns:
        (entries by key; user metadata). Reading an entry raises `RecordChecksumError` for
        damaged bytes and `CorruptRecordError` when the file was truncated or replaced since.
    Raises:
        CorruptRecordError: for a file that is not a complete, well-formed burnpack.
    """
    name = os.fspath(path)
    with open(name, "rb") as f:
        stat = os.fstat(f.fileno())
        header, start = _read_header(f, name, stat.st_size)
        mapped = (mmap_module.mmap(f.fileno(), 0, access=mmap_module.ACCESS_READ)
                  if mmap and stat.st_size else None)
    try:
        parsed = json.loads(header)
        specs = [_spec(str(key), spec, start, stat.st_size)
                 for key, spec in parsed["tensors"].items()]
        metadata = {str(k): str(v) for k, v in parsed.get("metadata", {}).items()}
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as e:
        raise _corrupt(name, "malformed header", error=f"{type(e).__name__}: {e}") from None
    identity = (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns)
    source = {}
    for spec in specs:
        if mapped is not None:
            read = _mapped_reader(mapped, spec, name, verify)
        else:
            read = _file_reader(name, identity, spec, verify)
        source[spec.key] = Entry(spec.shape, read)
    return source, metadata


def _corrupt(name: str, message: str, **details: object) -> CorruptRecordError:
    return CorruptRecordError(_OP, f"{name}: {message}", **details)


def _read_header(f: IO[bytes], name: str, size: int) -> tuple[bytes, int]:
    """The checked JSON header and the absolute position of the data."""
    prefix = f.read(_PREFIX.size)
    if len(prefix) < _PREFIX.size:
        raise _corrupt(name, "truncated header", size=size)
    magic, version, crc, length = _PREFIX.unpack(prefix)
    if magic != MAGIC:
        raise _corrupt(name, "not a burnpack file", magic=magic)
    if version not in READABLE_VERSIONS:
        raise _corrupt(name, "unsupported burnpack version", version=version,
                       supported=READABLE_VERSIONS)
    if length > size - _PREFIX.size:
        raise _corrupt(name, "truncated header", size=size, header_length=length)
    header = f.read(length)
    if zlib.crc32(header) != crc:
        raise _corrupt(name, "header checksum mismatch")
    return header, _PREFIX.size + length


def _spec(key: str, spec: dict[str, object], start: int, size: int) -> _Spec:
    dtype = DType(spec["dtype"]).numpy
    shape = tuple(int(n) for n in spec["shape"])  # type: ignore[attr-defined]
    offset, nbytes = int(spec["offset"]), int(spec["nbytes"])  # type: ignore[call-overload]
    crc = spec.get("crc32")
    if (min((offset, nbytes, *shape), default=0) < 0 or offset % ALIGN
            or nbytes != math.prod(shape) * dtype.itemsize
            or not (crc is None or (type(crc) is int and 0 <= crc < 2**32))):
        raise ValueError(f"bad tensor spec for {key}: {spec}")
    if start + offset + nbytes > size:
        raise ValueError(f"data of {key} past the end of the file (truncated?): {spec}")
    return _Spec(key, dtype, shape, start + offset, nbytes, crc)


def _verified(data: np.ndarray, spec: _Spec, name: str, verify: bool) -> np.ndarray:
    if verify and spec.crc32 is not None and zlib.crc32(_raw(data)) != spec.crc32:
        raise RecordChecksumError(_OP, f"{name}: tensor data checksum mismatch (damaged file)",
                                  key=spec.key, shape=spec.shape, dtype=spec.dtype)
    return data.reshape(spec.shape)


def _mapped_reader(mapped: mmap_module.mmap, spec: _Spec, name: str, verify: bool
                   ) -> Callable[[], np.ndarray]:
    def read() -> np.ndarray:
        data = np.frombuffer(mapped, spec.dtype, spec.count, spec.position)
        return _verified(data, spec, name, verify)

    return read


def _file_reader(name: str, identity: tuple[int, ...], spec: _Spec, verify: bool
                 ) -> Callable[[], np.ndarray]:
    def read() -> np.ndarray:
        data = np.empty(spec.count, spec.dtype)
        with open(name, "rb") as f:
            st = os.fstat(f.fileno())
            if (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns) != identity:
                raise _corrupt(name, "the file changed since it was indexed", key=spec.key)
            f.seek(spec.position)
            got = f.readinto(_raw(data)) if spec.nbytes else 0
        if got != spec.nbytes:
            raise _corrupt(name, "tensor data truncated", key=spec.key, expected=spec.nbytes,
                           got=got)
        return _verified(data, spec, name, verify)

    return read


def load_native(module: Recordable, path: str | os.PathLike[str], *,
                dtype: DTypePolicy = "cast", remap: Remap | None = None, strict: bool = True,
                mmap: bool = False, verify: bool = True) -> LoadReport:
    """Load a burnpack file into `module` (values copied into the module's tensors).

    Args:
        module: the target module (values replaced in place, ids kept).
        path: the file.
        dtype: "cast" to each module tensor's dtype, or "keep" the stored dtype.
        remap: regex (pattern, replacement) rules renaming stored keys.
        strict: raise on missing / unexpected keys and shape mismatches; else report them.
        mmap: read the file through a memory map (see `read_native`: a file truncated while
            it is being read kills the process with SIGBUS). Default False: plain reads.
        verify: check every tensor's CRC-32 (default True; False skips the pass).
    Returns:
        The load report.
    Raises:
        RecordChecksumError: a tensor's bytes do not match its checksum (names the tensor).
        CorruptRecordError, RecordKeyError, RecordShapeError.
    """
    source, metadata = read_native(path, mmap=mmap, verify=verify)
    return load_into(module, source, path=os.fspath(path), op=_OP, metadata=metadata,
                     dtype=dtype, remap=remap, strict=strict)
