"""Label the blobs of a generated image, draw their boxes, run NMS on noisy detections and
write before / after PNGs."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

import burn
import burn_vision as bv


def make_blobs(rng: np.random.Generator, size: int = 128, count: int = 9) -> np.ndarray:
    """A bool [size, size] image of `count` random discs and rectangles, smoothed by an
    opening so that each blob is one component."""
    ys, xs = np.mgrid[:size, :size]
    img = np.zeros((size, size), dtype=bool)
    for _ in range(count):
        cy, cx = rng.integers(12, size - 12, 2)
        r = rng.integers(5, 12)
        if rng.random() < 0.5:
            img |= (ys - cy) ** 2 + (xs - cx) ** 2 <= r * r
        else:
            img |= (abs(ys - cy) <= r) & (abs(xs - cx) <= r // 2 + 2)
    noisy = img ^ (rng.random(img.shape) < 0.02)
    return bv.morphology(burn.tensor(noisy), "open", bv.structuring_element("ellipse", 3)
                         ).to_numpy()


def draw_boxes(rgb: np.ndarray, boxes: np.ndarray, colour: tuple[float, float, float]) -> None:
    """Draw box outlines (x1, y1, x2, y2, inclusive) on float [3, H, W] in place."""
    h, w = rgb.shape[1:]
    c = np.asarray(colour)[:, None]
    for x1, y1, x2, y2 in np.clip(np.rint(boxes).astype(int), 0, [w - 1, h - 1, w - 1, h - 1]):
        rgb[:, y1, x1:x2 + 1] = rgb[:, y2, x1:x2 + 1] = c
        rgb[:, y1:y2 + 1, x1] = rgb[:, y1:y2 + 1, x2] = c


def main(argv: list[str] | None = None) -> None:
    """Run the pipeline and write the PNGs."""
    parser = argparse.ArgumentParser(prog="vision-ops", description=__doc__)
    parser.add_argument("--out", type=Path, default=Path("vision-ops-out"))
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(args.seed)
    blobs = make_blobs(rng)
    labels, stats = bv.connected_components_with_stats(burn.tensor(blobs[None]), 8)
    n = int(stats.max_label[0].item())
    boxes = np.stack([s.to_numpy()[0, 1:] for s in
                      (stats.left, stats.top, stats.right, stats.bottom)], 1).astype(np.float32)
    print(f"{n} components, areas {stats.area.to_numpy()[0, 1:].tolist()}")

    base = np.repeat(blobs[None].astype(np.float32) * 0.6, 3, 0)
    palette = rng.random((n + 1, 3)) * 0.7 + 0.3
    palette[0] = 0
    coloured = palette[labels.to_numpy()[0]].transpose(2, 0, 1).astype(np.float32)
    draw_boxes(coloured, boxes, (1.0, 1.0, 1.0))

    # noisy detections: 12 jittered copies of every box with random scores.
    copies = np.repeat(boxes, 12, 0)
    size = np.repeat(boxes[:, 2:] - boxes[:, :2] + 1, 12, 0)
    jitter = rng.normal(0, 0.12, copies.shape) * np.concatenate([size, size], 1)
    detections = np.concatenate([copies[:, :2] + jitter[:, :2],
                                 np.maximum(copies[:, 2:] + jitter[:, 2:],
                                            copies[:, :2] + jitter[:, :2])], 1).astype(np.float32)
    scores = rng.random(len(detections)).astype(np.float32)
    keep = bv.nms(burn.tensor(detections), burn.tensor(scores), 0.3).to_numpy()
    print(f"nms kept {len(keep)} of {len(detections)} detections")
    noisy, kept = base.copy(), base.copy()
    draw_boxes(noisy, detections, (1.0, 0.3, 0.2))
    draw_boxes(kept, detections[keep], (0.2, 1.0, 0.3))

    for name, image in [("blobs", base), ("components", coloured), ("detections", noisy),
                        ("nms", kept)]:
        path = bv.save_grid(burn.tensor(image[None]), args.out / f"{name}.png", padding=0)
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
