"""The simple-regression example runs end to end with a few epochs."""

from __future__ import annotations

import importlib
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[4] / "examples" / "simple-regression" / "src"


def test_simple_regression_main(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.syspath_prepend(str(EXAMPLE))
    main = importlib.import_module("simple_regression.__main__").main
    assert main(["--epochs", "3", "--artifact-dir", str(tmp_path), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "reloaded predictions match: True" in out
    mse = float(out.split("test MSE: ")[1].split()[0])
    assert mse < 0.5  # the targets' variance is about 1.8
    assert (tmp_path / "model.bpk").is_file()
    assert (tmp_path / "logs" / "train.csv").is_file()
    assert (tmp_path / "checkpoints" / "latest.json").is_file()
    # resuming a finished run trains nothing more and still matches
    assert main(["--epochs", "3", "--artifact-dir", str(tmp_path), "--quiet", "--resume"]) == 0
