"""Learner: training, metrics vs reference formulas, checkpoints, resume, crash safety, early
stopping, Ctrl-C, logs and plots."""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import os
import signal
import sys

import numpy as np
import pytest
import torch

import burn
import burn.optim as optim
import burn.train.checkpoint as checkpoint_module
from burn.data import DataLoader, StackBatcher
from burn.lr_scheduler import LinearLrScheduler
from burn.nn import CrossEntropyLoss, Linear, Module, MseLoss
from burn.train import (
    AccuracyMetric,
    Checkpointer,
    ClassificationOutput,
    CpuUseMetric,
    EarlyStopping,
    F1Metric,
    IterationSpeedMetric,
    Learner,
    LearningRateMetric,
    LossMetric,
    MemoryUseMetric,
    PrecisionMetric,
    RecallMetric,
    RegressionOutput,
    RichProgress,
    TopKAccuracyMetric,
)
from burn.train.metrics import BatchInfo, system


class Regressor(Module):
    def __init__(self) -> None:
        self.linear = Linear(3, 1)
        self.loss = MseLoss()

    def forward(self, x: burn.Tensor) -> burn.Tensor:
        return self.linear(x)

    def train_step(self, batch: tuple[burn.Tensor, burn.Tensor]) -> RegressionOutput:
        x, y = batch
        out = self(x)
        return RegressionOutput(self.loss(out, y), out, y)


class Classifier(Module):
    def __init__(self) -> None:
        self.linear = Linear(4, 3)
        self.loss = CrossEntropyLoss()
        self.seen: list[tuple[bool, bool]] = []

    def forward(self, x: burn.Tensor) -> burn.Tensor:
        return self.linear(x)

    def train_step(self, batch: tuple[burn.Tensor, burn.Tensor]) -> ClassificationOutput:
        x, y = batch
        logits = self(x)
        return ClassificationOutput(self.loss(logits, y), logits, y)

    def valid_step(self, batch: tuple[burn.Tensor, burn.Tensor]) -> ClassificationOutput:
        self.seen.append((self.training, burn.is_grad_enabled()))
        return self.train_step(batch)


def regression_loaders() -> tuple[DataLoader, DataLoader]:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(160, 3)).astype(np.float32)
    y = x @ np.array([[1.0], [2.0], [-1.0]], np.float32) + 0.5
    items = list(zip(x, y.astype(np.float32), strict=True))
    return (DataLoader(items[:128], StackBatcher(), batch_size=16, shuffle=True, seed=3),
            DataLoader(items[128:], StackBatcher(), batch_size=16))


def classification_loaders() -> tuple[DataLoader, DataLoader]:
    rng = np.random.default_rng(1)
    centers = rng.normal(scale=2.0, size=(3, 4))
    labels = rng.integers(0, 3, 150)
    x = (centers[labels] + rng.normal(size=(150, 4))).astype(np.float32)
    items = list(zip(x, labels, strict=True))
    return (DataLoader(items[:100], StackBatcher(), batch_size=20, shuffle=True, seed=0),
            DataLoader(items[100:], StackBatcher(), batch_size=16))  # 50 items: last batch of 2


def regressor(seed: int = 0) -> Regressor:
    burn.seed(seed)
    return Regressor()


def learner(model: Module, tmp_path, lr: float | LinearLrScheduler = 0.05,
            **kwargs) -> Learner:
    kwargs.setdefault("plot", False)
    kwargs.setdefault("progress", False)
    return Learner(model, optim.AdamConfig().init(), lr, artifact_dir=tmp_path, **kwargs)


def weights(model: Module) -> dict[str, np.ndarray]:
    return {k: np.array(p.value().to_numpy()) for k, p in model.named_parameters()}


def schedule() -> LinearLrScheduler:
    return LinearLrScheduler(0.1, 0.01, 32)


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory) -> dict[str, np.ndarray]:
    """Final weights of 4 uninterrupted epochs with a shuffled loader and an lr schedule."""
    train, valid = regression_loaders()
    model = regressor()
    learner(model, tmp_path_factory.mktemp("full"), schedule()).fit(train, valid, 4)
    return weights(model)


