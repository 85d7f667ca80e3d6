"""Train a Wasserstein GAN (weight clipping, as Burn's wgan example) on MNIST and write grids of
generated digits and the loss curves: `python -m burn_wgan [--epochs N]`. Without the MNIST
files (and no way to download them) it trains on scikit-learn's 8x8 digits. Artifacts go to
`--artifact-dir` (default `artifacts/wgan`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import burn
from burn_dataset import DatasetUnavailableError
from burn_wgan.data import load_images
from burn_wgan.training import WganConfig, train


def main(argv: list[str] | None = None) -> int:
    """Command line entry point; returns the exit status (1 when no data can be loaded)."""
    defaults = WganConfig()
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--epochs", type=int, default=defaults.epochs)
    parser.add_argument("--batch-size", type=int, default=defaults.batch_size)
    parser.add_argument("--lr", type=float, default=defaults.lr, help="RMSProp's learning rate")
    parser.add_argument("--n-critic", type=int, default=defaults.n_critic,
                        help="critic steps per generator step")
    parser.add_argument("--clip", type=float, default=defaults.clip,
                        help="the critic's weights are clipped to [-clip, clip]")
    parser.add_argument("--sample-every", type=int, default=defaults.sample_every,
                        help="write a sample grid every this many epochs")
    parser.add_argument("--train-size", type=int, default=10_000,
                        help="at most this many training images")
    parser.add_argument("--device", type=burn.device.device_arg, default=None,
                        help="a device spec, e.g. numpy or numpy+autodiff (default: burn's)")
    parser.add_argument("--artifact-dir", type=Path, default=Path("artifacts/wgan"),
                        help="sample grids and loss curves (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=defaults.seed)
    parser.add_argument("--no-download", action="store_true",
                        help="only use MNIST files already in the cache")
    parser.add_argument("--quiet", action="store_true", help="no per-epoch losses")
    parser.add_argument("--smoke", action="store_true",
                        help="a quick check: 256 images, 2 epochs, no download, quiet")
    args = parser.parse_args(argv)
    for flag in ("epochs", "batch_size", "n_critic", "sample_every", "train_size"):
        if getattr(args, flag) < 1:
            parser.error(f"--{flag.replace('_', '-')} must be at least 1, got "
                         f"{getattr(args, flag)}")
    for flag in ("lr", "clip"):
        if not getattr(args, flag) > 0:
            parser.error(f"--{flag} must be positive, got {getattr(args, flag)}")
    if args.smoke:
        args.train_size, args.epochs, args.batch_size, args.sample_every = 256, 2, 32, 1
    try:
        images, source = load_images(args.train_size,
                                     download=not (args.no_download or args.smoke))
    except DatasetUnavailableError as e:
        print(f"no data to train on: {e}", file=sys.stderr)
        return 1
    if len(images) < args.batch_size:
        parser.error(f"--batch-size {args.batch_size} exceeds the {len(images)} images")
    config = WganConfig(epochs=args.epochs, batch_size=args.batch_size, lr=args.lr,
                        n_critic=args.n_critic, clip=args.clip,
                        sample_every=args.sample_every, seed=args.seed)
    history = train(images, config, args.device or burn.default_device(), args.artifact_dir,
                    progress=not (args.quiet or args.smoke))
    critic, generator = history[-1]
    print(f"data: {source}, {len(images)} images; last epoch: critic loss {critic:+.4f}, "
          f"generator loss {generator:+.4f}; samples in {args.artifact_dir / 'samples.png'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
