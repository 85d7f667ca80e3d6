"""Every suite burn-bench knows, the backend specs and dtypes it accepts, and their checks.

Suites are of three kinds: "op" (a (bench, backend, dtype) grid timed against torch / numpy,
`burn_bench.ops`), "compile" (rows per backend and cache case, each in fresh processes:
`burn_bench.compile`) and "report" (the end-to-end suites with their own report text: training
steps, loader, record, vision, dqn)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass

import burn
from burn_bench.errors import UnknownNameError
from burn_bench.ops import BUILDERS


@dataclass(frozen=True)
class Suite:
    """A suite: its name, kind ("op", "compile" or "report") and what it measures."""

    name: str
    kind: str
    about: str


_REPORTS: dict[str, tuple[str, str, str | None]] = {
    # name: (module, what it measures, workload argument of `run_workload` or None for `run`)
    "dispatch-overhead": ("burn_bench.overhead", "per-op cost of a + b, 64 elements", None),
    "mlp-train-step": ("burn_bench.training", "MLP 784-256-10 training step", "mlp"),
    "lenet": ("burn_bench.training", "LeNet-5 training step", "lenet"),
    "transformer-encoder": ("burn_bench.training", "2-layer encoder training step",
                            "transformer-encoder"),
    "transformer-encoder-large": ("burn_bench.training", "6-layer d-512 encoder training "
                                  "step (the GPU target's; slow on a CPU)",
                                  "transformer-encoder-large"),
    "dataloader": ("burn_bench.loader", "image folder loader epochs (needs pillow)", None),
    "load-record": ("burn_bench.record", "105M-parameter module save / load", None),
    "vision": ("burn_bench.vision", "burn-vision ops against OpenCV (needs opencv)", None),
    "dqn-step": ("burn_bench.dqn", "DQN update cadence (needs burn-rl, gymnasium)", None),
    "fusion": ("burn_bench.fusion", "with and without fusion: tanh-GELU chain, MLP step (cpu); "
               "GELU chain and softmax / layer-norm rows on cuda where present", None),
    "startup": ("burn_bench.startup", "fresh-process import burn (and first op) vs numpy, torch",
                None),
}
#: earlier names of the report suites, still accepted
ALIASES = {"overhead": "dispatch-overhead", "mlp": "mlp-train-step", "loader": "dataloader",
           "record": "load-record"}

SUITES: dict[str, Suite] = {
    **{name: Suite(name, "op", (fn.__doc__ or "").split("\n")[0])
       for name, fn in BUILDERS.items()},
    "compile": Suite("compile", "compile", "fresh process to first training step: cold, "
                     "disk-cache hit, edited model"),
    **{name: Suite(name, "report", about) for name, (_, about, _) in _REPORTS.items()},
}

#: backend names of burn and of the backends to come; `burn.available_backends()` says which
#: are present here
KNOWN_BACKENDS = ("numpy", "cpu", "wgpu", "cuda", "rocm", "metal", "vulkan")
DECORATORS = ("autodiff", "fusion", "profile")
DTYPES = ("float32", "float64", "float16")
REFERENCES = ("torch", "numpy")


def suite(name: str, where: str = "") -> Suite:
    """The suite called `name` (or one of its earlier names).

    Raises:
        UnknownNameError: no such suite (the message lists them).
    """
    name = ALIASES.get(name, name)
    if name not in SUITES:
        raise UnknownNameError("bench", name, SUITES, where)
    return SUITES[name]


def report_runner(name: str, backends: list[str] | None = None) -> Callable[[], str]:
    """The call that runs report suite `name` and returns its text; the training steps run on
    `backends` where given (the others choose their own)."""
    module, _, workload = _REPORTS[name]

    def run() -> str:
        mod = importlib.import_module(module)
        return str(mod.run_workload(workload, backends) if workload else mod.run())
    return run


def check_backend(spec: str, where: str = "") -> str:
    """Check a device spec `name[:index][+decorator...]` names a known backend and decorators.

    Returns:
        The spec, unchanged.
    Raises:
        UnknownNameError: unknown backend or decorator (the message lists the valid ones).
    """
    head, *decorators = spec.split("+")
    name = head.split(":")[0]
    known = {*KNOWN_BACKENDS, *(info.name for info in burn.available_backends())}
    if name not in known:
        raise UnknownNameError("backend", name, known, where)
    for decorator in decorators:
        if decorator not in DECORATORS:
            raise UnknownNameError("decorator", decorator, DECORATORS, where)
    return spec


def check_names(kind: str, names: list[str], valid: tuple[str, ...], where: str = "") -> None:
    """Raise UnknownNameError for the first of `names` not in `valid`."""
    for name in names:
        if name not in valid:
            raise UnknownNameError(kind, name, valid, where)


def unavailable_reason(spec: str) -> str | None:
    """Why the device `spec` cannot be made on this machine (None: it can)."""
    name = spec.split("+")[0].split(":")[0]
    reasons = {info.name: info for info in burn.available_backends()}
    if name in reasons and not reasons[name].available:
        return reasons[name].reason or "not available"
    if name not in reasons:
        return "backend not present in this burn build"
    try:
        burn.Device(spec)
    except burn.errors.BurnError as exc:
        return str(exc)
    return None
