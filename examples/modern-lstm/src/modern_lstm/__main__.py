"""Train an LstmNetwork to predict the next value of a noisy sine wave with the Learner, save it,
then infer on fresh windows: `python -m modern_lstm [--num-layers N] [--bidirectional]`;
`--infer` only infers with the model saved in `--artifact-dir` (default
`artifacts/modern-lstm`)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np

import burn
import burn.optim as optim
from burn import record
from burn.data import DataLoader, StackBatcher
from burn.nn import Module
from burn.train import Learner, LossMetric
from modern_lstm.data import sine_sequences
from modern_lstm.model import LstmNetwork

NOISE = 0.1
#: the network's options, saved beside model.bpk so that `--infer` rebuilds the same network
OPTIONS = ("d_hidden", "num_layers", "bidirectional", "dropout")


def train(options: dict[str, Any], epochs: int, artifact_dir: Path, device: burn.Device,
          seq_len: int = 10, sequences: int = 2000, seed: int = 0, batch_size: int = 32,
          lr: float = 3e-3, progress: bool = True, resume: bool = False) -> float:
    """Train on `sequences` windows (90% train, 10% validate), save `model.bpk` and
    `network.json` in `artifact_dir`.

    Args:
        options: LstmNetwork's `OPTIONS`.
        epochs: training epochs.
        artifact_dir: logs, checkpoints, curves, the model and its options.
        device: the training device (made autodiff by the Learner).
        seq_len: steps per window.
        sequences: windows generated.
        seed: seed of the data, the init and the shuffles.
        batch_size: windows per batch.
        lr: Adam's learning rate.
        progress: show training progress.
        resume: continue from the latest checkpoint in `artifact_dir` (if any).
    Returns:
        The validation MSE of the trained network.
    """
    burn.seed(seed)
    x, y = sine_sequences(sequences, seq_len, NOISE, seed)
    items = list(zip(x, y, strict=True))
    n_train = sequences * 9 // 10
    train_loader = DataLoader(items[:n_train], StackBatcher(), batch_size=batch_size,
                              shuffle=True, seed=seed)
    valid_loader = DataLoader(items[n_train:], StackBatcher(), batch_size=256)
    learner = Learner(LstmNetwork(device=device, **options), optim.AdamConfig().init(), lr,
                      device=device, metrics=[LossMetric()], progress=progress,
                      artifact_dir=artifact_dir, resume_hint="--resume continues it")
    model = learner.fit(train_loader, valid_loader, epochs, resume=resume).model
    record.save(model, artifact_dir / "model.bpk")
    _write_json(artifact_dir / "network.json", {**options, "seq_len": seq_len})
    return float(np.mean((predict(model, x[n_train:]) - y[n_train:]) ** 2))


def infer(artifact_dir: Path, device: burn.Device, n: int = 5, seed: int = 1
          ) -> tuple[np.ndarray, np.ndarray]:
    """Load the network saved by `train` and predict the next value of `n` fresh windows.

    Returns:
        (predictions [n, 1], the true next values [n, 1]).
    Raises:
        FileNotFoundError: no trained network in `artifact_dir`.
    """
    saved = artifact_dir / "network.json"
    if not saved.is_file():
        raise FileNotFoundError(f"no trained network in {artifact_dir} ({saved.name} is "
                                f"missing): train first, without --infer")
    options = json.loads(saved.read_text())
    model = LstmNetwork(device=device, **{k: options[k] for k in OPTIONS})
    record.load(model, artifact_dir / "model.bpk")
    x, y = sine_sequences(n, options["seq_len"], NOISE, seed)
    return predict(model, x), y


def predict(model: Module, x: np.ndarray) -> np.ndarray:
    """The eval-mode predictions of `model` for windows `x` [n, seq, 1]."""
    with burn.no_grad():
        return np.asarray(model.eval()(burn.tensor(x, device=model.devices()[0])).to_numpy())


def _write_json(path: Path, value: dict[str, Any]) -> None:
    """Write `value` to `path` atomically (a temp file, then os.replace)."""
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(value, indent=2))
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    """Command line entry point; returns the exit status (1 when `--infer` finds no model)."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--num-layers", type=int, default=2)
    parser.add_argument("--bidirectional", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--hidden", type=int, default=32, help="hidden features per direction")
    parser.add_argument("--dropout", type=float, default=0.1)
    parser.add_argument("--seq-len", type=int, default=10)
    parser.add_argument("--sequences", type=int, default=2000)
    parser.add_argument("--device", type=burn.device.device_arg, default=None,
                        help="a device spec, e.g. numpy or numpy+autodiff (default: burn's)")
    parser.add_argument("--artifact-dir", type=Path, default=Path("artifacts/modern-lstm"),
                        help="logs, checkpoints, curves and the model (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--infer", action="store_true",
                        help="only infer with the network saved in --artifact-dir")
    parser.add_argument("--quiet", action="store_true", help="no progress display")
    parser.add_argument("--resume", action="store_true", help="continue the latest checkpoint")
    parser.add_argument("--smoke", action="store_true",
                        help="a quick check: 200 windows of 6 steps, 1 epoch, hidden 8")
    args = parser.parse_args(argv)
    for flag in ("epochs", "num_layers", "hidden", "seq_len", "sequences"):
        if getattr(args, flag) < 1:
            parser.error(f"--{flag.replace('_', '-')} must be at least 1, got "
                         f"{getattr(args, flag)}")
    if args.sequences < 10:
        parser.error(f"--sequences must be at least 10 (10% validate), got {args.sequences}")
    if not 0.0 <= args.dropout < 1.0:
        parser.error(f"--dropout must be in [0, 1), got {args.dropout}")
    device = args.device or burn.default_device()
    if args.smoke:
        args.epochs, args.sequences, args.seq_len, args.hidden = 1, 200, 6, 8
    if not args.infer:
        options = {"d_hidden": args.hidden, "num_layers": args.num_layers,
                   "bidirectional": args.bidirectional, "dropout": args.dropout}
        mse = train(options, args.epochs, args.artifact_dir, device, args.seq_len,
                    args.sequences, args.seed, progress=not (args.quiet or args.smoke),
                    resume=args.resume)
        print(f"saved {args.artifact_dir / 'model.bpk'}; validation MSE {mse:.4f} "
              f"(input noise variance {NOISE ** 2:.2f})")
    try:
        predictions, expected = infer(args.artifact_dir, device)
    except FileNotFoundError as e:
        print(e, file=sys.stderr)
        return 1
    for got, want in zip(predictions[:, 0], expected[:, 0], strict=True):
        print(f"predicted {got:+.3f}, expected {want:+.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
