"""Train an MLP or a small CNN on MNIST with the Learner and report the accuracy on held-out
images: `python -m burn_mnist [--model mlp|cnn] [--epochs N]`. Without the MNIST files (and no
way to download them) it says where to put them and trains on scikit-learn's 8x8 digits.
Artifacts go to `--artifact-dir` (default `artifacts/mnist`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

import burn
import burn.optim as optim
from burn.data import DataLoader, StackBatcher
from burn.nn import Conv2d, CrossEntropyLoss, Dropout, Linear, MaxPool2d, Module, Relu
from burn.train import AccuracyMetric, ClassificationOutput, Learner, LossMetric, evaluate
from burn_dataset import (
    Dataset,
    DatasetUnavailableError,
    InMemoryDataset,
    MapperDataset,
    MnistDataset,
    MnistItem,
    PartialDataset,
    train_valid_split,
)
from burn_dataset.source import cache_dir

CLASSES = 10
MEAN, STD = 0.1307, 0.3081  # MNIST's pixel statistics (on the [0, 1] scale)


def load_mnist(train_size: int, test_size: int,
               download: bool) -> tuple[Dataset[MnistItem], Dataset[MnistItem]]:
    """The first `train_size` / `test_size` images of MNIST's train / test splits.

    Raises:
        DatasetUnavailableError: the IDX files are not in the cache and cannot be downloaded.
    """
    train, test = MnistDataset("train", download=download), MnistDataset("test", download=download)
    return (PartialDataset(train, 0, min(train_size, len(train))),
            PartialDataset(test, 0, min(test_size, len(test))))


def load_digits(train_size: int, test_size: int,
                seed: int) -> tuple[Dataset[MnistItem], Dataset[MnistItem]]:
    """scikit-learn's 1,797 8x8 digits as `MnistItem`s (used at 8x8, pixels rescaled from 0..16
    to 0..255), split 80/20 at random, then cut to the requested sizes.

    Raises:
        DatasetUnavailableError: scikit-learn is not installed.
    """
    try:
        from sklearn.datasets import load_digits as sklearn_digits
    except ModuleNotFoundError as e:
        raise DatasetUnavailableError(f"the digits fallback needs scikit-learn ({e}): "
                                      f"pip install scikit-learn") from e
    digits = sklearn_digits()
    images = np.rint(digits.images * (255 / 16)).astype(np.uint8)
    items = [MnistItem(image, int(label)) for image, label in zip(images, digits.target,
                                                                   strict=True)]
    train, test = train_valid_split(InMemoryDataset(items), 0.2, seed)
    return (PartialDataset(train, 0, min(train_size, len(train))),
            PartialDataset(test, 0, min(test_size, len(test))))


def load_data(train_size: int, test_size: int, seed: int,
              download: bool) -> tuple[Dataset[MnistItem], Dataset[MnistItem], str]:
    """MNIST, else (with a note on how to get it) the digits fallback; also names the source.
    A note says when fewer images than asked for exist."""
    train, test, source = _load_source(train_size, test_size, seed, download)
    for flag, asked, got in (("--train-size", train_size, len(train)),
                             ("--test-size", test_size, len(test))):
        if got < asked:
            print(f"{flag} {asked}: {source} has {got} such images; using all of them",
                  flush=True)
    return train, test, source


def _load_source(train_size: int, test_size: int, seed: int,
                 download: bool) -> tuple[Dataset[MnistItem], Dataset[MnistItem], str]:
    try:
        return (*load_mnist(train_size, test_size, download), "MNIST")
    except DatasetUnavailableError as e:
        root = cache_dir() / MnistDataset.NAME
        files = ", ".join(f.name for split in MnistDataset.FILES.values() for f in split)
        print(f"MNIST is not available ({str(e).split(';')[0]}).\n"
              f"To train on MNIST, put {files} (gzipped or not, e.g. from "
              f"{MnistDataset.MIRRORS[0]}) in the cache dir {root}, or run once with internet "
              f"access to download them there; the cache dir is $BURN_DATASET_CACHE/mnist, "
              f"by default ~/.cache/burn-dataset/mnist.\n"
              f"Falling back to scikit-learn's 8x8 digits dataset (used at 8x8, not upscaled).",
              flush=True)
    return (*load_digits(train_size, test_size, seed), "scikit-learn digits (8x8)")


def to_pair(item: MnistItem) -> tuple[np.ndarray, int]:
    """An item as (normalised float32 image [1, H, W], label), ready for `StackBatcher`."""
    image = (item.image.astype(np.float32) / 255.0 - MEAN) / STD
    return image[None], item.label


class Classifier(Module):
    """Base of the two models: the train (and valid) step is the cross entropy of the logits."""

    loss = CrossEntropyLoss()

    def train_step(self, batch: tuple[burn.Tensor, burn.Tensor]) -> ClassificationOutput:
        """Loss, logits and targets of one (images [n, 1, H, W], labels [n]) batch."""
        images, labels = batch
        logits = self(images)
        return ClassificationOutput(self.loss(logits, labels), logits, labels)


class Mlp(Classifier):
    """Flattened pixels -> `hidden` ReLU units (dropout 0.2) -> 10 logits.

    Args:
        side: image height and width.
        hidden: hidden width.
        device: where the params live (the default device when None).
    """

    def __init__(self, side: int, hidden: int = 128, device: burn.Device | None = None) -> None:
        self.hidden = Linear(side * side, hidden, device=device)
        self.output = Linear(hidden, CLASSES, device=device)
        self.activation = Relu()
        self.dropout = Dropout(0.2)

    def forward(self, images: burn.Tensor) -> burn.Tensor:
        """[n, 1, H, W] images -> [n, 10] logits."""
        return self.output(self.dropout(self.activation(self.hidden(images.flatten(1)))))


class Cnn(Classifier):
    """Two 3x3 conv (8, 16 channels) + ReLU + 2x2 max-pool blocks, dropout 0.25, a linear head.

    Args:
        side: image height and width (a multiple of 4).
        device: where the params live (the default device when None).
    """

    def __init__(self, side: int, device: burn.Device | None = None) -> None:
        self.convs = [Conv2d(1, 8, 3, padding=1, device=device),
                      Conv2d(8, 16, 3, padding=1, device=device)]
        self.pool = MaxPool2d(2)
        self.activation = Relu()
        self.dropout = Dropout(0.25)
        self.head = Linear(16 * (side // 4) ** 2, CLASSES, device=device)

    def forward(self, images: burn.Tensor) -> burn.Tensor:
        """[n, 1, H, W] images -> [n, 10] logits."""
        x = images
        for conv in self.convs:
            x = self.pool(self.activation(conv(x)))
        return self.head(self.dropout(x.flatten(1)))


def run(model_name: str, epochs: int, artifact_dir: Path, train_size: int, test_size: int,
        seed: int = 0, batch_size: int = 64, lr: float = 2e-3, download: bool = True,
        progress: bool = True, resume: bool = False) -> tuple[float, str, int]:
    """Load the data, train with the Learner (validating each epoch on 10% of the training
    images), then test on the held-out images of the test split.

    Args:
        model_name: "mlp" or "cnn".
        epochs: training epochs.
        artifact_dir: where the logs, checkpoints and curves go.
        train_size, test_size: at most this many training (validation included) / test
            images.
        seed: seed of the init, the fallback split and the shuffles.
        batch_size: images per batch.
        lr: Adam's learning rate.
        download: allow downloading MNIST when it is not in the cache.
        progress: show training progress and the summary.
        resume: continue from the latest checkpoint in `artifact_dir` (if any).
    Returns:
        (test accuracy, the data source, test images).
    """
    burn.seed(seed)
    train_all, test, source = load_data(train_size, test_size, seed, download)
    train, valid = train_valid_split(train_all, 0.1, seed)
    side = train[0].image.shape[0]
    batcher = StackBatcher(burn.float32)
    train_loader = DataLoader(MapperDataset(train, to_pair), batcher, batch_size=batch_size,
                              shuffle=True, seed=seed)
    valid_loader = DataLoader(MapperDataset(valid, to_pair), batcher, batch_size=256)
    test_loader = DataLoader(MapperDataset(test, to_pair), batcher, batch_size=256)
    model = Mlp(side) if model_name == "mlp" else Cnn(side)
    if progress:
        print(f"training a {model_name} on {len(train)} {source} images "
              f"({side}x{side}), validating on {len(valid)}, testing on {len(test)} held-out "
              f"ones", flush=True)
    learner = Learner(model, optim.AdamConfig().init(), lr,
                      metrics=[LossMetric(), AccuracyMetric()], progress=progress,
                      artifact_dir=artifact_dir, resume_hint="--resume continues it")
    trained = learner.fit(train_loader, valid_loader, epochs, resume=resume).model
    return evaluate(trained, test_loader, [AccuracyMetric()])["accuracy"], source, len(test)


def main(argv: list[str] | None = None) -> int:
    """Command line entry point; returns the exit status (1 when no data can be loaded)."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", choices=("mlp", "cnn"), default="mlp")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--artifact-dir", type=Path, default=Path("artifacts/mnist"),
                        help="logs, checkpoints and curves (default: %(default)s)")
    parser.add_argument("--train-size", type=int, default=6_000,
                        help="training images used, 10%% of them to validate each epoch")
    parser.add_argument("--test-size", type=int, default=2_000,
                        help="test images used for the final accuracy")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-download", action="store_true",
                        help="only use MNIST files already in the cache")
    parser.add_argument("--quiet", action="store_true", help="no progress display")
    parser.add_argument("--resume", action="store_true", help="continue the latest checkpoint")
    parser.add_argument("--smoke", action="store_true",
                        help="a quick check: 300 training and 100 test images, 1 epoch, "
                             "no download, no progress display")
    args = parser.parse_args(argv)
    if args.train_size < 10:
        parser.error(f"--train-size must be at least 10 (10% validate), got {args.train_size}")
    for flag in ("test_size", "epochs", "batch_size"):
        if getattr(args, flag) < 1:
            parser.error(f"--{flag.replace('_', '-')} must be at least 1")
    train_size, test_size, epochs = ((300, 100, 1) if args.smoke else
                                     (args.train_size, args.test_size, args.epochs))
    try:
        accuracy, source, n_test = run(
            args.model, epochs, args.artifact_dir, train_size, test_size, args.seed,
            args.batch_size,
            download=not (args.no_download or args.smoke),
            progress=not (args.quiet or args.smoke), resume=args.resume)
    except DatasetUnavailableError as e:
        print(f"no data to train on: {e}", file=sys.stderr)
        return 1
    print(f"data: {source}; test accuracy: {accuracy:.4f} on {n_test} held-out images "
          f"(chance: {1 / CLASSES:.2f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
