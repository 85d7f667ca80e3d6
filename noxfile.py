"""The project's task matrix: tests per backend, lint, typecheck.

Run `nox -s tests` for every backend, `nox -s "tests(backend='numpy')"` for one.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import nox

nox.options.sessions = ["tests", "dataset", "cube", "vision", "rl", "bench_smoke", "lint",
                        "typecheck", "xtask"]
nox.options.reuse_existing_virtualenvs = True
# uv creates the session environments and installs into them where it is installed (faster),
# virtualenv and pip otherwise.
nox.options.default_venv_backend = "uv|virtualenv"

# pip configuration -> the uv setting that means the same (uv does not read pip's config): the
# environment variable, and how uv separates several values.
PIP_TO_UV = {"find-links": ("UV_FIND_LINKS", ","), "index-url": ("UV_DEFAULT_INDEX", " "),
             "extra-index-url": ("UV_EXTRA_INDEX_URL", " "), "constraint": ("UV_CONSTRAINT", " "),
             "no-index": ("UV_NO_INDEX", " "), "cert": ("SSL_CERT_FILE", " ")}
# pip's sources of settings, the later overriding the earlier (`pip config list` key prefixes)
PIP_SCOPES = ("global", "install", ":env:")


def uv_environment() -> dict[str, str]:
    """The uv environment variables that give uv pip's configuration (`pip config list`): its
    find-links, indexes, constraints and certificate. On a machine whose pip config points at
    a local CPU build of torch, uv then installs that build instead of PyPI's CUDA one. Like
    pip, uv then picks the best version over every index (`unsafe-best-match`)."""
    try:
        listed = subprocess.run([sys.executable, "-m", "pip", "config", "list"],
                                capture_output=True, text=True, timeout=60, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    found: dict[str, tuple[int, str]] = {}
    for line in listed.splitlines():
        key, _, raw = line.partition("=")
        scope, _, name = key.rpartition(".")
        if name in PIP_TO_UV and scope in PIP_SCOPES and raw:
            rank = PIP_SCOPES.index(scope)
            if rank >= found.get(name, (-1, ""))[0]:
                found[name] = (rank, str(ast.literal_eval(raw)))
    env = {}
    for name, (_, value) in found.items():
        var, sep = PIP_TO_UV[name]
        env[var] = sep.join(value.split())
    if "UV_EXTRA_INDEX_URL" in env or "UV_FIND_LINKS" in env:
        env["UV_INDEX_STRATEGY"] = "unsafe-best-match"
    return env


# What uv gets on every install: pip's configuration (settings already in the environment win),
# and no project configuration (the root pyproject's [tool.uv] leaves torch out of the lock,
# and would leave it out of the session too).
UV_INSTALL_ENV = {var: os.environ.get(var, value)
                  for var, value in {**uv_environment(), "UV_NO_CONFIG": "1"}.items()}


def install(session: nox.Session, *args: str) -> None:
    """`session.install(*args)` with uv given pip's configuration (harmless to pip)."""
    session.install(*args, env=UV_INSTALL_ENV)



def cube_runtimes() -> list[str]:
    """burn-cube runtimes this machine has: cpu always, wgpu when a Vulkan driver is installed
    (Mesa's llvmpipe on CPU-only machines)."""
    has_vulkan = any(Path("/usr/share/vulkan/icd.d").glob("*.json"))
    return ["cpu", "wgpu"] if has_vulkan else ["cpu"]


# Backends the conformance suite runs on, each plain and under the Autodiff decorator: NumPy
# (with the whole burn-core suite) and the cube backends cpu and wgpu (wgpu needs a Vulkan
# driver: Mesa's llvmpipe on CPU-only machines). cuda needs a GPU: BURN_DEVICE=cuda pytest
# packages/burn-core/tests/conformance on a GPU machine.
BACKENDS = ["numpy", "cpu", "wgpu"]
TORCH = "torch==2.13.0"  # the reference implementation; a local CPU build
# torchvision.ops (NMS) and the torch build it was compiled against: "===" matches the version
# string exactly, so a local CPU build (2.13.0+cpu) already in the environment is replaced
TORCHVISION = ("torch===2.13.0", "torchvision==0.28.0")
TRITON = "triton==3.7.1"  # the triton PyPI's torch 2.13 depends on
# CuPy's NVRTC bindings and NVRTC itself: the cuda runtime's compile (IEEE subnormals, the disk
# cache) is tested without a GPU, since NVRTC needs none
NVRTC = ("cupy-cuda13x==14.2.0", "nvidia-cuda-nvrtc==13.5.37")
# burn-dataset: the data-loader tests use real datasets; [train]: progress, plots, system metrics;
# the examples: tests run each one's main (they bring polars, pillow, scikit-learn).
EXAMPLES = ["simple-regression", "mnist", "custom-csv-dataset", "custom-image-dataset",
            "modern-lstm", "wgan"]
