"""Train a small CNN on an image folder with the Learner: `ImageFolderDataset.classification`
labels each image by its sub-folder and DataLoader workers decode and batch the images:
`python -m custom_image_dataset [--data DIR] [--epochs N]`. Without `--data` it first draws a
folder of 32x32 circles, squares and triangles with pillow. Artifacts go to `--artifact-dir`
(default `artifacts/custom-image-dataset`)."""

from __future__ import annotations

import argparse
import sys
from functools import partial
from pathlib import Path
from typing import cast

import numpy as np
from PIL import Image, ImageDraw

import burn
import burn.optim as optim
from burn.data import DataLoader, WorkerType
from burn.nn import BatchNorm2d, Conv2d, CrossEntropyLoss, Linear, MaxPool2d, Module, Relu
from burn.train import AccuracyMetric, ClassificationOutput, Learner, LossMetric, evaluate
from burn_dataset import DatasetUnavailableError, ImageFolderDataset, train_valid_split
from burn_dataset.source import ImageItem, Label

SHAPES = ("circle", "square", "triangle")


def draw_shapes(root: Path, per_class: int, size: int = 32, seed: int = 0) -> Path:
    """Write `per_class` PNGs of each shape to `root/<shape>/<k>.png`: a filled shape of random
    colour, place and extent on a random darker background with pixel noise."""
    rng = np.random.default_rng(seed)
    for shape in SHAPES:
        (root / shape).mkdir(parents=True, exist_ok=True)
        for k in range(per_class):
            background = tuple(int(c) for c in rng.integers(0, 100, 3))
            image = Image.new("RGB", (size, size), background)
            radius = rng.uniform(0.2, 0.4) * size
            cx, cy = rng.uniform(radius, size - radius, 2)
            fill = tuple(int(c) for c in rng.integers(120, 256, 3))
            draw = ImageDraw.Draw(image)
            box = (cx - radius, cy - radius, cx + radius, cy + radius)
            if shape == "circle":
                draw.ellipse(box, fill=fill)
            elif shape == "square":
                draw.rectangle(box, fill=fill)
            else:
                draw.polygon([(cx, cy - radius), (cx - radius, cy + radius),
                              (cx + radius, cy + radius)], fill=fill)
            noisy = np.asarray(image, np.int16) + rng.integers(-20, 21, (size, size, 3))
            Image.fromarray(np.clip(noisy, 0, 255).astype(np.uint8)).save(
                root / shape / f"{k:04d}.png")
    return root


class ImageBatcher:
    """A `StagedBatcher` of `ImageItem`s into (images [n, C, H, W] float32 in [-1, 1],
    labels [n] int64); process workers run its numpy `collate`."""

    def collate(self, items: list[ImageItem]) -> tuple[np.ndarray, np.ndarray]:
        """Numpy stage: HWC uint8 -> CHW float32 in [-1, 1], class indices."""
        images = np.stack([item.image for item in items]).transpose(0, 3, 1, 2)
        labels = np.array([cast(Label, item.annotation).index for item in items], np.int64)
        return (images.astype(np.float32) / 127.5 - 1.0), labels

    def to_device(self, collated: tuple[np.ndarray, np.ndarray],
                  device: burn.Device) -> tuple[burn.Tensor, burn.Tensor]:
        """Tensor stage."""
        images, labels = collated
        return burn.tensor(images, device=device), burn.tensor(labels, device=device)

    def batch(self, items: list[ImageItem],
              device: burn.Device) -> tuple[burn.Tensor, burn.Tensor]:
        """`to_device(collate(items), device)`."""
        return self.to_device(self.collate(items), device)


