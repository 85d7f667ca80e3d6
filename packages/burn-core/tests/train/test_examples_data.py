"""The data examples (mnist, custom-csv-dataset, custom-image-dataset) run end to end with a
couple of epochs on tiny data; MNIST is kept offline with an empty or hand-made cache."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path

import numpy as np
import polars as pl
import pytest

EXAMPLES = Path(__file__).resolve().parents[4] / "examples"


def example_main(monkeypatch: pytest.MonkeyPatch, folder: str,
                 package: str) -> Callable[[list[str]], int]:
    """The `main` of `examples/<folder>/src/<package>/__main__.py`."""
    monkeypatch.syspath_prepend(str(EXAMPLES / folder / "src"))
    return importlib.import_module(f"{package}.__main__").main


def number_after(text: str, label: str) -> float:
    """The number printed right after `label` in `text`."""
    return float(text.split(label)[1].split()[0].rstrip(","))


def test_mnist_offline_falls_back_to_digits(tmp_path, monkeypatch, capsys) -> None:
    pytest.importorskip("sklearn")
    cache = tmp_path / "cache"
    monkeypatch.setenv("BURN_DATASET_CACHE", str(cache))
    main = example_main(monkeypatch, "mnist", "burn_mnist")
    assert main(["--no-download", "--epochs", "2", "--artifact-dir", str(tmp_path / "run"),
                 "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "MNIST is not available" in out
    assert str(cache / "mnist") in out and "BURN_DATASET_CACHE" in out
    assert "t10k-images-idx3-ubyte.gz" in out
    assert "Falling back to scikit-learn's 8x8 digits" in out
    assert "data: scikit-learn digits (8x8)" in out
    assert number_after(out, "test accuracy:") > 0.5  # chance is 0.1
    assert (tmp_path / "run" / "logs" / "valid.csv").is_file()


def test_mnist_cnn_reads_cached_idx_files(tmp_path, monkeypatch, capsys) -> None:
    from burn_dataset.source import write_idx

    rng = np.random.default_rng(0)
    root = tmp_path / "cache" / "mnist"
    root.mkdir(parents=True)
    for prefix, n in (("train", 256), ("t10k", 64)):
        labels = rng.integers(0, 10, n).astype(np.uint8)
        images = rng.integers(0, 60, (n, 28, 28)).astype(np.uint8)
        images[np.arange(n), 2 * labels + 4] = 255  # class k: a bright row at 2k + 4
        write_idx(root / f"{prefix}-images-idx3-ubyte.gz", images)
        write_idx(root / f"{prefix}-labels-idx1-ubyte", labels)
    monkeypatch.setenv("BURN_DATASET_CACHE", str(tmp_path / "cache"))
    main = example_main(monkeypatch, "mnist", "burn_mnist")
    assert main(["--model", "cnn", "--no-download", "--epochs", "2", "--train-size", "200",
                 "--artifact-dir", str(tmp_path / "run"), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "not available" not in out
    assert "data: MNIST" in out and "on 64 held-out images" in out
    assert number_after(out, "test accuracy:") > 0.3


def test_custom_csv_dataset_generated(tmp_path, monkeypatch, capsys) -> None:
    main = example_main(monkeypatch, "custom-csv-dataset", "custom_csv_dataset")
    assert main(["--rows", "500", "--epochs", "4", "--artifact-dir", str(tmp_path),
                 "--quiet"]) == 0
    out = capsys.readouterr().out
    assert (tmp_path / "houses.csv").is_file()
    assert number_after(out, "r2") > 0.8
    assert number_after(out, "rmse") < 40  # the price's spread is about 90


def test_custom_csv_dataset_given_file(tmp_path, monkeypatch, capsys) -> None:
    rng = np.random.default_rng(1)
    x = rng.normal(size=400)
    group = rng.choice(["a", "b"], 400)
    csv = tmp_path / "given.csv"
    pl.DataFrame({"x": x, "group": group, "y": 2 * x + 3 * (group == "a")}).write_csv(csv)
    main = example_main(monkeypatch, "custom-csv-dataset", "custom_csv_dataset")
    assert main(["--csv", str(csv), "--target", "y", "--epochs", "8", "--artifact-dir",
                 str(tmp_path / "run"), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "test y:" in out and number_after(out, "r2") > 0.9
    batcher_type = importlib.import_module("custom_csv_dataset.__main__").TableBatcher
    batcher = batcher_type.fit(pl.read_csv(csv), "y")
    features, targets = batcher.collate([{"x": 0.0, "group": "c", "y": 1.0}])
    assert features.shape == (1, 3) and features[0, 1:].tolist() == [0.0, 0.0]
    with pytest.raises(ValueError, match="numeric"):
        batcher_type.fit(pl.read_csv(csv), "group")


@pytest.mark.parametrize("worker_type", ["thread", "process"])
def test_custom_image_dataset(tmp_path, monkeypatch, capsys, worker_type) -> None:
    main = example_main(monkeypatch, "custom-image-dataset", "custom_image_dataset")
    assert main(["--per-class", "40", "--epochs", "3", "--workers", "2", "--worker-type",
                 worker_type, "--artifact-dir", str(tmp_path), "--quiet"]) == 0
    out = capsys.readouterr().out
    for shape in ("circle", "square", "triangle"):
        assert len(list((tmp_path / "shapes" / shape).glob("*.png"))) == 40
    assert "on 18 images" in out  # 30% of 120 held out, half of them to test
    assert number_after(out, "test accuracy:") > 0.5  # chance is 1/3