def test_regression_loss_decreases(tmp_path) -> None:
    train, valid = regression_loaders()
    model = regressor()
    summary = learner(model, tmp_path).fit(train, valid, 4)
    assert summary.model is model and summary.epochs == 4 and not summary.interrupted
    for split in ("train", "valid"):
        losses = [row["loss"] for row in summary.history[split]]
        assert losses[-1] < 0.5 * losses[0]
    assert set(summary.final_metrics()) == {"train", "valid"}
    assert summary.final_metrics()["train"]["lr"] == pytest.approx(0.05)
    assert model.devices() == [burn.default_device().inner()]


def test_fit_returns_model_ready_for_inference(tmp_path) -> None:
    train, valid = regression_loaders()
    model = regressor()
    summary = learner(model, tmp_path).fit(train, valid, 2)
    trained = summary.model
    assert trained.devices() == [burn.default_device().inner()]
    assert not any(m.training for _, m in trained.named_modules())
    x = np.random.default_rng(5).normal(size=(6, 3)).astype(np.float32)
    out = trained(burn.from_numpy(x))  # a plain tensor, no .to(...) needed
    assert out.shape == (6, 1) and out.dtype == burn.float32
    assert not out.device.is_autodiff
    w = weights(trained)
    # burn's Linear weight is [d_in, d_out] (Burn's layout): torch's linear takes its transpose
    ref = torch.nn.functional.linear(torch.from_numpy(x), torch.from_numpy(w["linear.weight"]).T,
                                     torch.from_numpy(w["linear.bias"]))
    np.testing.assert_allclose(out.to_numpy(), ref.numpy(), rtol=1e-5, atol=1e-6)
    # fitting again trains on the autodiff device from where the first fit stopped
    again = learner(model, tmp_path / "again").fit(train, valid, 1)
    assert again.model is model and model.devices() == [burn.default_device().inner()]
    assert not np.allclose(weights(model)["linear.weight"], w["linear.weight"])


def test_plain_input_to_autodiff_model_names_the_fix() -> None:
    model = regressor().to(burn.default_device().autodiff())
    x = burn.ones(2, 3, device=burn.default_device().inner())
    with pytest.raises(burn.errors.DeviceError) as err:
        model(x)
    message = str(err.value)
    assert f"input is on {x.device}" in message
    assert f"the model on {burn.default_device().autodiff()}" in message
    assert "model.valid()" in message and "x.to(" in message
    assert message.startswith("Linear: ")  # the layer that met the input
    # the hint's two fixes both work
    assert model(x.to(str(model.devices()[0]))).shape == (2, 1)
    assert model.valid()(x).shape == (2, 1)


def test_autodiff_input_to_inference_model_names_the_fix() -> None:
    """The reverse case (batches of an autodiff loader into the model `fit` returned)."""
    inner = burn.default_device().inner()
    model = regressor().to(inner)
    x = burn.ones(2, 3, device=inner.autodiff())
    with pytest.raises(burn.errors.DeviceError) as err:
        model(x)
    message = str(err.value)
    assert message.startswith(f"Linear: input is on {inner.autodiff()}, the model on {inner}")
    assert "x.inner()" in message and "model.to(" in message and "different devices" in message
    assert "model.valid()" not in message
    assert model(x.inner()).shape == (2, 1)  # both fixes work
    assert model.to(inner.autodiff())(x).shape == (2, 1)


def test_device_error_between_unrelated_devices_is_unchanged() -> None:
    model = regressor().to("numpy+profile")
    x = burn.ones(2, 3, device="numpy")
    with pytest.raises(burn.errors.DeviceError) as err:
        model(x)
    message = str(err.value)
    assert "different devices" in message and "hint" not in message


def test_classification_metrics_match_reference(tmp_path) -> None:
    train, valid = classification_loaders()
    burn.seed(0)
    model = Classifier()
    metrics = [LossMetric(), AccuracyMetric(), TopKAccuracyMetric(2), PrecisionMetric(),
               RecallMetric(), F1Metric(), LearningRateMetric()]
    summary = learner(model, tmp_path, metrics=metrics).fit(train, valid, 3)
    assert summary.history["train"][-1]["accuracy"] > summary.history["train"][0]["accuracy"]
    assert all(seen == (False, False) for seen in model.seen)  # eval mode, no grad
    assert not model.training  # returned ready for inference
    # the last validation ran with the final weights: recompute with numpy / torch
    x = np.stack([item[0] for item in valid.dataset])
    y = np.array([item[1] for item in valid.dataset])
    w = weights(model)
    logits = x @ w["linear.weight"] + w["linear.bias"]
    got = summary.final_metrics()["valid"]
    assert "lr" not in got
    assert got["loss"] == pytest.approx(torch.nn.functional.cross_entropy(
        torch.tensor(logits), torch.tensor(y)).item(), rel=1e-5)
    ref = reference_classification(logits, y)
    for name, value in ref.items():
        assert got[name] == pytest.approx(value, rel=1e-6), name


