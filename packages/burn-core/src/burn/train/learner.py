"""`Learner`: the training loop (after Burn's `Learner`), with metrics, logs, progress display,
checkpoints, resuming, early stopping and graceful Ctrl-C."""

from __future__ import annotations

import copy
import logging
import os
import signal
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

from burn.device import Device, as_device, default_device
from burn.lr_scheduler import ConstantLr, LrScheduler
from burn.nn.module import Module
from burn.optim import Optimizer
from burn.train.checkpoint import Checkpointer, resolve_checkpoint
from burn.train.early_stopping import EarlyStopping
from burn.train.evaluate import eval_step
from burn.train.logger import LogFormat, MetricLogger
from burn.train.metrics import (
    BatchInfo,
    IterationSpeedMetric,
    LearningRateMetric,
    LossMetric,
    Metric,
)
from burn.train.plot import plot_history
from burn.train.progress import ProgressDisplay, make_progress
from burn.train.step import StepOutput, TrainStep, move_batch
from burn.train.summary import History, TrainingSummary

log = logging.getLogger("burn.train")

#: A data loader: batches in order, and `len()` batches per epoch. A `loader.epoch` attribute
#: (as `burn.data.DataLoader` has) is set before each epoch so shuffles replay on resume.
Loader = Iterable[Any]


@contextmanager
def _deferred_sigint() -> Iterator[Callable[[], bool]]:
    """Turn the first Ctrl-C into a flag the loop checks after each batch (a second one
    interrupts at once). Yields the flag's getter; only active in the main thread."""
    if threading.current_thread() is not threading.main_thread():
        yield lambda: False
        return
    requested = False

    def handler(signum: int, frame: Any) -> None:
        nonlocal requested
        if requested:
            raise KeyboardInterrupt
        requested = True

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield lambda: requested
    finally:
        signal.signal(signal.SIGINT, previous)


