"""The WGAN training loop (Burn's wgan: RMSProp, `n_critic` critic steps per generator step,
the critic's weights clipped to [-clip, clip]), sample grids and loss curves."""

from __future__ import annotations

import csv
import io
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import burn
import burn.optim as optim
from burn.optim.grads import to_grads_params
from burn_wgan.model import Critic, Generator


@dataclass
class WganConfig:
    """Training hyperparameters (Burn's wgan defaults where they fit the small data).

    Args:
        epochs: passes over the images.
        batch_size: images per critic step.
        lr: RMSProp's learning rate, for both networks.
        n_critic: critic steps per generator step.
        clip: the critic's weights are clipped to [-clip, clip] after each of its steps.
        d_latent: the generator's noise features.
        sample_every: write a sample grid every this many epochs (and after the last).
        samples: images in each grid (a square number).
        seed: seed of the init, the shuffles, the noise and the grids' fixed noise.
    """

    epochs: int = 200
    batch_size: int = 64
    lr: float = 5e-4
    n_critic: int = 5
    clip: float = 0.02
    d_latent: int = 32
    sample_every: int = 50
    samples: int = 64
    seed: int = 0


def train(images: np.ndarray, config: WganConfig, device: burn.Device,
          artifact_dir: Path, progress: bool = True) -> list[tuple[float, float]]:
    """Train a generator on `images`; write `samples_epoch_<k>.png` every `sample_every` epochs,
    `samples.png` (the last grid), `losses.csv` and `losses.png` in `artifact_dir`.

    Args:
        images: [n, side, side] in [-1, 1].
        config: the hyperparameters.
        device: the training device (its autodiff form is used).
        artifact_dir: where the grids and curves go (created).
        progress: print each epoch's losses.
    Returns:
        Per epoch, the mean (critic loss, generator loss); the critic loss is minus the
        critic's estimate of the Wasserstein distance; the generator loss is nan for an epoch
        without a generator step (fewer than `n_critic` batches).
    """
    device = device.autodiff()
    burn.seed(config.seed)
    rng = np.random.default_rng(config.seed)
    side = images.shape[1]
    generator = Generator(config.d_latent, side, device=device)
    critic = Critic(side, device=device)
    opt_g = optim.RmsPropConfig().init()
    opt_c = optim.RmsPropConfig().init()
    fixed = burn.tensor(rng.standard_normal((config.samples, config.d_latent), np.float32),
                        device=device)
    artifact_dir.mkdir(parents=True, exist_ok=True)
    history: list[tuple[float, float]] = []
    step = 0
    for epoch in range(1, config.epochs + 1):
        losses_c, losses_g = [], []
        order = rng.permutation(len(images))
        for start in range(0, len(order) - config.batch_size + 1, config.batch_size):
            real = burn.tensor(images[order[start:start + config.batch_size]], device=device)
            fake = generator(_noise(rng, config, device)).detach()
            loss_c = critic(fake).mean() - critic(real).mean()
            opt_c.step(config.lr, critic, to_grads_params(loss_c.backward(),
                                                          critic.parameters()))
            with burn.no_grad():
                for param in critic.parameters():
                    param.set_(param.clamp(-config.clip, config.clip))
            losses_c.append(float(loss_c.item()))
            step += 1
            if step % config.n_critic == 0:
                loss_g = -critic(generator(_noise(rng, config, device))).mean()
                opt_g.step(config.lr, generator, to_grads_params(loss_g.backward(),
                                                                 generator.parameters()))
                losses_g.append(float(loss_g.item()))
        history.append((float(np.mean(losses_c)), float(np.mean(losses_g or [np.nan]))))
        if progress:
            print(f"epoch {epoch}/{config.epochs}: critic loss {history[-1][0]:+.4f}, "
                  f"generator loss {history[-1][1]:+.4f}", flush=True)
        if epoch % config.sample_every == 0 or epoch == config.epochs:
            with burn.no_grad():
                grid = generator(fixed).to_numpy()
            write_grid(grid, artifact_dir / f"samples_epoch_{epoch}.png")
            write_grid(grid, artifact_dir / "samples.png")
    write_losses(history, artifact_dir)
    return history


def _noise(rng: np.random.Generator, config: WganConfig, device: burn.Device) -> burn.Tensor:
    """A batch of the generator's input noise, N(0, 1), drawn from the seeded `rng`."""
    return burn.tensor(rng.standard_normal((config.batch_size, config.d_latent), np.float32),
                       device=device)


def write_grid(images: np.ndarray, path: Path, cell: int = 32) -> None:
    """Write `images` [n, side, side] in [-1, 1] (n a square number) as a grid PNG, each
    image scaled up (nearest) to about `cell` pixels, with a 2-pixel gap; atomically."""
    from PIL import Image

    n, side = images.shape[0], images.shape[1]
    cols = int(round(np.sqrt(n)))
    scale = max(1, cell // side)
    pixels = np.clip((images + 1) * 127.5, 0, 255).astype(np.uint8)
    pixels = pixels.repeat(scale, axis=1).repeat(scale, axis=2)
    size = side * scale + 2
    grid = np.zeros((size * -(-n // cols), size * cols), np.uint8)
    for k, image in enumerate(pixels):
        r, c = divmod(k, cols)
        grid[r * size + 1:r * size + 1 + side * scale,
             c * size + 1:c * size + 1 + side * scale] = image
    buffer = io.BytesIO()
    Image.fromarray(grid, mode="L").save(buffer, format="PNG")
    _write_atomic(path, buffer.getvalue())


def write_losses(history: list[tuple[float, float]], artifact_dir: Path) -> None:
    """Write `losses.csv` (epoch, critic_loss, generator_loss) and the curves `losses.png`."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = io.StringIO()
    writer = csv.writer(rows)
    writer.writerow(["epoch", "critic_loss", "generator_loss"])
    writer.writerows((k, f"{c:.6f}", f"{g:.6f}") for k, (c, g) in enumerate(history, 1))
    _write_atomic(artifact_dir / "losses.csv", rows.getvalue().encode())
    fig, ax = plt.subplots(figsize=(6, 3.5))
    epochs = np.arange(1, len(history) + 1)
    ax.plot(epochs, [c for c, _ in history], label="critic loss (-Wasserstein estimate)")
    ax.plot(epochs, [g for _, g in history], label="generator loss")
    ax.set_xlabel("epoch")
    ax.legend()
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    plt.close(fig)
    _write_atomic(artifact_dir / "losses.png", buffer.getvalue())


def _write_atomic(path: Path, data: bytes) -> None:
    """Write `data` to `path` through a temp file and os.replace (never half-written)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)