def reference_classification(logits: np.ndarray, y: np.ndarray) -> dict[str, float]:
    """sklearn-style macro scores over the classes present in targets or predictions."""
    pred = logits.argmax(-1)
    classes = np.union1d(y, pred)
    precision, recall, f1 = [], [], []
    for c in classes:
        tp = np.sum((pred == c) & (y == c))
        p = tp / np.sum(pred == c) if np.sum(pred == c) else 0.0
        r = tp / np.sum(y == c) if np.sum(y == c) else 0.0
        precision.append(p)
        recall.append(r)
        f1.append(2 * p * r / (p + r) if p + r else 0.0)
    top2 = torch.topk(torch.tensor(logits), 2, dim=-1).indices.numpy()
    return {"accuracy": float(np.mean(pred == y)),
            "top2_accuracy": float(np.mean((top2 == y[:, None]).any(-1))),
            "precision": float(np.mean(precision)), "recall": float(np.mean(recall)),
            "f1": float(np.mean(f1))}


def test_metrics_accumulate_batches_like_one_batch() -> None:
    rng = np.random.default_rng(5)
    logits = rng.normal(size=(90, 6)).astype(np.float32)
    y = rng.integers(0, 5, 90)  # class 5 never a target; some classes maybe never predicted
    metrics = [AccuracyMetric(), TopKAccuracyMetric(3), PrecisionMetric(), RecallMetric(),
               F1Metric()]
    for chunk in np.array_split(np.arange(90), [7, 40, 41]):
        out = ClassificationOutput(burn.tensor(0.0), burn.tensor(logits[chunk]),
                                   burn.tensor(y[chunk]))
        for metric in metrics:
            metric.update(out, BatchInfo(None, len(chunk)))
    ref = reference_classification(logits, y)
    top3 = torch.topk(torch.tensor(logits), 3, dim=-1).indices.numpy()
    ref["top3_accuracy"] = float(np.mean((top3 == y[:, None]).any(-1)))
    for metric in metrics:
        assert metric.value() == pytest.approx(ref[metric.name], rel=1e-6), metric.name
    with pytest.raises(TypeError, match="accuracy"):
        AccuracyMetric().update(RegressionOutput(burn.tensor(0.0)), BatchInfo(None, 1))


def test_system_and_speed_metrics(monkeypatch) -> None:
    out = RegressionOutput(burn.tensor(0.0), burn.zeros(8, 1), burn.zeros(8, 1))
    cpu, memory, speed = CpuUseMetric(), MemoryUseMetric(), IterationSpeedMetric()
    sum(i * i for i in range(200_000))
    for metric in (cpu, memory, speed):
        metric.update(out, BatchInfo(0.1, out.batch_size))
    assert 0.0 <= cpu.value() <= 100.0 or np.isnan(cpu.value())
    assert speed.value() > 0 and out.batch_size == 8
    with_psutil = memory.value()
    monkeypatch.setattr(system, "psutil", None)
    assert system.process_rss() / 2**20 == pytest.approx(with_psutil, rel=0.2)
    busy, total = system.cpu_times()
    assert 0 < busy < total


@pytest.mark.parametrize("start, end, expected", [
    ((50.0, 100.0), (75.0, 150.0), 50.0),
    # busy = total - idle in floats: an idle interval can come out a hair below the start
    ((1e6 + 0.1, 4e6), (1e6 + 0.1 - 2**-30, 4e6 + 1.0), 0.0),
    ((10.0, 100.0), (30.0 + 1e-12, 110.0), 100.0),
    ((10.0, 100.0), (10.0, 100.0), float("nan")),
    ((float("nan"), float("nan")), (float("nan"), float("nan")), float("nan")),
])
def test_cpu_use_stays_a_percentage(monkeypatch, start, end, expected) -> None:
    readings = iter([start, end])
    monkeypatch.setattr(system, "cpu_times", lambda: next(readings))
    value = CpuUseMetric().value()
    assert isinstance(value, float)
    if np.isnan(expected):
        assert np.isnan(value)
    else:
        assert 0.0 <= value <= 100.0 and value == pytest.approx(expected, abs=1e-6)


