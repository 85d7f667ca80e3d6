"""`Checkpointer`: atomic training checkpoints (model, optimizer, lr scheduler, progress).

Layout of the checkpoint directory:

    epoch-0003/               one checkpoint: model.bpk, optimizer.npz, state.json
    epoch-0004-batch-000012/  a checkpoint taken mid-epoch (after an interrupt)
    latest.json               {"path": "epoch-0004-batch-000012", ...}
    best.json                 {"path": "epoch-0003", "metric": ..., "value": ...}

A checkpoint is written into a hidden temporary directory, which gets a `complete` marker
(written and synced last) and is then renamed; `latest.json` is replaced (atomically) last, so
a crash at any point leaves the previous latest checkpoint intact and loadable. Directories
with the marker are checkpoints, and so are legacy ones (written before the marker existed:
no marker but the whole file set, see `is_legacy_checkpoint`), which the first save marks.
Pruning renames a checkpoint to a hidden trash name before deleting it, so a kill mid-delete
never leaves a half-deleted `epoch-NNNN`. The first save of a `Checkpointer` removes only what
it can prove is its own leftover: hidden temporary and trash directories (`.tmp-*`) and
temporary pointer files (`.latest.json.<hex>.tmp`); any other directory, even an `epoch-*`
one that is no checkpoint, is left alone (neither listed nor pruned).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import zipfile
import zlib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from burn import record
from burn.dtype import DType
from burn.lr_scheduler import LrScheduler
from burn.nn.module import Module
from burn.optim import Optimizer
from burn.record.errors import CorruptRecordError
from burn.record.files import atomic_path
from burn.record.native import read_native
from burn.train.monitor import Mode, Monitor

MODEL_FILE = "model.bpk"
OPTIMIZER_FILE = "optimizer.npz"
STATE_FILE = "state.json"
COMPLETE_FILE = "complete"
LATEST = "latest.json"
BEST = "best.json"
_NAME = re.compile(r"^epoch-(\d+)(?:-batch-(\d+))?$")
_TEMP_PREFIX = ".tmp-"
_TEMP_FILE = re.compile(rf"^\.(?:{re.escape(LATEST)}|{re.escape(BEST)})\.[0-9a-f]+\.tmp$")


def checkpoint_name(epoch: int, batch: int = 0) -> str:
    """The directory name of the checkpoint after `epoch` epochs and `batch` more batches."""
    return f"epoch-{epoch:04d}" + (f"-batch-{batch:06d}" if batch else "")


@dataclass
class Checkpointer:
    """Saves a checkpoint after every epoch (and on interrupt); keeps the last `keep_last`
    ones, and the best one by a metric when `best_metric` is set.

    Args:
        keep_last: how many of the newest checkpoints to keep (>= 1).
        best_metric: metric name whose best epoch's checkpoint is always kept (None: no best).
        best_split: the split of `best_metric`.
        best_mode: "min" or "max".
        directory: where checkpoints go (the Learner's `artifact_dir/checkpoints` when None).
    """

    keep_last: int = 2
    best_metric: str | None = None
    best_split: str = "valid"
    best_mode: Mode = "min"
    directory: str | os.PathLike[str] | None = None
    _best: Monitor | None = field(init=False, repr=False, default=None)
    _cleaned: bool = field(init=False, repr=False, default=False)

    def __post_init__(self) -> None:
        if self.keep_last < 1:
            raise ValueError(f"Checkpointer: keep_last must be >= 1, got {self.keep_last}")
        if self.best_metric is not None:
            self._best = Monitor(self.best_metric, self.best_split, self.best_mode)

    def in_directory(self, directory: str | os.PathLike[str] | None) -> Checkpointer | None:
        """A fresh copy of this config, writing to its own directory or else `directory`
        (None when neither is set)."""
        chosen = self.directory if self.directory is not None else directory
        return None if chosen is None else replace(self, directory=chosen)

    @property
    def root(self) -> Path:
        """The checkpoint directory.

        Raises:
            ValueError: when no directory is set.
        """
        if self.directory is None:
            raise ValueError("Checkpointer: no directory (set directory= or use a Learner)")
        return Path(self.directory)

    # --- saving ---
    def save(self, model: Module, optimizer: Optimizer, scheduler: LrScheduler, *, epoch: int,
             batch: int = 0, metrics: dict[str, dict[str, float]] | None = None,
             extra: dict[str, Any] | None = None) -> Path:
        """Write a checkpoint atomically, update best / latest, prune old ones.

        Args:
            model, optimizer, scheduler: what to save.
            epoch: completed epochs.
            batch: batches completed in the next epoch (0 at an epoch end).
            metrics: the epoch's metrics ({split: {name: value}}), for the best checkpoint;
                None for a mid-epoch checkpoint.
            extra: more JSON state to store (e.g. the Learner's history).
        Returns:
            The checkpoint's directory.
        """
        root = self.root
        root.mkdir(parents=True, exist_ok=True)
        if not self._cleaned:
            self.clean()
        name = checkpoint_name(epoch, batch)
        final = root / name
        if final.exists() and self.latest() == final:
            return final  # this very progress is already the latest checkpoint
        best = self._best.state_dict() if self._best is not None else None
        improved = (self._best is not None and metrics is not None
                    and self._best.update(epoch, metrics))
        state = {"epoch": epoch, "batch": batch, "scheduler": scheduler.state_dict(),
                 "best": None if self._best is None else self._best.state_dict(),
                 "extra": extra or {}}
        tmp = root / f"{_TEMP_PREFIX}{name}-{secrets.token_hex(4)}"
        tmp.mkdir()
        try:
            record.save(model, tmp / MODEL_FILE)
            state["optimizer"] = write_optimizer(optimizer.state_dict(), tmp / OPTIMIZER_FILE)
            _write_json(tmp / STATE_FILE, state)
            _replace_dir(tmp, final)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            if self._best is not None and best is not None:
                self._best.load_state_dict(best)
            raise
        if improved and self._best is not None:
            _write_json(root / BEST, {"path": name, "epoch": epoch, "metric": self.best_metric,
                                      "split": self.best_split, "value": self._best.best})
        _write_json(root / LATEST, {"path": name, "epoch": epoch, "batch": batch})
        self._prune()
        return final

    def _prune(self) -> None:
        """Remove all but the newest `keep_last` checkpoints (latest and best always stay);
        directories that are no checkpoints are never touched."""
        keep = {p for p in (self.latest(), self.best()) if p is not None}
        listed = self.checkpoints()
        keep.update(listed[-self.keep_last:])
        for path in listed:
            if path not in keep:
                _remove_dir(path)

    def clean(self) -> None:
        """Remove the leftovers of interrupted writes and prunes (hidden `.tmp-*` directories,
        temporary `latest.json` / `best.json` files) and mark legacy checkpoints complete.
        Nothing else is deleted. (The first `save` calls it.)"""
        self._cleaned = True
        if not self.root.is_dir():
            return
        for path in self.root.iterdir():
            if path.name.startswith(_TEMP_PREFIX) and path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
            elif _TEMP_FILE.match(path.name) and path.is_file():
                path.unlink(missing_ok=True)
            elif is_legacy_checkpoint(path):
                _mark_complete(path)
                _fsync(path.parent)

    # --- finding and loading ---
    def _pointer(self, manifest: str) -> Path | None:
        path = self.root / manifest
        try:
            name = json.loads(path.read_text())["path"]
        except (OSError, ValueError, KeyError, TypeError):  # missing or damaged: no pointer
            return None
        target = self.root / str(name)
        return target if _NAME.match(str(name)) and _is_checkpoint(target) else None

    def latest(self) -> Path | None:
        """The newest complete checkpoint (None when there is none)."""
        return self._pointer(LATEST)

    def best(self) -> Path | None:
        """The best checkpoint by `best_metric` (None when there is none)."""
        return self._pointer(BEST)

    def checkpoints(self) -> list[Path]:
        """The complete (or legacy) checkpoints on disk, oldest first."""
        if not self.root.is_dir():
            return []
        return sorted((p for p in self.root.iterdir() if _is_checkpoint(p)), key=_progress)

    def load(self, path: str | os.PathLike[str], model: Module, optimizer: Optimizer,
             scheduler: LrScheduler) -> dict[str, Any]:
        """Restore a checkpoint into `model`, `optimizer` and `scheduler` (and this
        checkpointer's best tracking).

        Args:
            path: a checkpoint directory, or a checkpoint root (its latest is used).
            model, optimizer, scheduler: restored in place.
        Returns:
            The stored state: "epoch", "batch", "extra", ...
        Raises:
            FileNotFoundError: when `path` holds no checkpoint.
            CorruptRecordError: for a damaged state, optimizer or model file (`record.load`);
                nothing is restored then (the optimizer's and scheduler's states are put
                back).
        """
        directory = resolve_checkpoint(path)
        state = read_state(directory / STATE_FILE)
        optimizer_state = read_optimizer(state["optimizer"], directory / OPTIMIZER_FILE)
        before = optimizer.state_dict(), scheduler.state_dict()
        try:
            optimizer.load_state_dict(optimizer_state)
            try:
                scheduler.load_state_dict(state["scheduler"])
            except (KeyError, TypeError, ValueError, AttributeError) as e:
                raise _damaged(directory / STATE_FILE, e) from None
            record.load(model, directory / MODEL_FILE)
        except BaseException:
            optimizer.load_state_dict(before[0])
            scheduler.load_state_dict(before[1])
            raise
        if self._best is not None and state.get("best") is not None:
            self._best.load_state_dict(state["best"])
        return state


def resolve_checkpoint(path: str | os.PathLike[str]) -> Path:
    """The checkpoint directory `path` names: itself, or the latest of a checkpoint root.

    Raises:
        FileNotFoundError: when there is no complete checkpoint there.
    """
    path = Path(path)
    if _is_checkpoint(path):
        return path
    latest = Checkpointer(directory=path).latest()
    if latest is None:
        raise FileNotFoundError(f"no checkpoint at {path}")
    return latest


def _progress(path: Path) -> tuple[int, int]:
    m = _NAME.match(path.name)
    assert m is not None
    return int(m.group(1)), int(m.group(2) or 0)


def _write_json(path: Path, obj: Any) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(obj, indent=1))


def _complete(path: Path) -> bool:
    """Whether `path` is a checkpoint whose write finished (its marker exists)."""
    return (path / COMPLETE_FILE).is_file()


def is_legacy_checkpoint(path: Path) -> bool:
    """Whether `path` is a checkpoint written before the completion marker: an `epoch-*`
    directory without the marker whose file set is whole (a `model.bpk` with a well-formed
    header covering its tensors, an `optimizer.npz` that is a whole zip, a `state.json` with
    the optimizer, the scheduler and the progress the directory's name says).

    Args:
        path: a directory in a checkpoint root.
    Returns:
        True for a legacy checkpoint; False for anything else (marked checkpoints included).
    """
    if not _NAME.match(path.name) or not path.is_dir() or _complete(path):
        return False
    try:
        state = json.loads((path / STATE_FILE).read_text())
        read_native(path / MODEL_FILE)
        whole_zip = zipfile.is_zipfile(path / OPTIMIZER_FILE)
    except (OSError, ValueError, CorruptRecordError):
        return False
    return (whole_zip and isinstance(state, dict)
            and {"optimizer", "scheduler"} <= state.keys()
            and (state.get("epoch"), state.get("batch")) == _progress(path))


def _is_checkpoint(path: Path) -> bool:
    """Whether `path` is a checkpoint directory: marked complete, or legacy."""
    return _NAME.match(path.name) is not None and (_complete(path)
                                                   or is_legacy_checkpoint(path))


def _mark_complete(path: Path) -> None:
    """Write (and sync) the completion marker of the checkpoint directory `path`."""
    (path / COMPLETE_FILE).touch()
    _fsync(path / COMPLETE_FILE)


def _remove_dir(path: Path) -> None:
    """Delete a directory by renaming it to a hidden trash name first (which `clean` removes
    should the deletion be killed)."""
    trash = path.with_name(f"{_TEMP_PREFIX}trash-{path.name}-{secrets.token_hex(4)}")
    os.rename(path, trash)
    shutil.rmtree(trash, ignore_errors=True)


def _replace_dir(tmp: Path, final: Path) -> None:
    """Mark the written directory `tmp` complete (after syncing its files) and rename it to
    `final`. A checkpoint already at `final` (superseded progress) is removed first; anything
    else there is renamed aside to `<name>.kept-<hex>`, never deleted."""
    for file in tmp.iterdir():
        _fsync(file)
    _mark_complete(tmp)
    if _is_checkpoint(final):
        _remove_dir(final)
    elif final.exists():
        os.rename(final, final.with_name(f"{final.name}.kept-{secrets.token_hex(4)}"))
    os.rename(tmp, final)
    _fsync(final.parent)


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | (getattr(os, "O_DIRECTORY", 0) if path.is_dir() else 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_optimizer(state_dict: dict[str, Any], path: Path) -> dict[str, Any]:
    """Write an optimizer state dict's arrays to an `.npz` file.

    Args:
        state_dict: `Optimizer.state_dict()`'s result.
        path: the `.npz` file.
    Returns:
        The JSON part: the state dict with each array replaced by `{"array": key}`.
    """
    arrays: dict[str, np.ndarray] = {}
    params: dict[str, dict[str, Any]] = {}
    for param, entries in state_dict["params"].items():
        params[param] = {}
        for key, value in entries.items():
            if isinstance(value, np.ndarray):
                # (the dtype's name: numpy writes bfloat16 as raw 2-byte records, `read_optimizer`)
                params[param][key] = {"array": f"a{len(arrays)}", "dtype": value.dtype.name}
                arrays[f"a{len(arrays)}"] = value
            else:
                params[param][key] = value.item() if isinstance(value, np.generic) else value
    with open(path, "wb") as f:
        np.savez(f, **arrays)  # type: ignore[arg-type]  # numpy's stubs miss **arrays
    return {**state_dict, "params": params}


#: What reading a damaged or foreign checkpoint file raises: invalid JSON or UTF-8, a damaged
#: zip or compressed stream, a missing key, a value of the wrong type.
DAMAGED_FILE_ERRORS = (OSError, EOFError, ValueError, KeyError, TypeError, AttributeError,
                       IndexError, NotImplementedError, zipfile.BadZipFile, zlib.error)


def read_state(path: Path) -> dict[str, Any]:
    """A checkpoint's `state.json`: a JSON object with its "optimizer" part (holding its
    "params") and "scheduler".

    Raises:
        CorruptRecordError: for a file that is not that (damaged or foreign).
    """
    try:
        state = json.loads(path.read_bytes())
    except ValueError as e:  # (invalid JSON or UTF-8)
        raise _damaged(path, e) from None
    if not (isinstance(state, dict) and isinstance(state.get("optimizer"), dict)
            and isinstance(state["optimizer"].get("params"), dict) and "scheduler" in state):
        raise _damaged(path, ValueError("not a checkpoint's state object"))
    return state


def read_optimizer(meta: dict[str, Any], path: Path) -> dict[str, Any]:
    """The optimizer state dict from `write_optimizer`'s JSON part and `.npz` file.

    Raises:
        CorruptRecordError: for a damaged `.npz` file, or one that does not hold the arrays
            `meta` names (pickled objects are refused, as `np.load` does).
    """
    try:
        with np.load(path) as arrays:
            params = {param: {key: _array(arrays, v) if isinstance(v, dict) else v
                              for key, v in entries.items()}
                      for param, entries in meta["params"].items()}
    except FileNotFoundError:
        raise
    except DAMAGED_FILE_ERRORS as e:
        raise _damaged(path, e) from None
    return {**meta, "params": params}


def _array(arrays: Any, entry: dict[str, Any]) -> np.ndarray:
    """The array `entry` names in the open `.npz` file, a bfloat16 one (read back as raw
    2-byte records) viewed as such by the dtype name `write_optimizer` wrote.

    Raises:
        KeyError, DTypeError: for a name the file or burn does not know (a damaged file).
    """
    array = arrays[entry["array"]]
    name = entry.get("dtype")
    if name is not None and array.dtype.kind == "V":
        array = array.view(DType(name).numpy)
    return array


def _damaged(path: Path, error: Exception) -> CorruptRecordError:
    return CorruptRecordError("load_checkpoint", f"{path}: damaged checkpoint file",
                              error=f"{type(error).__name__}: {str(error)[:300]}")
