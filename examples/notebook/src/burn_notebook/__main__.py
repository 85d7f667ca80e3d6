"""Run `tour.ipynb` headless in a fresh kernel and print its cells' output:
`python -m burn_notebook [--device SPEC]`. The notebook's default device is `--device`
(through $BURN_DEVICE); it runs in an empty temporary directory and writes no files."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

import nbclient
import nbformat

import burn

NOTEBOOK = Path(__file__).resolve().parents[2] / "tour.ipynb"


def execute(device: str, timeout: int = 120) -> list[str]:
    """Execute every cell of the notebook with $BURN_DEVICE set to `device`.

    Returns:
        Each code cell's printed output.
    Raises:
        nbclient.exceptions.CellExecutionError: a cell failed (it names the cell).
    """
    nb = nbformat.read(NOTEBOOK, as_version=4)
    with tempfile.TemporaryDirectory() as tmp:
        client = nbclient.NotebookClient(nb, timeout=timeout, kernel_name="python3",
                                         resources={"metadata": {"path": tmp}})
        client.execute(env={**os.environ, "BURN_DEVICE": device})
    return ["".join(o.get("text", "") for o in cell.outputs)
            for cell in nb.cells if cell.cell_type == "code"]


def main(argv: list[str] | None = None) -> int:
    """Command line entry point; returns the exit status (1 when a cell fails)."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--device", type=burn.device.device_arg, default=None,
                        help="a device spec, e.g. numpy or numpy+autodiff (default: burn's)")
    parser.add_argument("--timeout", type=int, default=120, help="seconds per cell")
    parser.add_argument("--smoke", action="store_true", help="the same run (it is quick)")
    args = parser.parse_args(argv)
    if args.timeout < 1:
        parser.error(f"--timeout must be at least 1, got {args.timeout}")
    device = args.device or burn.default_device()
    try:
        outputs = execute(str(device), args.timeout)
    except nbclient.exceptions.CellExecutionError as e:
        print(f"{NOTEBOOK.name} failed:\n{e}", file=sys.stderr)
        return 1
    for k, text in enumerate(outputs, 1):
        print(f"--- code cell {k} ---\n{text.rstrip()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