class Learner:
    """Trains a model: each epoch runs the training batches (forward, backward, optimizer
    step), then the validation batches in eval mode under `burn.no_grad()`.

    The step provider (`steps`, the model by default) has `train_step(batch) -> TrainOutput`
    and optionally `valid_step(batch) -> ValidOutput` (else `train_step` validates too).

    Args:
        model: the model; `fit` moves it to `device.autodiff()` in place to train, and
            returns it ready for inference (`model.valid()`: inner device, eval mode).
        optimizer: e.g. `burn.optim.AdamConfig().init()`.
        scheduler_or_lr: an `LrScheduler`, or a constant learning rate.
        device: the training device (the default device when None).
        metrics: metrics of both splits (train-only ones skip validation); default: loss,
            learning rate, items per second.
        checkpointer: checkpoint settings (a copy is used; it writes to
            `artifact_dir/checkpoints` unless it names a directory); None disables checkpoints.
        early_stopping: stop when a metric stops improving (None: run every epoch).
        progress: True for a live display (rich on a terminal, plain lines otherwise), False
            for none, or a `ProgressDisplay`.
        artifact_dir: where logs (`logs/`), checkpoints and the curve plot go; None writes
            none of them (checkpoints only to a directory the checkpointer names).
        steps: the object providing `train_step` / `valid_step` (default: `model`).
        log_format: "csv" or "jsonl" metric logs.
        plot: draw `training_curves.png` in `artifact_dir` at the end of `fit`.
        resume_hint: how to continue an earlier run, named in the notice that `fit` starts
            from scratch next to its checkpoints (a command line passes its own flag, e.g.
            "--resume continues it").
    """

    def __init__(self, model: Module, optimizer: Optimizer,
                 scheduler_or_lr: LrScheduler | float, *, device: Device | str | None = None,
                 metrics: Sequence[Metric] | None = None,
                 checkpointer: Checkpointer | None = Checkpointer(),  # noqa: B008 (copied)
                 early_stopping: EarlyStopping | None = None,
                 progress: bool | ProgressDisplay = True,
                 artifact_dir: str | os.PathLike[str] | None = "artifacts",
                 steps: TrainStep | None = None, log_format: LogFormat = "csv",
                 plot: bool = True,
                 resume_hint: str = "fit(..., resume=True) continues it") -> None:
        self.model = model
        self.optimizer = optimizer
        self.scheduler = (scheduler_or_lr if isinstance(scheduler_or_lr, LrScheduler)
                          else ConstantLr(float(scheduler_or_lr)))
        self.device = (as_device(device) if device is not None else default_device()).autodiff()
        train = list(metrics) if metrics is not None else [
            LossMetric(), LearningRateMetric(), IterationSpeedMetric()]
        self.metrics = {"train": train,
                        "valid": [copy.deepcopy(m) for m in train if not m.train_only]}
        self.artifact_dir = Path(artifact_dir) if artifact_dir is not None else None
        self.checkpointer = None if checkpointer is None else checkpointer.in_directory(
            self.artifact_dir / "checkpoints" if self.artifact_dir is not None else None)
        self.early_stopping = early_stopping
        self.progress = progress
        self.steps: TrainStep = steps if steps is not None else cast(TrainStep, model)
        self.logger = (MetricLogger(self.artifact_dir / "logs", log_format)
                       if self.artifact_dir is not None else None)
        self.plot = plot and self.artifact_dir is not None
        self.resume_hint = resume_hint
        self._batches_done = 0

    def fit(self, train_loader: Loader, valid_loader: Loader | None = None, epochs: int = 1, *,
            resume: bool = False,
            resume_from: str | os.PathLike[str] | None = None) -> TrainingSummary:
        """Train for `epochs` epochs (counted from the start of training, resumed ones
        included).

        Args:
            train_loader: the training batches (`len()` of them per epoch).
            valid_loader: the validation batches, or None.
            epochs: the epoch to train up to.
            resume: continue from the latest checkpoint when there is one.
            resume_from: a checkpoint directory (or checkpoint root) to continue from.
                After a mid-epoch checkpoint (Ctrl-C), the epoch's finished batches are
                skipped and its training metrics cover the remaining ones only.
        Returns:
            The summary; `summary.model` is the trained model, ready for inference as after
            Burn's `valid()`: on the inner (non-autodiff) device, in eval mode. A later `fit`
            moves it back to the autodiff device.
        """
        start = time.perf_counter()
        self.model.to(self.device)
        history: History = {"train": [], "valid": []} if valid_loader is not None else {"train": []}
        done, skip = self._restore(resume, resume_from, history)
        if self.logger is not None:
            self.logger.truncate(done)
        display = make_progress(self.progress)
        summary = TrainingSummary(self.model, history, epochs=done)
        try:
            with _deferred_sigint() as stop_requested:
                for epoch in range(done + 1, epochs + 1):
                    self._batches_done = skip
                    metrics = {"train": self._run_epoch("train", train_loader, epoch, epochs,
                                                        skip, display, stop_requested)}
                    if valid_loader is not None:
                        metrics["valid"] = self._run_epoch("valid", valid_loader, epoch,
                                                           epochs, 0, display, stop_requested)
                    skip = self._batches_done = 0
                    summary.epochs = epoch
                    stop = self._end_epoch(epoch, metrics, history)
                    if stop:
                        summary.stopped_early = True
                        break
        except KeyboardInterrupt:
            summary.interrupted = True
            log.warning("interrupted: saving a checkpoint")
            self._save(summary.epochs, self._batches_done, None, history)
        finally:
            self.model.valid()
            if display is not None:
                display.close()
        return self._finish(summary, start)

    # --- the loop ---
    def _run_epoch(self, split: str, loader: Loader, epoch: int, epochs: int, skip: int,
                   display: ProgressDisplay | None,
                   stop_requested: Callable[[], bool]) -> dict[str, float]:
        """Run one epoch of `split`, skipping its first `skip` batches; returns its metrics."""
        metrics = self.metrics[split]
        for metric in metrics:
            metric.reset()
        if isinstance(getattr(loader, "epoch", None), int):
            loader.epoch = epoch - 1  # type: ignore[attr-defined]
        total = len(loader)  # type: ignore[arg-type]
        if display is not None:
            display.start(split, epoch, epochs, total)
        training = split == "train"
        self.model.train(training)
        for index, batch in enumerate(loader):
            if index < skip:
                continue
            output, lr = (self._train_batch(batch) if training
                          else (self._valid_batch(batch), None))
            if training:
                self._batches_done = index + 1
            info = BatchInfo(lr, output.batch_size)
            for metric in metrics:
                metric.update(output, info)
            if display is not None:
                display.update(index + 1, lambda: _values(metrics))
            if stop_requested():
                raise KeyboardInterrupt
        values = _values(metrics)
        if display is not None:
            display.end(values)
        return values

    def _train_batch(self, batch: Any) -> tuple[StepOutput, float]:
        """Forward, backward and optimizer step of one batch; returns (output, lr)."""
        output = self.steps.train_step(move_batch(batch, self.device))
        grads = output.loss.backward()
        lr = self.scheduler.step()
        self.optimizer.step(lr, self.model, grads)
        return output, lr

    def _valid_batch(self, batch: Any) -> StepOutput:
        """The validation step of one batch (no gradients)."""
        return eval_step(self.steps, move_batch(batch, self.device))

    def _end_epoch(self, epoch: int, metrics: dict[str, dict[str, float]],
                   history: History) -> bool:
        """Log, checkpoint and check early stopping after `epoch`; True to stop."""
        for split, values in metrics.items():
            history[split].append({"epoch": epoch, **values})
            if self.logger is not None:
                self.logger.log(split, epoch, values)
        stop = (self.early_stopping is not None
                and self.early_stopping.should_stop(epoch, metrics))
        self._save(epoch, 0, metrics, history)
        return stop

    # --- checkpoints ---
    def _save(self, epoch: int, batch: int, metrics: dict[str, dict[str, float]] | None,
              history: History) -> None:
        if self.checkpointer is None:
            return
        extra = {"history": history, "early_stopping": (
            self.early_stopping.state_dict() if self.early_stopping is not None else None)}
        self.checkpointer.save(self.model, self.optimizer, self.scheduler, epoch=epoch,
                               batch=batch, metrics=metrics, extra=extra)

    def _restore(self, resume: bool, resume_from: str | os.PathLike[str] | None,
                 history: History) -> tuple[int, int]:
        """Load the checkpoint to resume from (if any) into the model, optimizer, scheduler,
        `history` and early stopping; returns (epochs done, batches done in the next)."""
        if resume_from is not None:
            path: Path | None = resolve_checkpoint(resume_from)
        elif resume:
            if self.checkpointer is None:
                raise ValueError("Learner.fit: resume=True needs a checkpointer and an "
                                 "artifact_dir")
            path = self.checkpointer.latest()
            if path is None:
                log.info("no checkpoint in %s: training from scratch", self.checkpointer.root)
        else:
            path = None
            if self.checkpointer is not None and self.checkpointer.latest() is not None:
                log.warning("%s holds checkpoints of an earlier run: training from scratch "
                            "(%s)", self.checkpointer.root, self.resume_hint)
        if path is None:
            return 0, 0
        state = (self.checkpointer or Checkpointer()).load(path, self.model, self.optimizer,
                                                           self.scheduler)
        for split in history:
            history[split].extend(state["extra"]["history"].get(split, []))
        if self.early_stopping is not None and state["extra"]["early_stopping"] is not None:
            self.early_stopping.load_state_dict(state["extra"]["early_stopping"])
        log.info("resumed from %s (epoch %d, batch %d)", path, state["epoch"], state["batch"])
        return state["epoch"], state["batch"]

    def _finish(self, summary: TrainingSummary, start: float) -> TrainingSummary:
        """Fill in the paths and time, draw the curves, print the summary."""
        if self.checkpointer is not None:
            summary.checkpoint = self.checkpointer.latest()
            summary.best_checkpoint = self.checkpointer.best()
        if self.plot and self.artifact_dir is not None:
            summary.plot = plot_history(
                summary.history, self.artifact_dir / "training_curves.png",
                higher_is_better={m.name: None if m.train_only else m.higher_is_better
                                  for m in self.metrics["train"]},
                stopped_epoch=summary.epochs if summary.stopped_early else None)
        summary.elapsed = time.perf_counter() - start
        if self.progress:
            print(summary, flush=True)
        return summary


def _values(metrics: Sequence[Metric]) -> dict[str, float]:
    return {metric.name: metric.value() for metric in metrics}
