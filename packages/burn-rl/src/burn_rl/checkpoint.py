"""Agent checkpoints: networks, optimizer, replay buffer, counters and RNG state, written into a
temporary directory that replaces the checkpoint directory only once complete.

Layout: `<name>.bpk` per network, `optimizer.npz`, `buffer.npz` (when the agent has a buffer)
and `state.json` (agent class, counters, RNG states, optimizer metadata), written last.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from burn import record
from burn.errors import BurnError
from burn.nn import Module
from burn.optim import Optimizer
from burn.train.checkpoint import DAMAGED_FILE_ERRORS, read_optimizer, write_optimizer
from burn_rl.errors import CheckpointError

STATE_FILE = "state.json"
OPTIMIZER_FILE = "optimizer.npz"
BUFFER_FILE = "buffer.npz"


def save_checkpoint(directory: str | os.PathLike[str], *, kind: str,
                    modules: dict[str, Module], optimizer: Optimizer, state: dict[str, Any],
                    buffer: dict[str, Any] | None = None) -> Path:
    """Write a checkpoint atomically (a crash leaves the previous one intact).

    Args:
        directory: the checkpoint directory (replaced).
        kind: the agent class, checked on load.
        modules: networks by file stem.
        optimizer: the optimizer.
        state: JSON-ready counters and RNG states.
        buffer: a buffer's `state_dict()` (arrays go to `buffer.npz`).
    Returns:
        The checkpoint directory.
    """
    final = Path(directory)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = final.parent / f".tmp-{final.name}-{secrets.token_hex(4)}"
    tmp.mkdir()
    try:
        for name, module in modules.items():
            record.save(module, tmp / f"{name}.bpk")
        meta = {"kind": kind, "state": state,
                "optimizer": write_optimizer(optimizer.state_dict(), tmp / OPTIMIZER_FILE)}
        if buffer is not None:
            arrays = {f"array_{k}": v for k, v in buffer["arrays"].items()}
            if "priorities" in buffer:
                arrays["priorities"] = buffer["priorities"]
            with open(tmp / BUFFER_FILE, "wb") as f:
                np.savez(f, **arrays)  # type: ignore[arg-type]
            meta["buffer"] = {k: v for k, v in buffer.items()
                              if k not in ("arrays", "priorities")}
        with open(tmp / STATE_FILE, "w") as f:
            json.dump(meta, f)
        trash = final.parent / f".trash-{final.name}-{secrets.token_hex(4)}"
        if final.exists():
            os.replace(final, trash)
        os.replace(tmp, final)
        shutil.rmtree(trash, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return final


def load_checkpoint(directory: str | os.PathLike[str], *, kind: str,
                    modules: dict[str, Module], optimizer: Optimizer,
                    state_keys: tuple[str, ...] = ()
                    ) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """Load a checkpoint written by `save_checkpoint` into `modules` and `optimizer`.

    Args:
        state_keys: the entries the saved `state` must hold (checked before anything loads).

    Returns:
        (the saved `state`, the buffer state dict or None).
    Raises:
        CheckpointError: when the directory is not a complete checkpoint of `kind`, or its
            state or buffer file is damaged (both read before anything is loaded).
        CorruptRecordError: for a damaged network or optimizer file.
    """
    path = Path(directory)
    if not (path / STATE_FILE).is_file():
        raise CheckpointError("load_checkpoint", "no complete checkpoint", path=str(path))
    with damaged_file(path / STATE_FILE):
        meta = json.loads((path / STATE_FILE).read_bytes())
        if not isinstance(meta, dict) or not isinstance(meta.get("state"), dict):
            raise ValueError("not an agent checkpoint's state object")
        if meta.get("kind") != kind:
            raise CheckpointError("load_checkpoint", "checkpoint of another agent",
                                  path=str(path), saved=meta.get("kind"), expected=kind)
        saved = meta["optimizer"]
        missing = [key for key in state_keys if key not in meta["state"]]
        if missing:
            raise KeyError(f"state entries {missing} missing")
    optimizer_state = read_optimizer(saved, path / OPTIMIZER_FILE)
    buffer = None
    if "buffer" in meta:
        with damaged_file(path / BUFFER_FILE), np.load(path / BUFFER_FILE) as arrays:
            buffer = {**meta["buffer"],
                      "arrays": {k[len("array_"):]: arrays[k] for k in arrays.files
                                 if k.startswith("array_")}}
            if "priorities" in arrays.files:
                buffer["priorities"] = arrays["priorities"]
    for name, module in modules.items():
        record.load(module, path / f"{name}.bpk")
    optimizer.load_state_dict(optimizer_state)
    return meta["state"], buffer


@contextmanager
def damaged_file(path: Path) -> Iterator[None]:
    """Run the block reading (or applying) checkpoint file `path`: what a damaged or foreign
    file raises (invalid JSON or UTF-8, a damaged zip, a missing key, a value of the wrong
    type) becomes a CheckpointError naming it; burn's typed errors pass.

    Raises:
        CheckpointError: for such a file.
    """
    try:
        yield
    except BurnError:
        raise
    except DAMAGED_FILE_ERRORS as e:
        raise CheckpointError("load_checkpoint", "damaged checkpoint file", path=str(path),
                              error=f"{type(e).__name__}: {str(e)[:300]}") from None
