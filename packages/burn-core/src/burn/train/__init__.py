"""Training (after Burn's `burn-train`): the `Learner` loop, step outputs, metrics,
checkpoints, early stopping, progress display, metric logs and training curves.

    learner = Learner(model, AdamConfig().init(), 1e-3, metrics=[LossMetric(), AccuracyMetric()],
                      checkpointer=Checkpointer(keep_last=2, best_metric="loss"),
                      early_stopping=EarlyStopping("loss", patience=3),
                      artifact_dir="runs/mnist")
    summary = learner.fit(train_loader, valid_loader, epochs=10)   # resume=True to continue
    print(summary); model = summary.model     # ready for inference (model.valid())
    print(evaluate(model, test_loader, [AccuracyMetric()]))

The model (or `steps=`) implements `train_step(batch) -> TrainOutput` (e.g. a
`ClassificationOutput(loss, logits, targets)`) and `valid_step(batch) -> ValidOutput`.
"""

from burn.train import metrics
from burn.train.checkpoint import Checkpointer, resolve_checkpoint
from burn.train.early_stopping import EarlyStopping
from burn.train.evaluate import evaluate
from burn.train.learner import Learner
from burn.train.logger import MetricLogger
from burn.train.metrics import (
    AccuracyMetric,
    CpuUseMetric,
    F1Metric,
    IterationSpeedMetric,
    LearningRateMetric,
    LossMetric,
    MemoryUseMetric,
    Metric,
    PrecisionMetric,
    RecallMetric,
    TopKAccuracyMetric,
)
from burn.train.monitor import Monitor
from burn.train.plot import plot_history
from burn.train.progress import PlainProgress, ProgressDisplay, RichProgress
from burn.train.step import (
    ClassificationOutput,
    RegressionOutput,
    StepOutput,
    TrainOutput,
    TrainStep,
    ValidOutput,
    ValidStep,
)
from burn.train.summary import TrainingSummary

__all__ = [
    "AccuracyMetric", "Checkpointer", "ClassificationOutput", "CpuUseMetric", "EarlyStopping",
    "F1Metric", "IterationSpeedMetric", "Learner", "LearningRateMetric", "LossMetric",
    "MemoryUseMetric", "Metric", "MetricLogger", "Monitor", "PlainProgress", "PrecisionMetric",
    "ProgressDisplay", "RecallMetric", "RegressionOutput", "RichProgress", "StepOutput",
    "TopKAccuracyMetric", "TrainOutput", "TrainStep", "TrainingSummary", "ValidOutput",
    "ValidStep", "evaluate", "metrics", "plot_history", "resolve_checkpoint",
]
