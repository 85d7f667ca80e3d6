"""Checkpointer crash safety: pruning killed midway, leftovers of interrupted writes, legacy
checkpoints (written before the completion marker) kept and loadable."""

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
    assert state["epoch"] == int(checkpoint_module.resolve_checkpoint(path).name.split("-")[1])
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


def _legacy_layout(path: Path) -> None:
    """Turn a checkpoint into what the code before the completion marker wrote: the same
    model.bpk, optimizer.npz and state.json, without the marker."""
    (path / checkpoint_module.COMPLETE_FILE).unlink()
    assert sorted(p.name for p in path.iterdir()) == sorted(
        [checkpoint_module.MODEL_FILE, checkpoint_module.OPTIMIZER_FILE,
         checkpoint_module.STATE_FILE])


def test_unmarked_directory_missing_files_is_no_checkpoint_and_is_kept(tmp_path):
    ckpt = Checkpointer(keep_last=1, directory=tmp_path)
    _save(ckpt, 1, seed=1)
    halves = {"epoch-0002": checkpoint_module.MODEL_FILE,  # e.g. half-deleted folders
              "epoch-0003": checkpoint_module.OPTIMIZER_FILE}
    for name, missing in halves.items():
        half = tmp_path / name
        shutil.copytree(tmp_path / "epoch-0001", half)
        _legacy_layout(half)
        (half / missing).unlink()
        assert not checkpoint_module.is_legacy_checkpoint(half)
        with pytest.raises(FileNotFoundError):
            checkpoint_module.resolve_checkpoint(half)
    truncated = tmp_path / "epoch-0004"
    shutil.copytree(tmp_path / "epoch-0001", truncated)
    _legacy_layout(truncated)
    model = truncated / checkpoint_module.MODEL_FILE
    model.write_bytes(model.read_bytes()[:-8])
    assert [p.name for p in ckpt.checkpoints()] == ["epoch-0001"]
    _save(Checkpointer(keep_last=1, directory=tmp_path), 5, seed=5)
    assert sorted(p.name for p in tmp_path.iterdir()) == [  # pruned epoch 1 only
        "epoch-0002", "epoch-0003", "epoch-0004", "epoch-0005", "latest.json"]


def test_legacy_checkpoints_are_listed_resumed_and_kept(tmp_path):
    ckpt = Checkpointer(keep_last=3, best_metric="loss", directory=tmp_path)
    saved = {epoch: _save(ckpt, epoch, seed=epoch) for epoch in (1, 2)}
    for epoch in (1, 2):
        _legacy_layout(tmp_path / f"epoch-000{epoch}")
    fresh = Checkpointer(keep_last=3, directory=tmp_path)
    assert [p.name for p in fresh.checkpoints()] == ["epoch-0001", "epoch-0002"]
    assert fresh.latest() == tmp_path / "epoch-0002"
    assert checkpoint_module.resolve_checkpoint(tmp_path) == tmp_path / "epoch-0002"
    _loads(fresh, tmp_path, saved[2])  # resume from the root's latest
    saved[3] = _save(fresh, 3, seed=3)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "epoch-0001", "epoch-0002", "epoch-0003", "latest.json"]
    for epoch in (1, 2, 3):  # upgraded: marked, and still loadable
        path = tmp_path / f"epoch-000{epoch}"
        assert (path / checkpoint_module.COMPLETE_FILE).is_file()
        _loads(Checkpointer(directory=tmp_path), path, saved[epoch])


def test_leftovers_of_interrupted_writes_are_cleaned_on_start(tmp_path):
    ckpt = Checkpointer(keep_last=2, directory=tmp_path)
    _save(ckpt, 1, seed=1)
    leftovers = [tmp_path / ".latest.json.0123abcd.tmp", tmp_path / ".tmp-epoch-0002-beef",
                 tmp_path / ".tmp-trash-epoch-0000-cafe"]
    user_files = [tmp_path / ".notes.tmp", tmp_path / "epoch-0002"]  # not the checkpointer's
    leftovers[0].write_text("{")
    user_files[0].write_text("mine")
    for directory in [*leftovers[1:], user_files[1]]:
        directory.mkdir()
        (directory / checkpoint_module.STATE_FILE).write_text("{}")
    fresh = Checkpointer(keep_last=2, directory=tmp_path)
    _save(fresh, 3, seed=3)
    _save(fresh, 4, seed=4)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        ".notes.tmp", "epoch-0002", "epoch-0003", "epoch-0004", "latest.json"]
    assert (user_files[1] / checkpoint_module.STATE_FILE).read_text() == "{}"
    _loads(fresh, tmp_path / "epoch-0003", _save_values(3))


