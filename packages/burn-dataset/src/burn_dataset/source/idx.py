"""The IDX file format (MNIST's): big-endian magic, dimension sizes, then raw data."""

from __future__ import annotations

import gzip
import os
import struct
import zlib
from pathlib import Path

import numpy as np

from burn_dataset.errors import CorruptFileError

# IDX type code -> big-endian numpy dtype.
IDX_DTYPES: dict[int, np.dtype] = {
    0x08: np.dtype(">u1"),
    0x09: np.dtype(">i1"),
    0x0B: np.dtype(">i2"),
    0x0C: np.dtype(">i4"),
    0x0D: np.dtype(">f4"),
    0x0E: np.dtype(">f8"),
}


def _read_bytes(path: Path) -> bytes:
    """File contents, gunzipped when the name ends with ``.gz``."""
    if path.suffix != ".gz":
        return path.read_bytes()
    try:
        return gzip.decompress(path.read_bytes())
    except (OSError, EOFError, zlib.error) as e:  # (zlib.error: a damaged deflate stream)
        raise CorruptFileError(f"{path}: not a valid gzip file: {e}") from e


def read_idx(path: str | os.PathLike[str]) -> np.ndarray:
    """Read an IDX file (optionally gzipped).

    Args:
        path: the file.

    Returns:
        The array, in native byte order, with the file's shape and dtype.

    Raises:
        CorruptFileError: bad magic number, unknown type code, or data size different from the
            one the header declares (names the file and both sizes).
    """
    path = Path(path)
    data = _read_bytes(path)
    if len(data) < 4 or data[0] != 0 or data[1] != 0:
        raise CorruptFileError(f"{path}: bad IDX magic number {data[:4].hex() or '(empty)'}")
    code, ndim = data[2], data[3]
    if code not in IDX_DTYPES:
        raise CorruptFileError(f"{path}: unknown IDX type code 0x{code:02x}")
    header = 4 + 4 * ndim
    if len(data) < header:
        raise CorruptFileError(
            f"{path}: truncated header: {ndim} dimensions need {header} bytes, file has "
            f"{len(data)}"
        )
    shape = struct.unpack(f">{ndim}I", data[4:header])
    dtype = IDX_DTYPES[code]
    expected = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    found = len(data) - header
    if found != expected:
        kind = "truncated" if found < expected else "trailing bytes"
        raise CorruptFileError(
            f"{path}: {kind}: header declares shape {shape} ({expected} data bytes), file has "
            f"{found} data bytes"
        )
    array = np.frombuffer(data, dtype=dtype, offset=header).reshape(shape)
    return array.astype(dtype.newbyteorder("="))


def write_idx(path: str | os.PathLike[str], array: np.ndarray) -> Path:
    """Write ``array`` as an IDX file (gzipped when the name ends with ``.gz``).

    Args:
        path: the destination.
        array: an array whose dtype is one of the IDX types.

    Returns:
        The path written.
    """
    path = Path(path)
    codes = {dt.newbyteorder("="): code for code, dt in IDX_DTYPES.items()}
    arr = np.asarray(array)
    code = codes.get(arr.dtype.newbyteorder("="))
    if code is None:
        raise TypeError(f"dtype {arr.dtype} has no IDX type code")
    header = struct.pack(f">BBBB{arr.ndim}I", 0, 0, code, arr.ndim, *arr.shape)
    data = header + arr.astype(IDX_DTYPES[code]).tobytes()
    path.write_bytes(gzip.compress(data) if path.suffix == ".gz" else data)
    return path
