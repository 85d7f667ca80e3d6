"""Every example's smoke mode runs twice into its --artifact-dir (nothing lands elsewhere), and
natural mistakes (a bad flag, a missing file, an empty CSV cell) get a message naming the fix."""

from __future__ import annotations

import importlib
import logging
import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import burn

EXAMPLES = Path(__file__).resolve().parents[4] / "examples"
#: folder, package, whether it writes artifacts (and so takes --artifact-dir)
ALL = [("simple-regression", "simple_regression", True),
       ("custom-csv-dataset", "custom_csv_dataset", True),
       ("custom-image-dataset", "custom_image_dataset", True),
       ("mnist", "burn_mnist", True),
       ("modern-lstm", "modern_lstm", True),
       ("train-mlp", "train_mlp", False),
       ("custom-cube-kernel", "custom_cube_kernel", False)]


def example_main(monkeypatch: pytest.MonkeyPatch, folder: str,
                 package: str) -> Callable[[list[str]], int]:
    monkeypatch.syspath_prepend(str(EXAMPLES / folder / "src"))
    return importlib.import_module(f"{package}.__main__").main


def _untimed(out: str) -> str:
    """`out` with its elapsed-time figures ("in 0.1 s") blanked."""
    return re.sub(r"\bin \d+(\.\d+)? s\b", "in - s", out)


@pytest.fixture
def cwd(tmp_path, monkeypatch) -> Path:
    """An empty working directory: examples must write only under --artifact-dir."""
    path = tmp_path / "cwd"
    path.mkdir()
    monkeypatch.chdir(path)
    monkeypatch.setenv("BURN_DATASET_CACHE", str(tmp_path / "cache"))  # mnist: offline
    return path


@pytest.mark.parametrize(("folder", "package", "artifacts"), ALL)
def test_smoke_twice(folder, package, artifacts, tmp_path, cwd, monkeypatch, capsys,
                     caplog) -> None:
    main = example_main(monkeypatch, folder, package)
    run_dir = tmp_path / "run"
    args = ["--smoke", *(["--artifact-dir", str(run_dir)] if artifacts else [])]
    with caplog.at_level(logging.WARNING, logger="burn.train"):
        assert main(args) == 0
        first = capsys.readouterr().out
        assert main(args) == 0
        second = capsys.readouterr().out
    assert first.strip() and "nan" not in first.lower()
    assert list(cwd.iterdir()) == []
    if artifacts:
        assert (run_dir / "logs" / "train.csv").is_file()
        assert (run_dir / "training_curves.png").is_file()
        # the second run starts over, and says how to continue with the example's own flag
        assert "--resume continues it" in caplog.text and "fit(" not in caplog.text
    # seeded: the same run again (wall-clock figures aside)
    assert _untimed(first) == _untimed(second)


@pytest.mark.parametrize(("folder", "package", "artifacts"),
                         [case for case in ALL if case[0] != "custom-cube-kernel"])
def test_smoke_on_the_cpu_cube_backend(folder, package, artifacts, tmp_path, cwd, monkeypatch,
                                       capsys) -> None:
    """The examples train on the cube backend `cpu` as well (its default-device path)."""
    main = example_main(monkeypatch, folder, package)
    args = ["--smoke", *(["--artifact-dir", str(tmp_path / "run")] if artifacts else [])]
    burn.set_default_device("cpu")
    try:
        assert main(args) == 0
        assert burn.default_device() == burn.Device("cpu")
    finally:
        burn.set_default_device(None)
    out = capsys.readouterr().out
    assert out.strip() and "nan" not in out.lower()
    if artifacts:
        assert (tmp_path / "run" / "logs" / "train.csv").is_file()


@pytest.mark.parametrize(("folder", "package", "artifacts"), ALL)
def test_bad_flag_and_bad_value_exit_2(folder, package, artifacts, monkeypatch,
                                       capsys) -> None:
    main = example_main(monkeypatch, folder, package)
    with pytest.raises(SystemExit) as exit_:
        main(["--no-such-flag"])
    assert exit_.value.code == 2 and "--no-such-flag" in capsys.readouterr().err
    value_flag = "--size" if folder == "custom-cube-kernel" else "--epochs"
    with pytest.raises(SystemExit) as exit_:
        main([value_flag, "0"])
    assert exit_.value.code == 2 and f"{value_flag} must be at least 1" in capsys.readouterr().err


def test_resume_flag_continues(tmp_path, monkeypatch, capsys, caplog) -> None:
    main = example_main(monkeypatch, "custom-csv-dataset", "custom_csv_dataset")
    args = ["--rows", "200", "--artifact-dir", str(tmp_path), "--quiet"]
    assert main([*args, "--epochs", "1"]) == 0
    with caplog.at_level(logging.INFO, logger="burn.train"):
        assert main([*args, "--epochs", "2", "--resume"]) == 0
    assert "resumed from" in caplog.text and "earlier run" not in caplog.text
    assert len(pl.read_csv(tmp_path / "logs" / "train.csv")) == 2


