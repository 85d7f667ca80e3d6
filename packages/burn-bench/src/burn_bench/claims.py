"""`burn-bench claims`: a markdown report, with PNG plots (matplotlib, extra `claims`), of what
the stored results say about Burn's claims: fusion speedup per backend and compile times. It
reads the saved results only, so it can be regenerated without re-running anything."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from burn_bench import results
from burn_bench.files import write_atomic

#: Burn's statements, in prose (paraphrased from its documentation and announcements)
FUSION_CLAIM = ("Burn: the fusion decorator fuses element-wise kernels without a performance "
                "drop against the unfused backend.")
COMPILE_CLAIM = "Burn: editing a model and re-running recompiles in under five seconds."
#: the goal set here for a warm-cache start once kernels fuse (seconds to the first step)
WARM_TARGET_S = 2.0


@dataclass(frozen=True)
class Speedup:
    """Fusion speedup of one (commit, bench, backend, dtype): unfused median / fused median."""

    commit: str
    bench: str
    backend: str
    dtype: str
    speedup: float


def load_all(results_dir: Path) -> list[dict[str, Any]]:
    """Every results file under `results_dir` (`<machine>/<commit>.json`), checked, oldest
    first by creation time.

    Raises:
        ResultSchemaError: a file does not match the schema (names it).
    """
    docs = [results.load(path) for path in sorted(results_dir.glob("*/*.json"))]
    return sorted(docs, key=lambda doc: doc["created"])


def fusion_speedups(docs: list[dict[str, Any]]) -> list[Speedup]:
    """For each measured `X+fusion` row whose `X` row was measured in the same run, the
    speedup of fusion (> 1: the fused backend is faster); compile rows are not steady-state
    times (they are in `compile_times`)."""
    found = []
    for doc in docs:
        ok = {(r["bench"], r["backend"], r["dtype"]): r for r in doc["rows"]
              if r["status"] == "ok" and r["bench"] != "compile"}
        for (bench, backend, dtype), row in ok.items():
            if "+fusion" not in backend:
                continue
            base = ok.get((bench, backend.replace("+fusion", ""), dtype))
            if base is not None:
                found.append(Speedup(doc["commit"], bench, backend, dtype,
                                     base["times"]["burn"]["median"]
                                     / row["times"]["burn"]["median"]))
    return found


@dataclass(frozen=True)
class CompileTime:
    """One compile-suite row: seconds from a fresh process's start to the end of its first
    training step (burn's and torch's medians) and what compiling added to burn's step."""

    commit: str
    threads: int
    backend: str
    case: str
    burn_s: float
    torch_s: float | None
    compile_s: float | None


def compile_times(docs: list[dict[str, Any]]) -> list[CompileTime]:
    """The measured rows of the compile suite, in file order."""
    return [CompileTime(doc["commit"], int(doc["settings"].get("threads", 1)), r["backend"],
                        r.get("case") or "-",
                        r["times"]["burn"]["median"],
                        r["times"]["torch"]["median"] if "torch" in r["times"] else None,
                        r.get("compile_s"))
            for doc in docs for r in doc["rows"]
            if r["bench"] == "compile" and r["status"] == "ok"]


def backend_status(docs: list[dict[str, Any]]) -> dict[str, str]:
    """Each backend named in the results: "present" where a row of it ran, else the latest
    reason it did not (e.g. `cuda+fusion` on a machine without a GPU)."""
    status: dict[str, str] = {}
    for doc in docs:
        for row in doc["rows"]:
            if row["status"] == "unavailable" and status.get(row["backend"]) != "present":
                status[row["backend"]] = f"not present: {row['reason']}"
            elif row["status"] == "ok":
                status[row["backend"]] = "present"
    return dict(sorted(status.items()))


def write_report(results_dir: Path, out_dir: Path) -> Path:
    """Write `claims.md` (and its plots where there is data) into `out_dir`.

    Returns:
        The markdown file's path.
    Raises:
        ResultSchemaError: a results file does not match the schema.
    """
    docs = load_all(results_dir)
    speedups, compiles = fusion_speedups(docs), compile_times(docs)
    lines = ["# Burn's claims, measured", "",
             f"From {len(docs)} results file(s) under `{results_dir}`.", "",
             "| backend | status |", "|---|---|"]
    lines += [f"| {name} | {text} |" for name, text in backend_status(docs).items()]
    lines += ["", "## Fusion", "", f"> {FUSION_CLAIM}", ""]
    if speedups:
        _plot(out_dir / "fusion.png", lambda ax: _bars(
            ax, [f"{s.bench} {s.backend} {s.dtype} @{s.commit}" for s in speedups],
            [s.speedup for s in speedups], "speedup of +fusion (> 1: faster)"))
        lines += ["![fusion speedup](fusion.png)", "",
                  "| commit | bench | backend | dtype | speedup |", "|---|---|---|---|---|"]
        lines += [f"| {s.commit} | {s.bench} | {s.backend} | {s.dtype} | {s.speedup:.2f} |"
                  for s in speedups]
    else:
        lines.append("No measurement yet: no results with both a backend and its `+fusion`.")
    lines += ["", "## Compile and recompile times", "", f"> {COMPILE_CLAIM}", ""]
    if compiles:
        _plot(out_dir / "compile.png", lambda ax: _bars(
            ax, [f"{c.backend} {c.case} {c.threads}t @{c.commit}" for c in compiles],
            [c.burn_s for c in compiles], "fresh process to end of first training step (s)"))
        lines += [
            "Seconds from a fresh process's start to the end of its first training step (MLP "
            "784-W-10, Adam): `cold` with an empty kernel cache, `warm` with the cache of an "
            "earlier run, `edit` after editing the model's source file to another hidden width "
            "and activation (warm cache of the model before the edit; before 7276fbb7b9e3 the "
            "edited model came from arguments); the goal for a warm start is "
            f"<= {WARM_TARGET_S:g} s. "
            "`compile` is what compiling or loading kernels added to burn's first step (its "
            "first step less its second), the figure Burn's claim is about (< 5 s); torch's "
            "time is the same model's in its own fresh process.", "",
            "![compile times](compile.png)", "",
            "| commit | threads | backend | case | burn (s) | torch (s) | compile (s) "
            "| compile < 5 s |", "|---|---|---|---|---|---|---|---|"]
        lines += [f"| {c.commit} | {c.threads} | {c.backend} | {c.case} | {c.burn_s:.2f} | "
                  f"{'-' if c.torch_s is None else f'{c.torch_s:.2f}'} | "
                  f"{'-' if c.compile_s is None else f'{c.compile_s:.2f}'} | "
                  f"{'-' if c.compile_s is None else 'yes' if c.compile_s < 5 else 'no'} |"
                  for c in compiles]
    else:
        lines.append("No measurement yet: no results of the compile suite.")
    return write_atomic(out_dir / "claims.md", lambda f: f.write("\n".join(lines) + "\n"))


def _bars(ax: Any, labels: list[str], values: list[float], title: str) -> None:
    ax.barh(labels, values)
    ax.set_title(title)


def _plot(path: Path, draw: Callable[[Any], None]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4))
    try:
        draw(ax)
        fig.tight_layout()
        write_atomic(path, lambda f: fig.savefig(f, format="png"), binary=True)
    finally:
        plt.close(fig)

