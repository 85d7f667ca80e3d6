"""The `compile` suite: how long a fresh process takes from its start to the end of its first
training step, with burn-cube's compile cache empty (cold), filled by an earlier run of the same
model (disk-cache hit: warm) and filled by the model before an edit (edit: the model's source
file edited to another hidden width and activation, as a user changing a model and re-running
would), against PyTorch's time for the same model in a fresh process (on CUDA for a GPU backend
where torch has it).

The model is a user's file (`MODEL_SOURCE`, written into the round's temporary directory and
imported by path); the edit case rewrites it (`EDIT`) and each process reports the hidden width
and activation it built, which the suite checks. Every measurement is a new
`python -m burn_bench.compile` process (`BURN_CUBE_CACHE_DIR` and the drivers' own disk caches,
`DRIVER_CACHES`, set to the round's directory, OMP / OpenBLAS / MKL threads set before anything
starts); the child reports the wall clock at the end of its first step, so the time counts
interpreter start, imports, model building, kernel compilation (or cache loads) and the step.
`compile_s` is the first step's duration less the second's (what compiling and loading add to a
step); under fusion `fusion_compile_s` is the time the fusion streams spent building and
compiling (or loading from the disk cache) their fused kernels in the first step.
Burn states that a recompile after an edit takes under five seconds, with no numbers.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from burn_bench.threads import thread_env

#: the disk caches of the compilers below burn-cube (CuPy's NVRTC cubins, Mesa's and NVIDIA's
#: shader caches): each round's processes get their own, empty at first like burn-cube's
DRIVER_CACHES = ("CUPY_CACHE_DIR", "MESA_SHADER_CACHE_DIR", "__GL_SHADER_DISK_CACHE_PATH")
BATCH, FEATURES, CLASSES = 64, 784, 10
#: the model file of a round, as a user writes it (burn and torch forms of one MLP)
MODEL_SOURCE = f'''"""The compile suite's model, as a user's file (the edit case rewrites it)."""

FEATURES, CLASSES = {FEATURES}, {CLASSES}


def burn_model(device):
    from burn import nn

    return nn.Sequential(nn.Linear(FEATURES, 256, device=device), nn.Relu(),
                         nn.Linear(256, CLASSES, device=device))


def torch_model():
    import torch

    return torch.nn.Sequential(torch.nn.Linear(FEATURES, 256), torch.nn.ReLU(),
                               torch.nn.Linear(256, CLASSES))
'''
#: the edit, as (old, new) replacements in the source: another hidden width and activation
EDIT = (("256", "384"), ("nn.Relu()", "nn.Gelu()"), ("nn.ReLU()", "nn.GELU()"))
#: (hidden width, activation class) the source builds, before and after the edit
MODEL, EDITED = (256, "Relu"), (384, "Gelu")


@dataclass(frozen=True)
class Case:
    """One case: its name and whether it runs the edited source."""

    name: str
    edited: bool

    @property
    def model(self) -> tuple[int, str]:
        """The (hidden width, burn activation class) its processes must build."""
        return EDITED if self.edited else MODEL


#: in order within a round (a new, empty cache dir): the round's cache and model file are
#: shared by the three
CASES = (Case("cold", False), Case("warm", False), Case("edit", True))


def write_model(folder: str, edited: bool) -> str:
    """Write the model file into `folder` (edited or not); its path. Stale bytecode of an earlier
    version is removed (an edit within the same second and of the same size would pass
    Python's mtime check)."""
    source = MODEL_SOURCE
    if edited:
        for old, new in EDIT:
            source = source.replace(old, new)
    shutil.rmtree(os.path.join(folder, "__pycache__"), ignore_errors=True)
    path = os.path.join(folder, "bench_model.py")
    with open(path, "w") as f:
        f.write(source)
    return path


def _import_model(path: str) -> Any:
    """The user's model module at `path`."""
    spec = importlib.util.spec_from_file_location("bench_model", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _burn_step(backend: str, model_file: str) -> tuple[Any, tuple[int, str]]:
    import burn
    import burn.functional as F
    from burn.optim import AdamConfig

    burn.seed(0)
    device = burn.Device(backend).autodiff()
    model = _import_model(model_file).burn_model(device)
    built = (model[0].weight.shape[1], type(model[1]).__name__)  # weights are [in, out]
    optim = AdamConfig().init()
    rng = np.random.default_rng(0)
    x = burn.tensor(rng.standard_normal((BATCH, FEATURES)).astype(np.float32), device=device)
    y = burn.tensor(rng.integers(0, CLASSES, BATCH), device=device)

    def step() -> float:
        loss = F.cross_entropy(model(x), y)
        optim.step(1e-3, model, loss.backward())
        return loss.item()
    return step, built


def _torch_step(backend: str, model_file: str) -> tuple[Any, tuple[int, str]]:
    import torch

    from burn_bench.ops import torch_device
    from burn_bench.training import torch_classifier_step

    where = torch_device(torch, backend)
    torch.manual_seed(0)
    model = _import_model(model_file).torch_model().to(where)
    built = (model[0].weight.shape[0], {"ReLU": "Relu", "GELU": "Gelu"}[type(model[1]).__name__])
    optim = torch.optim.Adam(model.parameters(), lr=1e-3)
    rng = np.random.default_rng(0)
    x = torch.from_numpy(rng.standard_normal((BATCH, FEATURES)).astype(np.float32)).to(where)
    y = torch.from_numpy(rng.integers(0, CLASSES, BATCH)).to(where)
    return torch_classifier_step(model, optim, x, y), built


def child(candidate: str, backend: str, model_file: str) -> dict[str, Any]:
    """In the fresh process: import the model file, build the model, run two steps, and time
    them.

    Returns:
        `first_done` (wall clock at the end of the first step), `first_s`, `second_s`, `model`
        (the hidden width and activation built) and, under fusion, `fusion_compile_s` (the
        fused kernels' build and compile or cache-load time in the first step).
    """
    step, built = (_torch_step if candidate == "torch" else _burn_step)(backend, model_file)
    start = time.perf_counter()
    step()
    first_done, middle = time.time(), time.perf_counter()
    out: dict[str, Any] = {"first_done": first_done, "first_s": middle - start,
                           "model": list(built)}
    if candidate == "burn" and "fusion" in backend.split("+"):
        from burn.fusion import stats

        out["fusion_compile_s"] = stats().compile_s
    step()
    return {**out, "second_s": time.perf_counter() - middle}


def _spawn(candidate: str, backend: str, case: Case, folder: str, threads: int
           ) -> dict[str, Any]:
    """Run `child` in a new process over the round's model file and caches in `folder`;
    returns its figures with `to_first_step` (launch to the end of the first step, wall
    clock)."""
    env = {**thread_env(threads), "BURN_CUBE_CACHE_DIR": folder,
           **{var: os.path.join(folder, var.strip("_").lower()) for var in DRIVER_CACHES}}
    model_file = os.path.join(folder, "bench_model.py")
    launched = time.time()
    done = subprocess.run([sys.executable, "-m", "burn_bench.compile", candidate, backend,
                           model_file], env=env, capture_output=True, text=True,
                          check=False, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"compile {case.name} on {backend} ({candidate}) failed:\n"
                           f"{done.stderr.strip()[-2000:]}")
    out = json.loads(done.stdout.strip().splitlines()[-1])
    if tuple(out["model"]) != case.model:
        raise RuntimeError(f"compile {case.name} on {backend} ({candidate}) built "
                           f"{out['model']}, not the model file's {list(case.model)}")
    return {**out, "to_first_step": out["first_done"] - launched}


def _stats(values: list[float]) -> dict[str, float]:
    return {"min": min(values), "median": statistics.median(values), "max": max(values)}


def run_rows(backends: list[str], compare: list[str], rounds: int, threads: int
             ) -> list[dict[str, Any]]:
    """The compile rows of every backend: cold, warm and edit, `rounds` rounds each, torch
    (where in `compare` and installed) in its own process right after each burn process.

    Returns:
        Rows of the results schema (bench "compile", `case` naming the case, `size` the
        model's hidden width, `compile_s` the median first-step excess and, under fusion,
        `fusion_compile_s` the median time of the first step's fused kernels).
    """
    from burn_bench.suites import unavailable_reason

    torch = "torch" in compare and _has_torch()
    rows = []
    for backend in dict.fromkeys(b.replace("+autodiff", "") for b in backends):
        reason = unavailable_reason(backend)
        base: dict[str, Any] = {"bench": "compile", "backend": backend, "dtype": "float32",
                                "status": "ok", "reason": None, "kernels": None,
                                "compile_s": None, "times": {}, "ratios": {}}
        if reason is not None:
            rows += [{**base, "case": c.name, "size": c.model[0], "status": "unavailable",
                      "reason": reason} for c in CASES]
            continue
        try:
            found = _measure(backend, rounds, threads, torch)
        except (RuntimeError, ValueError, subprocess.SubprocessError) as exc:
            rows += [{**base, "case": c.name, "size": c.model[0], "status": "error",
                      "reason": str(exc)} for c in CASES]
            continue
        for case in CASES:
            runs = found[case.name]
            times = {name: _stats([r["to_first_step"] for r in got])
                     for name, got in runs.items()}
            row = {**base, "case": case.name, "size": case.model[0], "times": times,
                   "compile_s": statistics.median(
                       max(0.0, r["first_s"] - r["second_s"]) for r in runs["burn"]),
                   "ratios": {name: times["burn"]["median"] / t["median"]
                              for name, t in times.items() if name != "burn"}}
            fused = [r["fusion_compile_s"] for r in runs["burn"] if "fusion_compile_s" in r]
            if fused:
                row["fusion_compile_s"] = statistics.median(fused)
            rows.append(row)
    return rows


def _measure(backend: str, rounds: int, threads: int, torch: bool
             ) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """case -> candidate -> the figures of each round's process."""
    found: dict[str, dict[str, list[dict[str, Any]]]] = {
        c.name: {"burn": [], **({"torch": []} if torch else {})} for c in CASES}
    for _ in range(rounds):
        with tempfile.TemporaryDirectory(prefix="burn-bench-compile-") as folder:
            for case in CASES:
                write_model(folder, case.edited)
                found[case.name]["burn"].append(_spawn("burn", backend, case, folder, threads))
                if torch:
                    found[case.name]["torch"].append(
                        _spawn("torch", backend, case, folder, threads))
    return found


def _has_torch() -> bool:
    return importlib.util.find_spec("torch") is not None


def main(argv: list[str] | None = None) -> None:
    """`python -m burn_bench.compile CANDIDATE BACKEND MODEL_FILE`: one child run; prints its
    figures as JSON."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("candidate", choices=("burn", "torch"))
    parser.add_argument("backend")
    parser.add_argument("model_file")
    args = parser.parse_args(argv)
    print(json.dumps(child(args.candidate, args.backend, args.model_file)))


if __name__ == "__main__":
    main()