class ShapeCnn(Module):
    """Three conv 3x3 + batch-norm + ReLU + 2x2 max-pool blocks (16, 32, 32 channels), then a
    linear layer over the flattened [32, H/8, W/8] features.

    Args:
        classes: number of classes.
        side: image height and width (a multiple of 8).
        channels: input channels.
        device: where the params live (the default device when None).
    """

    def __init__(self, classes: int, side: int = 32, channels: int = 3,
                 device: burn.Device | None = None) -> None:
        widths = [channels, 16, 32, 32]
        self.convs = [Conv2d(c_in, c_out, 3, padding=1, bias=False, device=device)
                      for c_in, c_out in zip(widths, widths[1:], strict=False)]
        self.norms = [BatchNorm2d(c, device=device) for c in widths[1:]]
        self.pool = MaxPool2d(2)
        self.activation = Relu()
        self.head = Linear(widths[-1] * (side // 8) ** 2, classes, device=device)
        self.loss = CrossEntropyLoss()

    def forward(self, images: burn.Tensor) -> burn.Tensor:
        """[n, C, H, W] images -> [n, classes] logits."""
        x = images
        for conv, norm in zip(self.convs, self.norms, strict=True):
            x = self.pool(self.activation(norm(conv(x))))
        return self.head(x.flatten(1))

    def train_step(self, batch: tuple[burn.Tensor, burn.Tensor]) -> ClassificationOutput:
        """Loss, logits and targets of one (images, labels) batch (also validates)."""
        images, labels = batch
        logits = self(images)
        return ClassificationOutput(self.loss(logits, labels), logits, labels)


def run(data: Path, epochs: int, artifact_dir: Path, seed: int = 0, batch_size: int = 32,
        workers: int = 2, worker_type: WorkerType = "thread", progress: bool = True,
        resume: bool = False) -> tuple[float, int, list[str]]:
    """Load the folder, hold out 30% of it (half to validate each epoch, half to test), train,
    then test.

    Args:
        data: a folder of one sub-folder of images per class.
        epochs: training epochs.
        artifact_dir: where the logs, checkpoints and curves go.
        seed: seed of the split, the init and the shuffles.
        batch_size: images per batch.
        workers: DataLoader workers (0: batches are built in the training loop).
        worker_type: "thread" or "process".
        progress: show training progress and the summary.
        resume: continue from the latest checkpoint in `artifact_dir` (if any).
    Returns:
        (test accuracy, test images, class names).
    Raises:
        DatasetUnavailableError: `data` is not a folder.
    """
    burn.seed(seed)
    # one decoding thread per batch: the DataLoader workers already run batches in parallel
    folder = ImageFolderDataset.classification(data, num_workers=1)
    train, rest = train_valid_split(folder, 0.3, seed)
    valid, test = train_valid_split(rest, 0.5, seed)
    side = folder[0].image.shape[0]
    if progress:
        print(f"{data}: {len(folder)} images of {folder.classes}, {side}x{side}; "
              f"{len(train)} to train, {len(valid)} to validate, {len(test)} to test",
              flush=True)
    loader = partial(DataLoader, batcher=ImageBatcher(), num_workers=workers,
                     worker_type=worker_type)
    train_loader = loader(train, batch_size=batch_size, shuffle=True, seed=seed)
    valid_loader = loader(valid, batch_size=128)
    model = ShapeCnn(len(folder.classes), side, folder[0].image.shape[2])
    learner = Learner(model, optim.AdamConfig().init(), 3e-3,
                      metrics=[LossMetric(), AccuracyMetric()], progress=progress,
                      artifact_dir=artifact_dir, resume_hint="--resume continues it")
    trained = learner.fit(train_loader, valid_loader, epochs, resume=resume).model
    accuracy = evaluate(trained, loader(test, batch_size=128), [AccuracyMetric()])["accuracy"]
    return accuracy, len(test), folder.classes


def main(argv: list[str] | None = None) -> int:
    """Command line entry point; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", type=Path, help="image folder (default: draw one)")
    parser.add_argument("--per-class", type=int, default=200, help="images drawn per class")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--artifact-dir", type=Path,
                        default=Path("artifacts/custom-image-dataset"),
                        help="logs, checkpoints, curves, drawn shapes (default: %(default)s)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--workers", type=int, default=2, help="DataLoader workers")
    parser.add_argument("--worker-type", choices=("thread", "process"), default="thread")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quiet", action="store_true", help="no progress display")
    parser.add_argument("--resume", action="store_true", help="continue the latest checkpoint")
    parser.add_argument("--smoke", action="store_true",
                        help="a quick check: 12 images per class, 1 epoch, no progress display")
    args = parser.parse_args(argv)
    for flag in ("per_class", "epochs", "batch_size"):
        if getattr(args, flag) < 1:
            parser.error(f"--{flag.replace('_', '-')} must be at least 1")
    if args.workers < 0:
        parser.error("--workers must be at least 0")
    per_class, epochs = (12, 1) if args.smoke else (args.per_class, args.epochs)
    data = args.data or draw_shapes(args.artifact_dir / "shapes", per_class, seed=args.seed)
    try:
        accuracy, n_test, classes = run(data, epochs, args.artifact_dir, args.seed,
                                        args.batch_size, args.workers, args.worker_type,
                                        progress=not (args.quiet or args.smoke),
                                        resume=args.resume)
    except DatasetUnavailableError as e:
        print(f"error: {e} (--data takes a folder of <class>/<image> files)", file=sys.stderr)
        return 2
    print(f"test accuracy: {accuracy:.4f} on {n_test} images (chance: {1 / len(classes):.2f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
