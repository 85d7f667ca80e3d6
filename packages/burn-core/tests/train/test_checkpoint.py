"""Checkpointer crash safety: pruning killed midway, leftovers of interrupted writes."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

import burn
import burn.optim as optim
import burn.train.checkpoint as checkpoint_module
from burn.lr_scheduler import LinearLrScheduler
from burn.nn import Linear
from burn.train import Checkpointer


class Killed(BaseException):
    """Stands for the process being killed (nothing after it runs)."""


def _save(ckpt: Checkpointer, epoch: int, seed: int) -> dict[str, np.ndarray]:
    burn.seed(seed)
    model = Linear(3, 2)
    ckpt.save(model, optim.AdamConfig().init(), LinearLrScheduler(0.1, 0.01, 8), epoch=epoch)
    return {k: p.to_numpy() for k, p in model.named_tensors()}


def _loads(ckpt: Checkpointer, path: Path, expected: dict[str, np.ndarray]) -> None:
    model = Linear(3, 2)
    state = ckpt.load(path, model, optim.AdamConfig().init(), LinearLrScheduler(0.1, 0.01, 8))
    assert state["epoch"] == int(path.name.split("-")[1])
    for key, value in model.named_tensors():
        assert value.shape == expected[key].shape and value.dtype == burn.float32
        np.testing.assert_array_equal(value.to_numpy(), expected[key])


def test_kill_during_pruning_leaves_only_complete_checkpoints(tmp_path, monkeypatch):
    ckpt = Checkpointer(keep_last=1, directory=tmp_path)
    saved = {1: _save(ckpt, 1, seed=1)}
    real_rmtree = shutil.rmtree

    def killed_midway(path, ignore_errors=False):
        (Path(path) / checkpoint_module.MODEL_FILE).unlink()  # part of the files went
        raise Killed

    monkeypatch.setattr(checkpoint_module.shutil, "rmtree", killed_midway)
    with pytest.raises(Killed):
        saved[2] = _save(ckpt, 2, seed=2)  # pruning epoch 1 is killed
    monkeypatch.setattr(checkpoint_module.shutil, "rmtree", real_rmtree)
    fresh = Checkpointer(keep_last=1, directory=tmp_path)
    listed = fresh.checkpoints()
    assert [p.name for p in listed] == ["epoch-0002"]
    assert fresh.latest() == tmp_path / "epoch-0002"
    _loads(fresh, listed[0], _save_values(2))
    _save(fresh, 3, seed=3)  # the next run's first save cleans the trash
    assert sorted(p.name for p in tmp_path.iterdir()) == ["epoch-0003", "latest.json"]


def _save_values(seed: int) -> dict[str, np.ndarray]:
    burn.seed(seed)
    return {k: p.to_numpy() for k, p in Linear(3, 2).named_tensors()}


def test_directory_without_completion_marker_is_not_a_checkpoint(tmp_path):
    ckpt = Checkpointer(keep_last=3, directory=tmp_path)
    _save(ckpt, 1, seed=1)
    half = tmp_path / "epoch-0002"
    shutil.copytree(tmp_path / "epoch-0001", half)
    (half / checkpoint_module.COMPLETE_FILE).unlink()  # e.g. a half-deleted folder
    assert [p.name for p in ckpt.checkpoints()] == ["epoch-0001"]
    with pytest.raises(FileNotFoundError):
        checkpoint_module.resolve_checkpoint(half)


def test_leftovers_of_interrupted_writes_are_cleaned_on_start(tmp_path):
    ckpt = Checkpointer(keep_last=2, directory=tmp_path)
    _save(ckpt, 1, seed=1)
    leftovers = [tmp_path / ".latest.json.0123abcd.tmp", tmp_path / ".tmp-epoch-0002-beef",
                 tmp_path / ".tmp-trash-epoch-0000-cafe", tmp_path / "epoch-0002"]
    leftovers[0].write_text("{")
    for directory in leftovers[1:]:
        directory.mkdir()
        (directory / checkpoint_module.STATE_FILE).write_text("{}")
    fresh = Checkpointer(keep_last=2, directory=tmp_path)
    _save(fresh, 3, seed=3)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "epoch-0001", "epoch-0003", "latest.json"]
    _loads(fresh, tmp_path / "epoch-0001", _save_values(1))


def test_damaged_latest_pointer_is_no_checkpoint(tmp_path):
    ckpt = Checkpointer(directory=tmp_path)
    _save(ckpt, 1, seed=1)
    (tmp_path / checkpoint_module.LATEST).write_text('{"path": "../../etc"}')
    assert ckpt.latest() is None
    (tmp_path / checkpoint_module.LATEST).write_bytes(b"\xff{")
    assert ckpt.latest() is None
    assert [p.name for p in ckpt.checkpoints()] == ["epoch-0001"]
