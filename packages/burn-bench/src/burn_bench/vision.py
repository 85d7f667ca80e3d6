"""burn-vision on burn's CPU backends (numpy, and the cube backend cpu's burn-cube kernels)
against OpenCV in the same run: connected components with stats (random 4096x4096 binary
image, p = 0.5, 8-connectivity), erode 5x5 and filter2D 5x5 on 4096x4096 float32, NMS on 10k
boxes (cv2.dnn.NMSBoxes, and torchvision.ops.nms on the CPU where torchvision's compiled ops
load; numpy only: the cube backends run the default dense-IoU NMS); the cuda backend too where
it is present (each call ends with a device sync).
OpenCV's own thread pool follows OMP_NUM_THREADS when it is set, so that both sides run on as
many threads."""

from __future__ import annotations

import os
from collections.abc import Callable

import cv2
import numpy as np

import burn
import burn_vision as bv
from burn_bench.timing import Candidate, Measurement, measure_interleaved, report

SIZE = 4096
BOXES = 10_000


#: the burn CPU backends timed: NumPy's host fast paths and the cube backend cpu's generated C
BACKENDS = ("numpy", "cpu")
#: GPU backends timed where present (wgpu is left out: here it is llvmpipe, a CPU emulation)
GPU_BACKENDS = ("cuda",)
#: the label of torchvision's CPU nms in the report
TORCHVISION_NMS = "torchvision ops.nms (cpu)"


def _present(name: str) -> bool:
    return any(b.name == name and b.available for b in burn.available_backends())


def _torchvision_nms(boxes: np.ndarray, scores: np.ndarray) -> tuple[
        Callable[[], object] | None, str]:
    """torchvision's CPU nms on these boxes (IoU threshold 0.5), or None and why it is not
    timed: torchvision's compiled ops load only against the torch build they were built for
    (PyPI's; a CPU-only build of torch lacks the CUDA libraries its wheels link)."""
    try:
        import torch
        from torchvision.ops import nms as tv_nms

        b, s = torch.from_numpy(boxes), torch.from_numpy(scores)
        tv_nms(b[:1], s[:1], 0.5)  # raises here when the compiled op did not register
    except Exception as exc:  # ImportError, or RuntimeError: operator torchvision::nms missing
        return None, f"torchvision ops.nms not timed: {type(exc).__name__}: {exc}"
    return (lambda: tv_nms(b, s, 0.5)), f"torchvision {torchvision_version()}"


def torchvision_version() -> str:
    """The installed torchvision's version ("" when it is not importable)."""
    try:
        import torchvision
    except ImportError:
        return ""
    return str(torchvision.__version__)


def run() -> str:
    """Measure each op on burn's CPU backends (numpy, cpu), cuda where present, and with
    OpenCV, interleaved in one run; return the report table."""
    threads = os.environ.get("OMP_NUM_THREADS", "")
    if threads.isdigit() and int(threads) > 0:
        cv2.setNumThreads(int(threads))
    rng = np.random.default_rng(0)
    xy = rng.random((BOXES, 2)) * 1024
    wh = 16 + rng.random((BOXES, 2)) * 80
    boxes = np.concatenate([xy, xy + wh], 1).astype(np.float32)
    scores = rng.random(BOXES).astype(np.float32)
    # before any burn device starts: torchvision.ops imports triton, whose LLVM crashes the
    # process when Mesa's llvmpipe (wgpu on CPU machines) has loaded its own LLVM first
    tv_call, tv_note = _torchvision_nms(boxes, scores)
    binary = rng.random((SIZE, SIZE)) < 0.5
    binary_u8 = binary.astype(np.uint8)
    image = rng.random((SIZE, SIZE)).astype(np.float32)
    kernel = rng.standard_normal((5, 5)).astype(np.float32)
    square = np.ones((5, 5), np.uint8)
    xywh = np.concatenate([xy, wh], 1).tolist()
    score_list = scores.tolist()
    def on(name: str) -> dict[str, Callable[[], object]]:
        """burn's calls with inputs on backend `name`."""
        device = burn.Device(name)
        synced = name in GPU_BACKENDS

        def call(fn: Callable[[], object]) -> Callable[[], object]:
            def then_sync() -> object:
                result = fn()
                burn.sync(device)
                return result
            return then_sync if synced else fn

        img = burn.tensor(binary[None], device=device)
        x = burn.tensor(image, device=device)
        b, s = burn.tensor(boxes, device=device), burn.tensor(scores, device=device)
        return {"connected_components_with_stats": call(
                    lambda: bv.connected_components_with_stats(img, 8)),
                "erode 5x5": call(lambda: bv.erode(x, square)),
                "filter2d 5x5": call(lambda: bv.filter2d(x, kernel)),
                "nms": call(lambda: bv.nms(b, s, 0.5))}

    backends = BACKENDS + tuple(name for name in GPU_BACKENDS if _present(name))
    calls = {name: on(name) for name in backends}
    # (OpenCV's name, its call, burn's op, the backends timed)
    table: list[tuple[str, Callable[[], object], str, tuple[str, ...]]] = [
        ("connectedComponentsWithStats", lambda: cv2.connectedComponentsWithStats(
            binary_u8, connectivity=8, ltype=cv2.CV_32S), "connected_components_with_stats",
         backends),
        ("erode 5x5", lambda: cv2.erode(image, square), "erode 5x5", backends),
        ("filter2D 5x5", lambda: cv2.filter2D(image, -1, kernel), "filter2d 5x5", backends),
        ("dnn.NMSBoxes", lambda: cv2.dnn.NMSBoxes(xywh, score_list, 0.0, 0.5), "nms",
         ("numpy",)),
    ]
    candidates = []
    if tv_call is not None:
        candidates.append(Candidate(TORCHVISION_NMS, tv_call, vs="OpenCV dnn.NMSBoxes"))
    for cv_name, cv_call, op, timed in table:
        vs = f"OpenCV {cv_name}"
        candidates.append(Candidate(vs, cv_call))
        candidates += [Candidate(f"burn {name} {op}", calls[name][op], vs=vs)
                       for name in timed]
    results = measure_interleaved(candidates, min_time=0.1, rounds=3)
    table_text = report(f"vision ops on burn's backends ({', '.join(backends)}) vs OpenCV "
                        f"{cv2.__version__}, {SIZE}x{SIZE} images, {BOXES} boxes, OpenCV threads "
                        f"{cv2.getNumThreads()}", results)
    return f"{table_text}\n{_against_torchvision(results, tv_note)}"


def _against_torchvision(results: list[Measurement], note: str) -> str:
    """burn numpy's NMS time as a ratio of torchvision's (min / median), or why there is none."""
    by_name = {r.name: r for r in results}
    tv = by_name.get(TORCHVISION_NMS)
    if tv is None:
        return note
    ours = by_name["burn numpy nms"]
    return (f"burn numpy nms vs {note} ops.nms: {ours.seconds / tv.seconds:.2f}x / "
            f"{ours.median / tv.median:.2f}x (min / median time ratio, < 1: burn faster)")