# The notebook example's test executes it headless.
NOTEBOOK = ["nbclient>=0.10", "nbformat>=5.10", "ipykernel>=6.29"]
# burn-core's and burn-cube's suites run on every core through pytest-xdist (in the packages'
# test extras): on 2 cores the burn-core suite took 357 s in one process, 245 s in two.
WORKERS = ("-n", "auto")
PACKAGES = ["-e", "packages/burn-core[test,train]", "-e", "packages/burn-dataset", "-e", "xtask",
            "-e", "packages/burn-cube[wgpu]",
            *[arg for name in EXAMPLES for arg in ("-e", f"examples/{name}")]]
# What the typecheck session checks: every package's sources.
TYPED = ["packages/burn-core/src/burn", "packages/burn-cube/src", "packages/burn-dataset/src",
         "packages/burn-bench/src", "packages/burn-vision/src", "packages/burn-rl/src"]


@nox.session
@nox.parametrize("backend", BACKENDS)
def tests(session: nox.Session, backend: str) -> None:
    """burn-core on `backend`: the whole suite on numpy, the conformance suite on a cube
    backend; then the conformance suite under autodiff (and on a cube backend under
    fusion)."""
    install(session, TORCH, *PACKAGES, *NOTEBOOK)
    if backend not in ("numpy", *cube_runtimes()):
        session.error(f"{backend} needs a Vulkan driver here (apt-get install "
                      "mesa-vulkan-drivers gives Mesa's llvmpipe)")
    if backend != "numpy":
        for device in (backend, f"{backend}+autodiff", f"{backend}+fusion"):
            session.run("pytest", *WORKERS, "packages/burn-core/tests/conformance",
                        env={"BURN_DEVICE": device})
        return
    # The op table's lowerings and the cube backends' kernels run on every runtime here.
    session.run("pytest", *WORKERS, "packages/burn-core/tests",
                env={"BURN_DEVICE": backend, "BURN_CUBE_RUNTIMES": ",".join(cube_runtimes())})
    session.run("pytest", *WORKERS, "packages/burn-core/tests/conformance",
                env={"BURN_DEVICE": f"{backend}+autodiff"})
    # Under the Profile decorator every op is checked against the op table's shape and dtype
    # rules as it runs, and the session fails unless every op of the table ran.
    session.run("pytest", "packages/burn-core/tests/conformance",
                env={"BURN_DEVICE": f"{backend}+profile", "BURN_OP_COVERAGE": "1"})


@nox.session
def dataset(session: nox.Session) -> None:
    """burn-dataset's tests (the package stands alone: no burn-core)."""
    install(session, "-e", "packages/burn-dataset[test]")
    session.run("pytest", "packages/burn-dataset/tests")


@nox.session
def rl(session: nox.Session) -> None:
    """burn-rl's tests (losses against torch, short seeded gymnasium runs) and the ppo-agent
    example's smoke run; one BLAS thread, the networks are small."""
    install(session, TORCH, "-e", "packages/burn-core[train]", "-e", "packages/burn-rl[test]",
                    "-e", "examples/ppo-agent")
    session.run("pytest", "packages/burn-rl/tests", env={"OPENBLAS_NUM_THREADS": "1"})


