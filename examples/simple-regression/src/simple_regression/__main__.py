"""Train a 2-64-64-1 MLP on y = sin(x1) + x2^2 + noise with the Learner, save it, reload it
into a fresh model and check its test predictions: `python -m simple_regression [--epochs N]`.
Artifacts go to `--artifact-dir` (default `artifacts/simple-regression`)."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

import burn
import burn.optim as optim
from burn import record
from burn.data import DataLoader, StackBatcher
from burn.lr_scheduler import CosineAnnealingLrScheduler
from burn.nn import Linear, Module, MseLoss, Relu
from burn.train import (
    Checkpointer,
    EarlyStopping,
    IterationSpeedMetric,
    Learner,
    LearningRateMetric,
    LossMetric,
    RegressionOutput,
)


def synthetic(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """`n` points x ~ U(-2, 2)^2 with y = sin(x1) + x2^2 + N(0, 0.1^2): ([n, 2], [n, 1])."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-2.0, 2.0, size=(n, 2))
    y = np.sin(x[:, :1]) + x[:, 1:] ** 2 + rng.normal(0.0, 0.1, size=(n, 1))
    return x.astype(np.float32), y.astype(np.float32)


class Mlp(Module):
    """A 2-64-64-1 MLP with ReLU, trained on the mean squared error.

    Args:
        hidden: width of the hidden layers.
        device: where the params live (the default device when None).
    """

    def __init__(self, hidden: int = 64, device: burn.Device | None = None) -> None:
        self.layers = [Linear(2, hidden, device=device), Linear(hidden, hidden, device=device),
                       Linear(hidden, 1, device=device)]
        self.activation = Relu()
        self.loss = MseLoss()

    def forward(self, x: burn.Tensor) -> burn.Tensor:
        """Args:
            x: [n, 2].
        Returns:
            [n, 1] predictions.
        """
        for layer in self.layers[:-1]:
            x = self.activation(layer(x))
        return self.layers[-1](x)

    def train_step(self, batch: tuple[burn.Tensor, burn.Tensor]) -> RegressionOutput:
        """The loss and predictions of one (x, y) batch (also used for validation)."""
        x, y = batch
        predictions = self(x)
        return RegressionOutput(self.loss(predictions, y), predictions, y)


def predict(model: Module, x: np.ndarray) -> np.ndarray:
    """The predictions of `model` (ready for inference: `Learner.fit` returns it so, a fresh
    model is in eval mode after `eval()`) for `x`."""
    return np.asarray(model.eval()(burn.tensor(x, device=model.devices()[0])).to_numpy())


def run(epochs: int, artifact_dir: Path, seed: int = 0, progress: bool = True,
        resume: bool = False, batch_size: int = 64, points: int = 3000) -> tuple[float, bool]:
    """Train, save, reload and evaluate.

    Args:
        epochs: training epochs (early stopping may end sooner).
        artifact_dir: where logs, checkpoints, the curve plot and `model.bpk` go.
        seed: seed of the data, the init and the shuffles.
        progress: show training progress and the summary.
        resume: continue from the latest checkpoint in `artifact_dir` (if any).
        batch_size: items per batch.
        points: data points: the first 2/3 train, the next 1/6 validate, the last 1/6 test.
    Returns:
        (test MSE of the reloaded model, whether its predictions match the trained model's).
    """
    burn.seed(seed)
    x, y = synthetic(points, seed)
    n_train, n_valid = points * 2 // 3, points // 6
    items = list(zip(x, y, strict=True))
    train = DataLoader(items[:n_train], StackBatcher(), batch_size=batch_size, shuffle=True,
                       seed=seed)
    valid = DataLoader(items[n_train:n_train + n_valid], StackBatcher(), batch_size=256)
    x_test, y_test = x[n_train + n_valid:], y[n_train + n_valid:]

    steps = max(1, epochs * len(train))
    learner = Learner(Mlp(), optim.AdamConfig().init(),
                      CosineAnnealingLrScheduler(3e-3, steps),
                      metrics=[LossMetric(), LearningRateMetric(), IterationSpeedMetric()],
                      checkpointer=Checkpointer(keep_last=1, best_metric="loss"),
                      early_stopping=EarlyStopping("loss", patience=5, min_delta=1e-4),
                      progress=progress, artifact_dir=artifact_dir,
                      resume_hint="--resume continues it")
    model = learner.fit(train, valid, epochs, resume=resume).model

    path = artifact_dir / "model.bpk"
    record.save(model, path)
    reloaded = Mlp()
    record.load(reloaded, path)
    expected, got = predict(model, x_test), predict(reloaded, x_test)
    return float(np.mean((got - y_test) ** 2)), bool(np.allclose(got, expected, atol=1e-6))


def main(argv: list[str] | None = None) -> int:
    """Command line entry point; returns the exit status (1 when the reload mismatches)."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--epochs", type=int, default=40)
    parser.add_argument("--artifact-dir", type=Path, default=Path("artifacts/simple-regression"),
                        help="logs, checkpoints, curves and model.bpk (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quiet", action="store_true", help="no progress display")
    parser.add_argument("--resume", action="store_true", help="continue the latest checkpoint")
    parser.add_argument("--smoke", action="store_true",
                        help="a quick check: 600 points, 2 epochs, no progress display")
    args = parser.parse_args(argv)
    if args.epochs < 1:
        parser.error(f"--epochs must be at least 1, got {args.epochs}")
    epochs, points = (min(args.epochs, 2), 600) if args.smoke else (args.epochs, 3000)
    mse, match = run(epochs, args.artifact_dir, args.seed, progress=not (args.quiet or args.smoke),
                     resume=args.resume, points=points)
    print(f"saved {args.artifact_dir / 'model.bpk'}; reloaded predictions match: {match}")
    print(f"test MSE: {mse:.4f} (noise variance 0.01)")
    return 0 if match else 1


if __name__ == "__main__":
    raise SystemExit(main())
