"""Train a 2-64-64-3 MLP on a three-arm spiral: `python -m train_mlp [--epochs N]`."""

from __future__ import annotations

import argparse
import time

import numpy as np

import burn
import burn.functional as F

CLASSES = 3


def spiral(points_per_class: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A three-arm spiral: features [n, 2] float32 and labels [n] int64."""
    rng = np.random.default_rng(seed)
    radius = np.tile(np.linspace(0.05, 1.0, points_per_class), CLASSES)
    labels = np.repeat(np.arange(CLASSES), points_per_class)
    angle = labels * (2 * np.pi / CLASSES) + radius * 4 + rng.normal(0, 0.2, radius.shape)
    features = np.stack([radius * np.sin(angle), radius * np.cos(angle)], axis=1)
    return features.astype(np.float32), labels.astype(np.int64)


def init_params(device: burn.Device, sizes: list[int]) -> list[burn.Tensor]:
    """Kaiming-uniform weights and zero biases for each layer, tracked for gradients."""
    params = []
    for fan_in, fan_out in zip(sizes, sizes[1:], strict=False):
        bound = (6 / fan_in) ** 0.5
        params.append(burn.uniform((fan_in, fan_out), -bound, bound, device=device).require_grad())
        params.append(burn.zeros(fan_out, device=device).require_grad())
    return params


def forward(params: list[burn.Tensor], x: burn.Tensor) -> burn.Tensor:
    """Logits of the MLP: ReLU between layers."""
    for i in range(0, len(params), 2):
        x = x @ params[i] + params[i + 1]
        if i + 2 < len(params):
            x = F.relu(x)
    return x


def main(argv: list[str] | None = None) -> int:
    """Train, print the loss curve and the final accuracy; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=0.5)
    parser.add_argument("--smoke", action="store_true",
                        help="a quick check: 50 points per class, 2 epochs")
    args = parser.parse_args(argv)
    for flag in ("epochs", "batch_size"):
        if getattr(args, flag) < 1:
            parser.error(f"--{flag.replace('_', '-')} must be at least 1")
    if not args.lr > 0:
        parser.error(f"--lr must be positive, got {args.lr}")
    epochs, per_class = (min(args.epochs, 2), 50) if args.smoke else (args.epochs, 400)

    burn.seed(0)
    device = burn.default_device().autodiff()
    features, labels = spiral(per_class, seed=0)
    x_all = burn.tensor(features, device=device)
    y_all = burn.tensor(labels, device=device)
    params = init_params(device, [2, 64, 64, CLASSES])
    order_rng = np.random.default_rng(1)
    print(f"training on {device} ({len(labels)} points, {epochs} epochs)")
    start = time.perf_counter()
    for epoch in range(1, epochs + 1):
        total = 0.0
        order = order_rng.permutation(len(labels))
        for lo in range(0, len(order), args.batch_size):
            idx = burn.tensor(order[lo:lo + args.batch_size], device=device)
            x, y = x_all.select(0, idx), y_all.select(0, idx)
            logits = forward(params, x)
            loss = -(F.log_softmax(logits, 1) * burn.one_hot(y, CLASSES).float()).sum(1).mean()
            grads = loss.backward()
            params = [burn.Tensor.from_inner(p.inner() - args.lr * p.grad(grads), device)
                      .require_grad() for p in params]
            total += loss.item() * len(idx)
        if epoch == 1 or epoch % 5 == 0:
            print(f"epoch {epoch:3d}  loss {total / len(labels):.4f}")
    with burn.no_grad():
        predicted = forward(params, x_all).argmax(1)
    accuracy = (predicted == y_all).float().mean().item()
    print(f"accuracy {accuracy:.3f} in {time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