@nox.session
def vision(session: nox.Session) -> None:
    """burn-vision's tests against OpenCV, scikit-image, torch and torchvision.ops: the NumPy
    fast and default paths and the burn-cube kernels on cpu and wgpu."""
    # torchvision's compiled ops (nms) load only against the torch build its wheel was built
    # for: PyPI's, not a local CPU build that pip's find-links may offer (that one lacks the
    # CUDA libraries torchvision's _C.so links; PyPI's build runs on the CPU all the same).
    session.install(*TORCHVISION, env={**UV_INSTALL_ENV, "UV_FIND_LINKS": "",
                                       "PIP_FIND_LINKS": "", "PIP_CONFIG_FILE": os.devnull})
    install(session, "-e", "packages/burn-core", "-e", "packages/burn-cube[wgpu]",
            "-e", "packages/burn-vision[test]")
    session.run("pytest", "packages/burn-vision/tests")


@nox.session
def cube(session: nox.Session) -> None:
    """burn-cube's kernel suite on every runtime this machine has: cpu always, wgpu when a
    Vulkan driver is installed (Mesa's llvmpipe on CPU-only machines); the suite prints the list."""
    # torch: the cpu runtime's private-libgomp test loads torch's libgomp first; triton (what
    # PyPI's torch brings): the test that importing it after llvmpipe started is safe; NVRTC:
    # test_nvrtc.py
    install(session, "-e", "packages/burn-cube[wgpu,test]", TORCH, TRITON, *NVRTC)
    runtimes = cube_runtimes()
    if "wgpu" not in runtimes:
        session.warn("no Vulkan driver: wgpu is not tested (apt-get install mesa-vulkan-drivers)")
    session.run("pytest", *WORKERS, "packages/burn-cube/tests",
                env={"BURN_CUBE_RUNTIMES": ",".join(runtimes)})


@nox.session
def lint(session: nox.Session) -> None:
    """ruff over the whole workspace."""
    install(session, "ruff==0.17.6")
    session.run("ruff", "check", ".")


@nox.session
def typecheck(session: nox.Session) -> None:
    """mypy over every package (burn-dataset's polars and pillow come with the examples)."""
    install(session, "mypy==2.4.1", TORCH, *PACKAGES, "-e", "packages/burn-cube[wgpu]",
                    "-e", "packages/burn-bench", "-e", "packages/burn-vision")
    session.run("mypy", *TYPED)


# Every library package, installed for the xtask tests (they import each to read __version__).
LIBRARIES = [arg for name in ("burn-core", "burn-cube", "burn-dataset", "burn-rl", "burn-vision",
                              "burn-bench") for arg in ("-e", f"packages/{name}")]


@nox.session
def xtask(session: nox.Session) -> None:
    """xtask's own tests: workspace lists, version bumps, exit statuses, `python -m xtask`,
    `validate` on a small workspace (so ruff and mypy too)."""
    install(session, "ruff==0.17.6", "mypy==2.4.1", "pytest-xdist>=3", TORCH, *LIBRARIES, "-e",
            "xtask")
    session.run("pytest", "xtask/tests", "-p", "no:cacheprovider")


@nox.session
def examples(session: nox.Session) -> None:
    """Every example of the workspace (not the excluded ones) in its smoke mode, through
    `xtask examples --run-all` (not in the default sessions: the tests session runs most)."""
    install(session, TORCH, "-e", "packages/burn-cube[wgpu]", *LIBRARIES, "-e", "xtask",
                    *[arg for path in sorted(Path("examples").iterdir())
                      if (path / "pyproject.toml").is_file() for arg in ("-e", str(path))])
    session.run("python", "-m", "xtask", "examples", "--run-all")


@nox.session
def build(session: nox.Session) -> None:
    """`xtask build`: wheel + sdist per package into dist/, each wheel checked in a fresh venv
    (not in the default sessions: it downloads each package's dependencies)."""
    install(session, "-e", "xtask")
    session.run("python", "-m", "xtask", "build")


@nox.session
def bench_smoke(session: nox.Session) -> None:
    """burn-bench's tests: every op suite at tiny sizes against torch and numpy, the command
    line, results schema, benchmarks.toml, asv module, claims report and the training steps
    (in CI, with the cube backend `cpu`, and `wgpu` for the fusion suite's GPU-device
    report; `burn-bench run --profile full` runs the full suites)."""
    install(session, TORCH, "pytest", "-e", "packages/burn-core",
            "-e", "packages/burn-cube[wgpu]", "-e", "packages/burn-bench[claims]")
    session.run("pytest", "packages/burn-bench/tests", "-p", "no:cacheprovider")
