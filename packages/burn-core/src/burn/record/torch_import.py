"""Import PyTorch `.pt` / `.pth` checkpoints (torch.save's zip format, or the legacy one)
without running pickle code, and adapt torch naming / layout conventions to burn modules."""

from __future__ import annotations

import io
import lzma
import os
import pickle
import zipfile
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from burn.record.errors import CorruptRecordError, RecordError
from burn.record.policy import (
    DTypePolicy,
    Entry,
    LoadReport,
    Recordable,
    Remap,
    Source,
    load_into,
)
from burn.record.unpickler import BoundedReader, SafeUnpickler, TensorRef

EXTENSIONS = (".pt", ".pth")


# A compressed zip entry may inflate to at most this many times its stored size (torch never
# compresses; zip-bomb guards such as Apache POI's use the same ratio) or to _SMALL bytes.
MAX_INFLATION = 100
_SMALL = 1 << 20
# Nesting depth of dicts around the tensors (state dicts nest a few levels).
MAX_DEPTH = 64


def read_pytorch(path: str | os.PathLike[str]) -> dict[str, np.ndarray]:
    """The tensors of a torch checkpoint, as C-contiguous numpy arrays (read-only views of the
    storage bytes where torch's layout already is contiguous, fresh copies otherwise).

    Nested dicts (e.g. `{"model": state_dict, "epoch": 3}`) are flattened with dotted keys;
    non-tensor values are skipped. Every allocation is bounded by what the file holds: declared
    sizes and strides are checked against the storage bytes (a tensor never has more elements
    than its storage: expanded tensors are refused), storages are read only up to their
    declared size, and a compressed entry may inflate at most `MAX_INFLATION` times.

    Args:
        path: a file written by `torch.save`: the zip format (the default since torch 1.6) or
            the legacy one.
    Returns:
        Arrays by key, with torch's dtype and shape (shared storages are read once).
    Raises:
        UnsafePickleError: when the pickle asks for anything outside the allow-list.
        CorruptRecordError: for a file that is not a readable torch checkpoint, or declares
            more data than it holds.
    """
    name = os.fspath(path)
    with open(name, "rb") as f:  # (a missing or unreadable file raises here, as open does)
        try:
            if zipfile.is_zipfile(f):
                with zipfile.ZipFile(f) as zf:
                    return _read_zip(zf, name)
            f.seek(0)
            return _read_legacy(BoundedReader(f, os.fstat(f.fileno()).st_size), name)
        except RecordError:
            raise
        except (zipfile.BadZipFile, pickle.UnpicklingError, ValueError, TypeError, KeyError,
                EOFError, AttributeError, IndexError, OverflowError, MemoryError,
                RecursionError, NotImplementedError, RuntimeError, OSError, zlib.error,
                lzma.LZMAError) as e:
            # (zipfile: RuntimeError for an entry flagged encrypted; OSError, zlib.error and
            # LZMAError from an entry's damaged compressed stream)
            raise CorruptRecordError("load_pytorch", f"{name}: unreadable torch checkpoint",
                                     error=f"{type(e).__name__}: {str(e)[:500]}") from None


def _read_entry(zf: zipfile.ZipFile, entry: str, nbytes: int | None = None) -> bytes:
    """The bytes of a zip entry: exactly `nbytes` (None: the entry's declared size), streamed
    so that no more than that is ever inflated."""
    info = zf.getinfo(entry)
    size = info.file_size if nbytes is None else nbytes
    if info.file_size != size:
        raise ValueError(f"entry {entry} holds {info.file_size} bytes, expected {size}")
    if info.compress_type != zipfile.ZIP_STORED and size > max(
            MAX_INFLATION * info.compress_size, _SMALL):
        raise ValueError(f"entry {entry} would inflate {info.compress_size} bytes to {size} "
                         f"(more than {MAX_INFLATION} times: a zip bomb?)")
    with zf.open(info) as f:
        data = f.read(size + 1)
    if len(data) != size:
        raise ValueError(f"entry {entry} holds {len(data)} bytes, expected {size}")
    return data


def _read_zip(zf: zipfile.ZipFile, name: str) -> dict[str, np.ndarray]:
    pickles = [n for n in zf.namelist() if n.endswith("/data.pkl") and n.count("/") == 1]
    if len(pickles) != 1:
        raise ValueError("no single <archive>/data.pkl entry (not a torch zip checkpoint)")
    root = pickles[0].removesuffix("data.pkl")
    little = (_read_entry(zf, root + "byteorder") != b"big"
              if root + "byteorder" in zf.namelist() else True)
    data = _read_entry(zf, pickles[0])
    unpickler = SafeUnpickler(BoundedReader(io.BytesIO(data), len(data)), name)
    refs = _tensors(unpickler.load())
    roots = {key: _as_native(_read_entry(zf, f"{root}data/{key}", numel * dtype.itemsize),
                             dtype, little)
             for key, (dtype, numel) in unpickler.storages.items()}
    return _resolve(refs, roots)


def _read_legacy(f: BoundedReader, name: str) -> dict[str, np.ndarray]:
    """torch.save(..., _use_new_zipfile_serialization=False): magic, protocol and system-info
    pickles, the object pickle, the storage key list, then each storage as an int64 element
    count followed by its bytes."""
    unpickler = SafeUnpickler(f, name)
    if unpickler.load() != _LEGACY_MAGIC or unpickler.load() != _LEGACY_PROTOCOL:
        raise ValueError("neither a torch zip checkpoint nor a legacy torch checkpoint")
    info = unpickler.load()
    little = bool(info.get("little_endian", True)) if isinstance(info, dict) else True
    refs = _tensors(unpickler.load())
    roots = {}
    for key in unpickler.load():
        dtype, declared = unpickler.storages[str(key)]
        numel = int.from_bytes(_read_exactly(f, 8), "little" if little else "big")
        if numel != declared:
            raise ValueError(f"storage {key} holds {numel} elements, declared {declared}")
        roots[str(key)] = _as_native(_read_exactly(f, numel * dtype.itemsize), dtype, little)
    return _resolve(refs, roots)