def test_checkpoints_pruned_best_kept(tmp_path) -> None:
    train, valid = regression_loaders()
    # "max" of a decreasing loss: epoch 1 is the best and must survive pruning
    ckpt = Checkpointer(keep_last=2, best_metric="loss", best_mode="max")
    summary = learner(regressor(), tmp_path, checkpointer=ckpt).fit(train, valid, 5)
    root = tmp_path / "checkpoints"
    assert sorted(p.name for p in root.iterdir() if p.is_dir()) == [
        "epoch-0001", "epoch-0004", "epoch-0005"]
    assert summary.checkpoint == root / "epoch-0005"
    assert summary.best_checkpoint == root / "epoch-0001"
    assert json.loads((root / "best.json").read_text())["value"] == pytest.approx(
        summary.history["valid"][0]["loss"])
    for name in ("model.bpk", "optimizer.npz", "state.json"):
        assert (root / "epoch-0005" / name).is_file()


def test_resume_matches_uninterrupted(tmp_path, uninterrupted) -> None:
    train, valid = regression_loaders()
    first = learner(regressor(), tmp_path, schedule()).fit(train, valid, 2)
    assert first.epochs == 2
    train, valid = regression_loaders()
    model = regressor(seed=99)  # different init: everything must come from the checkpoint
    summary = learner(model, tmp_path, schedule()).fit(train, valid, 4, resume=True)
    assert summary.epochs == 4 and [r["epoch"] for r in summary.history["train"]] == [1, 2, 3, 4]
    for key, value in weights(model).items():
        np.testing.assert_array_equal(value, uninterrupted[key])
    assert len((tmp_path / "logs" / "train.csv").read_text().splitlines()) == 5