def test_save_over_a_directory_that_is_no_checkpoint_renames_it_aside(tmp_path):
    stray = tmp_path / "epoch-0001"
    stray.mkdir(parents=True)
    (stray / "notes.txt").write_text("mine")
    saved = _save(Checkpointer(directory=tmp_path), 1, seed=1)
    kept = [p for p in tmp_path.iterdir() if p.name.startswith("epoch-0001.kept-")]
    assert len(kept) == 1 and (kept[0] / "notes.txt").read_text() == "mine"
    _loads(Checkpointer(directory=tmp_path), stray, saved)


def test_damaged_latest_pointer_is_no_checkpoint(tmp_path):
    ckpt = Checkpointer(directory=tmp_path)
    _save(ckpt, 1, seed=1)
    (tmp_path / checkpoint_module.LATEST).write_text('{"path": "../../etc"}')
    assert ckpt.latest() is None
    (tmp_path / checkpoint_module.LATEST).write_bytes(b"\xff{")
    assert ckpt.latest() is None
    assert [p.name for p in ckpt.checkpoints()] == ["epoch-0001"]


@pytest.mark.parametrize(("name", "damage"), [
    ("state.json", lambda raw: raw[:len(raw) // 2]),
    ("state.json", lambda raw: b"\xff" + raw),
    ("state.json", lambda raw: raw.replace(b'"iteration"', b'"iterati0n"')),
    ("optimizer.npz", lambda raw: raw[:len(raw) // 2]),
    ("model.bpk", lambda raw: raw[:len(raw) // 2]),
], ids=["truncated-state", "state-not-utf8", "scheduler-key", "truncated-optimizer",
        "truncated-model"])
def test_damaged_checkpoint_files_are_typed_errors_and_restore_nothing(tmp_path, name, damage):
    """A damaged file of a complete checkpoint raises CorruptRecordError naming it (raw
    JSONDecodeError, UnicodeDecodeError, BadZipFile, KeyError escaped before), and the model,
    optimizer and scheduler keep the state they had."""
    ckpt = Checkpointer(directory=tmp_path)
    _save(ckpt, 1, seed=1)
    path = tmp_path / "epoch-0001"
    (path / name).write_bytes(damage((path / name).read_bytes()))
    burn.seed(7)
    model, opt = Linear(3, 2), optim.AdamConfig().init()
    scheduler = LinearLrScheduler(0.1, 0.01, 8)
    scheduler.step()
    before = {k: p.to_numpy() for k, p in model.named_tensors()}
    state_before = opt.state_dict(), scheduler.state_dict()
    with pytest.raises(burn.record.CorruptRecordError, match=name.replace(".", r"\.")):
        ckpt.load(path, model, opt, scheduler)
    for key, value in model.named_tensors():
        np.testing.assert_array_equal(value.to_numpy(), before[key])
    assert (opt.state_dict(), scheduler.state_dict()) == state_before


@pytest.mark.parametrize("spec", ["numpy+autodiff", "cpu+fusion+autodiff"])
def test_a_bfloat16_models_optimizer_state_survives_save_and_load(tmp_path, spec):
    """Adam state of a bfloat16 model (numpy writes its arrays as raw 2-byte records) loads
    back as bfloat16, and training resumes exactly as an uninterrupted run (the first step
    after loading raised DTypeError: unsupported numpy dtype |V2)."""
    device = burn.Device(spec)

    def model():
        burn.seed(3, device)
        return Linear(3, 2, device=device).map(lambda _, t: t.cast(burn.bfloat16))

    def step(layer, optimizer):
        x = burn.ones((4, 3), device=device).cast(burn.bfloat16)
        optimizer.step(0.01, layer, (layer(x) ** 2).sum().backward())

    schedule = LinearLrScheduler(0.1, 0.01, 8)
    kept, kept_optimizer = model(), optim.AdamConfig().init()
    step(kept, kept_optimizer)
    path = Checkpointer(directory=tmp_path).save(kept, kept_optimizer, schedule, epoch=1)
    loaded, loaded_optimizer = model(), optim.AdamConfig().init()
    Checkpointer(directory=tmp_path).load(path, loaded, loaded_optimizer, schedule)
    for _ in range(2):
        step(kept, kept_optimizer)
        step(loaded, loaded_optimizer)
    for (name, want), (_, got) in zip(kept.named_tensors(), loaded.named_tensors(),
                                      strict=True):
        assert got.dtype == burn.bfloat16 and got.shape == want.shape, name
        np.testing.assert_array_equal(got.to_numpy(), want.to_numpy(), err_msg=name)