_LEGACY_MAGIC, _LEGACY_PROTOCOL = 0x1950A86A20F9469CFC6C, 1001


def _read_exactly(f: BoundedReader, n: int) -> bytes:
    data = f.read(n)
    if len(data) != n:
        raise EOFError(f"storage data truncated ({len(data)} of {n} bytes)")
    return data


def _as_native(raw: bytes, dtype: np.dtype, little: bool) -> np.ndarray:
    if raw and len(raw) % dtype.itemsize:
        raise ValueError(f"storage of {len(raw)} bytes is no whole number of {dtype}")
    if little or dtype.itemsize == 1:
        return np.frombuffer(raw, dtype)
    swapped = np.frombuffer(raw, np.dtype(f">u{dtype.itemsize}")).astype(f"<u{dtype.itemsize}")
    return swapped.view(dtype)


def _tensors(obj: Any, prefix: str = "", out: dict[str, TensorRef] | None = None,
             depth: int = 0) -> dict[str, TensorRef]:
    """The TensorRefs in `obj`, nested mappings flattened to dotted keys.

    Raises:
        ValueError: for mappings nested deeper than `MAX_DEPTH` (or containing themselves).
    """
    out = {} if out is None else out
    if isinstance(obj, TensorRef):
        out[prefix] = obj
    elif isinstance(obj, Mapping):
        if depth >= MAX_DEPTH:
            raise ValueError(f"dicts nested deeper than {MAX_DEPTH} levels (or a cycle)")
        for key, value in obj.items():
            _tensors(value, f"{prefix}.{key}" if prefix else str(key), out, depth + 1)
    return out


def _resolve(refs: dict[str, TensorRef], roots: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {key: np.asarray(ref.resolve(roots[ref.storage.key]), order="C")
            for key, ref in refs.items()}


@dataclass(frozen=True)
class PyTorchAdapter:
    """Maps torch state_dict conventions onto a burn module, only where the module says so.

    Rules, applied to each stored key `<owner>.<name>` (after `remap`):

    - Linear weights: a 2-d `weight` whose owner module is linear is transposed from torch's
      [out, in] to burn's [in, out]. A module is linear when its class sets
      `torch_transpose_weight = True`; without that attribute, when its class is named
      `Linear` (set `torch_transpose_weight = False` to opt out).
    - Renames: `<owner>.<name>` becomes `<owner>.<renames[name]>` when the module has that key
      and not the original one (torch norms' `weight` / `bias` -> burn's `gamma` / `beta`).
    - Dropped: `<owner>.<name>` for `name` in `drop` when the module has no such key
      (torch BatchNorm's `num_batches_tracked`).

    Attributes:
        renames: torch parameter name -> burn name.
        drop: torch-only tensor names to ignore.
    """

    renames: Mapping[str, str] = field(
        default_factory=lambda: {"weight": "gamma", "bias": "beta"})
    drop: tuple[str, ...] = ("num_batches_tracked",)

    def __call__(self, source: Source, module: Recordable) -> Source:
        """Adapt `source` for `module` (see the class docstring)."""
        targets = {k for k, _ in module.named_tensors()}
        modules = dict(module.named_modules())
        out: Source = {}
        for key, entry in source.items():
            owner, _, name = key.rpartition(".")
            if key not in targets:
                alias = self.renames.get(name)
                renamed = f"{owner}.{alias}" if owner else alias
                if alias is not None and renamed in targets:
                    key, name = renamed, alias
                elif name in self.drop:
                    continue
            if name == "weight" and len(entry.shape) == 2 and _is_linear(modules.get(owner)):
                entry = _transposed(entry)
            out[key] = entry
        return out


def _transposed(entry: Entry) -> Entry:
    return Entry(entry.shape[::-1], lambda: entry.read().T)


def _stored(array: np.ndarray) -> Entry:
    return Entry(array.shape, lambda: array)


def _is_linear(module: object) -> bool:
    if module is None:
        return False
    cls = type(module)
    return bool(getattr(cls, "torch_transpose_weight", cls.__name__ == "Linear"))


def load_pytorch(module: Recordable, path: str | os.PathLike[str], *,
                 dtype: DTypePolicy = "cast", remap: Remap | None = None, strict: bool = True,
                 adapter: PyTorchAdapter | None = None) -> LoadReport:
    """Load a torch checkpoint (a state_dict saved with `torch.save`) into `module`.

    Args:
        module: the target module (values replaced in place, ids kept).
        path: the `.pt` / `.pth` file; its pickle is never executed.
        dtype: "cast" to each module tensor's dtype, or "keep" the stored dtype.
        remap: regex (pattern, replacement) rules renaming stored keys (applied before the
            adapter).
        strict: raise on missing / unexpected keys and shape mismatches; else report them.
        adapter: torch -> burn conventions (default `PyTorchAdapter()`).
    Returns:
        The load report.
    Raises:
        UnsafePickleError, CorruptRecordError, RecordKeyError, RecordShapeError.
    """
    arrays = read_pytorch(path)
    source = {k: _stored(a) for k, a in arrays.items()}
    return load_into(module, source, path=os.fspath(path), op="load_pytorch", dtype=dtype,
                     remap=remap, strict=strict, adapter=adapter or PyTorchAdapter())