def test_crash_during_checkpoint_write_keeps_latest(tmp_path, monkeypatch) -> None:
    train, valid = regression_loaders()
    ckpt = Checkpointer(keep_last=1)
    saved = weights(learner(regressor(), tmp_path, checkpointer=ckpt).fit(train, valid, 2).model)

    def crash(*args: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(checkpoint_module, "write_optimizer", crash)  # after model.bpk
    with pytest.raises(OSError, match="disk full"):
        learner(regressor(), tmp_path, checkpointer=ckpt).fit(train, valid, 3, resume=True)
    root = tmp_path / "checkpoints"
    assert [p.name for p in root.iterdir() if p.is_dir()] == ["epoch-0002"]
    assert ckpt.in_directory(root).latest() == root / "epoch-0002"
    model, opt = regressor(seed=7), optim.AdamConfig().init()
    state = Checkpointer().load(root, model, opt, LinearLrScheduler(0.1, 0.01, 32))
    assert state["epoch"] == 2
    for key, value in weights(model).items():
        np.testing.assert_array_equal(value, saved[key])


def test_early_stopping(tmp_path) -> None:
    train, valid = regression_loaders()
    stopper = EarlyStopping("loss", split="valid", patience=2)
    summary = learner(regressor(), tmp_path, lr=0.0, early_stopping=stopper).fit(
        train, valid, 10)
    assert summary.stopped_early and summary.epochs == 3


@pytest.mark.parametrize("mode", ["min", "max"])
def test_early_stopping_on_a_metric_nan_from_the_start(mode: str) -> None:
    """A metric that is NaN from the first epoch never improves: training stops after
    `patience` epochs, counted from the first (Burn's), also across a resume."""
    stopper = EarlyStopping("loss", split="valid", mode=mode, patience=2)  # type: ignore[arg-type]
    nan = {"valid": {"loss": math.nan}}
    assert [stopper.should_stop(epoch, nan) for epoch in (1, 2)] == [False, False]
    resumed = EarlyStopping("loss", split="valid", mode=mode, patience=2)  # type: ignore[arg-type]
    resumed.load_state_dict(stopper.state_dict())
    assert stopper.should_stop(3, nan) and resumed.should_stop(3, nan)
    late = EarlyStopping("loss", split="valid", mode=mode, patience=2)  # type: ignore[arg-type]
    values = [math.nan, math.nan, 1.0, 1.0, 1.0]  # improves at epoch 3, then not for 2 epochs
    assert [late.should_stop(e, {"valid": {"loss": v}}) for e, v in enumerate(values, 1)] == [
        False, False, False, False, True]


class InterruptAt:
    """Steps of `model`, raising KeyboardInterrupt at the `at`-th training batch."""

    def __init__(self, model: Regressor, at: int) -> None:
        self.model, self.at, self.calls = model, at, 0

    def train_step(self, batch: tuple[burn.Tensor, burn.Tensor]) -> RegressionOutput:
        self.calls += 1
        if self.calls == self.at:
            raise KeyboardInterrupt
        return self.model.train_step(batch)

    def valid_step(self, batch: tuple[burn.Tensor, burn.Tensor]) -> RegressionOutput:
        return self.model.train_step(batch)


def test_keyboard_interrupt_saves_and_resumes(tmp_path, uninterrupted) -> None:
    train, valid = regression_loaders()
    model = regressor()
    steps = InterruptAt(model, at=8 + 3)  # epoch 2, third batch
    summary = learner(model, tmp_path, schedule(), steps=steps).fit(train, valid, 4)
    assert summary.interrupted and summary.epochs == 1
    assert summary.checkpoint == tmp_path / "checkpoints" / "epoch-0001-batch-000002"
    train, valid = regression_loaders()
    resumed = regressor(seed=5)
    done = learner(resumed, tmp_path, schedule()).fit(train, valid, 4, resume=True)
    assert done.epochs == 4 and not done.interrupted
    for key, value in weights(resumed).items():
        np.testing.assert_array_equal(value, uninterrupted[key])


@pytest.mark.parametrize("log_format", ["csv", "jsonl"])
def test_logs_and_plot(tmp_path, log_format, capsys) -> None:
    pytest.importorskip("matplotlib")
    train, valid = regression_loaders()
    summary = Learner(regressor(), optim.SgdConfig().init(), 0.01, artifact_dir=tmp_path,
                      log_format=log_format).fit(train, valid, 2)
    for split in ("train", "valid"):
        lines = (tmp_path / "logs" / f"{split}.{log_format}").read_text().splitlines()
        assert len(lines) == (3 if log_format == "csv" else 2)
    assert summary.plot == tmp_path / "training_curves.png"
    assert summary.plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    printed = capsys.readouterr().out
    assert "[train 2/2] done" in printed and "Training finished: 2 epochs" in printed
    assert "items_per_sec" in str(summary)


class SignalAt(InterruptAt):
    """Sends a real SIGINT (Ctrl-C) to this process during the `at`-th training batch."""

    def train_step(self, batch: tuple[burn.Tensor, burn.Tensor]) -> RegressionOutput:
        self.calls += 1
        if self.calls == self.at:
            os.kill(os.getpid(), signal.SIGINT)
        return self.model.train_step(batch)


def test_ctrl_c_finishes_the_batch_then_stops(tmp_path) -> None:
    train, valid = regression_loaders()
    model = regressor()
    summary = learner(model, tmp_path, steps=SignalAt(model, at=5)).fit(train, valid, 3)
    assert summary.interrupted and summary.epochs == 0
    assert summary.checkpoint == tmp_path / "checkpoints" / "epoch-0000-batch-000005"
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_without_optional_dependencies(tmp_path, monkeypatch, caplog) -> None:
    for name in ("rich", "rich.progress", "matplotlib.figure", "matplotlib.backends.backend_agg"):
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setattr(system, "psutil", None)
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    train, valid = regression_loaders()
    with caplog.at_level(logging.INFO, logger="burn.train"):
        summary = Learner(regressor(), optim.AdamConfig().init(), 0.05, artifact_dir=tmp_path,
                          metrics=[LossMetric(), CpuUseMetric(), MemoryUseMetric()]).fit(
            train, valid, 1)
    assert summary.plot is None and "matplotlib is not installed" in caplog.text
    assert summary.final_metrics()["train"]["memory_mib"] > 0


def test_rich_progress_and_batch_structures(tmp_path) -> None:
    pytest.importorskip("rich")

    @dataclasses.dataclass
    class Batch:
        x: burn.Tensor
        y: burn.Tensor

    class DictSteps:
        def __init__(self, model: Regressor) -> None:
            self.model = model

        def train_step(self, batch: dict[str, Batch]) -> RegressionOutput:
            return self.model.train_step((batch["b"].x, batch["b"].y))

    train, _ = regression_loaders()
    batches = [{"b": Batch(x, y)} for x, y in train]  # inner-device tensors, moved by the Learner
    model = regressor()
    display = RichProgress()
    summary = learner(model, tmp_path, steps=DictSteps(model), progress=display).fit(batches)
    assert summary.epochs == 1 and display._progress.tasks[0].completed == len(batches)
