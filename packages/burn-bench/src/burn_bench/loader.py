"""Image-folder loading: 10k 64x64 PNGs decoded with PIL into float32 batches of 64, 2 workers,
burn's DataLoader (threads and processes) vs torch.utils.data.DataLoader, with workers started
every epoch and with persistent ones."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import torch
from PIL import Image
from torch.utils.data import DataLoader as TorchLoader
from torch.utils.data import Dataset as TorchDataset

import burn
from burn.data import DataLoader
from burn_bench.timing import Measurement

IMAGES = 10_000
SIZE = 64
CLASSES = 10
BATCH = 64
WORKERS = 2
ROUNDS = 5


class PngFolder(TorchDataset[tuple[np.ndarray, int]]):
    """Minimal image-folder dataset shared by both loaders: item = (float32 CxHxW in [0, 1],
    label), decoded with PIL on access."""

    def __init__(self, root: Path) -> None:
        self.items = [(p, k) for k in range(CLASSES)
                      for p in sorted((root / f"class{k}").glob("*.png"))]

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: int) -> tuple[np.ndarray, int]:
        path, label = self.items[index]
        with Image.open(path) as img:
            pixels = np.asarray(img.convert("RGB"), dtype=np.float32)
        return pixels.transpose(2, 0, 1) / 255, label


def write_images(root: Path) -> None:
    """`IMAGES` seeded PNGs (a gradient plus noise) under ``root/class<k>/``."""
    rng = np.random.default_rng(0)
    ramp = np.linspace(0, 191, SIZE, dtype=np.float32)
    base = (ramp[:, None, None] + ramp[None, :, None] * np.array([0.2, 0.5, 0.8])) / 2
    for k in range(CLASSES):
        (root / f"class{k}").mkdir()
    for i in range(IMAGES):
        noise = rng.integers(0, 64, (SIZE, SIZE, 3), dtype=np.uint8)
        pixels = (base + noise).astype(np.uint8)
        Image.fromarray(pixels).save(root / f"class{i % CLASSES}" / f"{i:05d}.png")


def _epoch(loader: Iterable[tuple[Any, Any]]) -> int:
    """Iterate one epoch; the number of images seen."""
    return sum(len(labels) for _, labels in loader)


def _best_epochs(loaders: dict[str, tuple[Iterable[tuple[Any, Any]], str | None]]
                 ) -> list[Measurement]:
    """Best epoch time of each loader over `ROUNDS` rounds, the loaders taking turns in each
    round (so that load from other processes hits them alike); a warm-up round first.

    Args:
        loaders: name -> (loader, name of the loader it is compared with, or None).

    Returns:
        One measurement per loader, in order.
    """
    best = dict.fromkeys(loaders, float("inf"))
    for _ in range(ROUNDS + 1):
        for name, (loader, _) in loaders.items():
            start = time.perf_counter()
            if _epoch(loader) != IMAGES:
                raise RuntimeError(f"{name} did not yield {IMAGES} images")
            best[name] = min(best[name], time.perf_counter() - start)
    return [Measurement(name, seconds, loaders[name][1]) for name, seconds in best.items()]


def run() -> str:
    """Generate the images, measure one epoch per loader and return the report table."""
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory(prefix="burn-bench-loader-") as tmp:
        write_images(Path(tmp))
        dataset = PngFolder(Path(tmp))
        numpy = burn.Device("numpy")
        torch_fresh, torch_kept = (f"torch DataLoader ({WORKERS} processes{note})"
                                   for note in ("", ", persistent"))
        burn_kept: DataLoader[tuple[Any, Any]] = DataLoader(
            dataset, batch_size=BATCH, num_workers=WORKERS, worker_type="process", device=numpy,
            persistent_workers=True)
        loaders: dict[str, tuple[Iterable[tuple[Any, Any]], str | None]] = {
            torch_fresh: (TorchLoader(dataset, batch_size=BATCH, num_workers=WORKERS), None),
            f"burn DataLoader ({WORKERS} threads)": (DataLoader(
                dataset, batch_size=BATCH, num_workers=WORKERS, device=numpy), torch_fresh),
            f"burn DataLoader ({WORKERS} processes)": (DataLoader(
                dataset, batch_size=BATCH, num_workers=WORKERS, worker_type="process",
                device=numpy), torch_fresh),
            torch_kept: (TorchLoader(dataset, batch_size=BATCH, num_workers=WORKERS,
                                     persistent_workers=True), None),
            f"burn DataLoader ({WORKERS} processes, persistent)": (burn_kept, torch_kept),
        }
        try:
            results = _best_epochs(loaders)
        finally:
            burn_kept.close()
    by_name = {r.name: r for r in results}
    lines = [f"## data loading, {IMAGES} PNGs {SIZE}x{SIZE} -> float32 batches of {BATCH}",
             f"{'candidate':<46}{'images/s':>12}{'speed vs torch':>18}"]
    lines += [f"{r.name:<46}{IMAGES / r.seconds:>12,.0f}"
              + (f"{r.ratio_to(by_name[r.vs]):>17.2f}x" if r.vs else "")
              for r in results]
    return "\n".join(lines)

