"""The notebook example: it runs headless top to bottom (nbclient, a fresh kernel, an empty
working directory) on the device `--device` names, its autodiff cell prints
d/dx sum(x^2 + 3x) = 2x + 3, bad flags exit 2, and the committed notebook carries no outputs."""

from __future__ import annotations

import ast
from pathlib import Path

import nbformat
import numpy as np
import pytest

EXAMPLE = Path(__file__).resolve().parents[4] / "examples" / "notebook"


@pytest.fixture
def notebook(tmp_path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.syspath_prepend(str(EXAMPLE / "src"))
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    import burn_notebook.__main__ as runner

    return runner


def test_committed_notebook_has_no_outputs() -> None:
    nb = nbformat.read(EXAMPLE / "tour.ipynb", as_version=4)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code and all(c.outputs == [] and c.execution_count is None for c in code)


@pytest.mark.parametrize("device", ["numpy", "numpy+profile"])
def test_notebook_runs_headless_on_the_device(notebook, tmp_path, device) -> None:
    outputs = notebook.execute(device)  # a failing cell raises (the cells assert too)
    assert len(outputs) == 6 and all(outputs)
    assert f"default device: {device}\n" in outputs[1]
    assert "final loss" in outputs[4] and "nan" not in "".join(outputs).lower()
    got = np.array(ast.literal_eval(",".join(outputs[2].strip().strip("[]").split())))
    assert got.shape == (3,)
    np.testing.assert_allclose(got, 2 * np.array([1.0, -2.0, 0.5]) + 3)
    assert list((tmp_path / "cwd").iterdir()) == []


@pytest.mark.parametrize(("args", "message"), [
    (["--device", "no-such-backend"], "unknown backend"),
    (["--timeout", "0"], "--timeout must be at least 1"),
    (["--no-such-flag"], "--no-such-flag"),
])
def test_bad_flags_exit_2_naming_the_flag(notebook, capsys, args, message) -> None:
    with pytest.raises(SystemExit) as exit_:
        notebook.main(args)
    assert exit_.value.code == 2 and message in capsys.readouterr().err
