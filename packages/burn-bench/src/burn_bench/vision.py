"""burn-vision against OpenCV in the same run: connected components with stats (random
4096x4096 binary image, p = 0.5, 8-connectivity), erode 5x5 and filter2D 5x5 on 4096x4096
float32, NMS on 10k boxes (cv2.dnn.NMSBoxes). OpenCV's own thread pool follows
OMP_NUM_THREADS when it is set, so that both sides run on as many threads."""

from __future__ import annotations

import os

import cv2
import numpy as np

import burn
import burn_vision as bv
from burn_bench.timing import Candidate, measure_interleaved, report

SIZE = 4096
BOXES = 10_000


def run() -> str:
    """Measure each op on burn's NumPy backend and with OpenCV; return the report table."""
    threads = os.environ.get("OMP_NUM_THREADS", "")
    if threads.isdigit() and int(threads) > 0:
        cv2.setNumThreads(int(threads))
    rng = np.random.default_rng(0)
    device = burn.Device("numpy")
    binary = rng.random((SIZE, SIZE)) < 0.5
    binary_u8 = binary.astype(np.uint8)
    img = burn.tensor(binary[None], device=device)
    image = rng.random((SIZE, SIZE)).astype(np.float32)
    x = burn.tensor(image, device=device)
    kernel = rng.standard_normal((5, 5)).astype(np.float32)
    square = np.ones((5, 5), np.uint8)
    xy = rng.random((BOXES, 2)) * 1024
    wh = 16 + rng.random((BOXES, 2)) * 80
    boxes = np.concatenate([xy, xy + wh], 1).astype(np.float32)
    scores = rng.random(BOXES).astype(np.float32)
    xywh = np.concatenate([xy, wh], 1).tolist()
    score_list = scores.tolist()
    b, s = burn.tensor(boxes, device=device), burn.tensor(scores, device=device)
    cc, er, f2, nm = (f"OpenCV {name}" for name in (
        "connectedComponentsWithStats", "erode 5x5", "filter2D 5x5", "dnn.NMSBoxes"))
    results = measure_interleaved([
        Candidate(cc, lambda: cv2.connectedComponentsWithStats(binary_u8, connectivity=8,
                                                               ltype=cv2.CV_32S)),
        Candidate("burn connected_components_with_stats",
                  lambda: bv.connected_components_with_stats(img, 8), vs=cc),
        Candidate(er, lambda: cv2.erode(image, square)),
        Candidate("burn erode 5x5", lambda: bv.erode(x, square), vs=er),
        Candidate(f2, lambda: cv2.filter2D(image, -1, kernel)),
        Candidate("burn filter2d 5x5", lambda: bv.filter2d(x, kernel), vs=f2),
        Candidate(nm, lambda: cv2.dnn.NMSBoxes(xywh, score_list, 0.0, 0.5)),
        Candidate("burn nms", lambda: bv.nms(b, s, 0.5), vs=nm),
    ], min_time=0.1, rounds=3)
    return report(f"vision ops on the NumPy backend vs OpenCV {cv2.__version__}, "
                  f"{SIZE}x{SIZE} images, {BOXES} boxes, OpenCV threads {cv2.getNumThreads()}",
                  results)