def write_csv_with_holes(path: Path) -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=60)
    frame = pl.DataFrame({"x": x, "group": rng.choice(["a", "b"], 60), "y": 2 * x})
    lines = frame.write_csv().splitlines()
    cells = lines[4].split(",")  # data row 4 (line 5 of the file)
    cells[1] = ""  # column "group"
    lines[4] = ",".join(cells)
    cells = lines[9].split(",")
    cells[0] = ""  # column "x"
    lines[9] = ",".join(cells)
    path.write_text("\n".join(lines) + "\n")


def test_csv_empty_cell_names_line_and_column(tmp_path, monkeypatch, capsys) -> None:
    main = example_main(monkeypatch, "custom-csv-dataset", "custom_csv_dataset")
    csv_error = importlib.import_module("custom_csv_dataset.__main__").CsvError
    read_table = importlib.import_module("custom_csv_dataset.__main__").read_table
    csv = tmp_path / "holes.csv"
    write_csv_with_holes(csv)
    with pytest.raises(csv_error) as err:
        read_table(csv)
    assert isinstance(err.value, ValueError)
    assert "line 5 (data row 4)" in str(err.value) and "column 'group'" in str(err.value)
    assert "--missing drop" in str(err.value)
    # polars' reference reading: the same holes, dropped
    reference = pl.read_csv(csv)
    assert reference["group"].null_count() == 1 and reference["x"].null_count() == 1
    dropped = read_table(csv, "drop")
    assert dropped.shape == (58, 3) and dropped.equals(reference.drop_nulls())
    # the command line: an error and exit status 2, never a nan metric
    args = ["--csv", str(csv), "--target", "y", "--epochs", "1", "--quiet",
            "--artifact-dir", str(tmp_path / "run")]
    assert main(args) == 2
    captured = capsys.readouterr()
    assert "line 5" in captured.err and "rmse" not in captured.out
    assert main([*args, "--missing", "drop"]) == 0
    out = capsys.readouterr().out
    assert "rmse" in out and "nan" not in out


def test_missing_inputs_exit_2(tmp_path, monkeypatch, capsys) -> None:
    csv_main = example_main(monkeypatch, "custom-csv-dataset", "custom_csv_dataset")
    assert csv_main(["--csv", str(tmp_path / "nope.csv"), "--artifact-dir",
                     str(tmp_path / "a")]) == 2
    assert "nope.csv: no such file" in capsys.readouterr().err
    image_main = example_main(monkeypatch, "custom-image-dataset", "custom_image_dataset")
    assert image_main(["--data", str(tmp_path / "nope"), "--artifact-dir",
                       str(tmp_path / "b")]) == 2
    assert "image folder not found" in capsys.readouterr().err
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_mnist_train_size_is_honoured(tmp_path, cwd, monkeypatch, capsys) -> None:
    main = example_main(monkeypatch, "mnist", "burn_mnist")
    assert main(["--no-download", "--epochs", "1", "--quiet", "--train-size", "100",
                 "--test-size", "50", "--artifact-dir", str(tmp_path / "run")]) == 0
    out = capsys.readouterr().out
    assert "on 50 held-out images" in out and "--train-size" not in out
    rows = pl.read_csv(tmp_path / "run" / "logs" / "train.csv")
    assert len(rows) == 1
    # 100 images: 90 train (2 batches of 64), 10 validate
    assert main(["--no-download", "--epochs", "1", "--train-size", "100", "--test-size", "50",
                 "--artifact-dir", str(tmp_path / "run2")]) == 0
    out = capsys.readouterr().out
    assert "on 90 scikit-learn digits" in out and "validating on 10, testing on 50" in out
    assert main(["--no-download", "--epochs", "1", "--quiet", "--train-size", "99999",
                 "--artifact-dir", str(tmp_path / "run3")]) == 0
    assert "--train-size 99999: scikit-learn digits (8x8) has 1438 such images" in (
        capsys.readouterr().out)


def test_cube_kernel_lists_skipped_runtimes(monkeypatch, capsys) -> None:
    main = example_main(monkeypatch, "custom-cube-kernel", "custom_cube_kernel")
    module = importlib.import_module("custom_cube_kernel.__main__")
    from burn_cube.errors import RuntimeUnavailableError

    real = module.bc.runtime

    def runtime(name: str):
        if name != "cpu":
            raise RuntimeUnavailableError(f"no {name} in this test")
        return real(name)

    monkeypatch.setattr(module.bc, "runtime", runtime)
    assert main(["--smoke"]) == 0
    out = capsys.readouterr().out
    assert "runtimes that ran: cpu" in out
    skipped = [line for line in out.splitlines() if line.startswith("skipped: ")]
    assert [line.split()[1] for line in skipped] == ["wgpu", "cuda"]
    for line, name in zip(skipped, ("wgpu", "cuda"), strict=True):
        assert f"no {name} in this test" in line  # the reason
