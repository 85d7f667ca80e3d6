"""The package imports without its optional extras and without burn-core."""

import subprocess
import sys
from pathlib import Path

import pytest

import burn_dataset

SRC = str(Path(__file__).resolve().parents[1] / "src")


def test_core_import_pulls_no_optional_dependency():
    code = ("import sys, burn_dataset; "
            "bad = {'polars', 'PIL', 'pandas', 'burn'} & set(sys.modules); assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True, env={"PYTHONPATH": SRC})


def test_missing_extra_gives_install_hint():
    code = ("import sys; sys.modules['polars'] = None; import burn_dataset\n"
            "try:\n    burn_dataset.DataframeDataset\n"
            "except ImportError as e:\n    print(e)")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True, env={"PYTHONPATH": SRC}).stdout
    assert "pip install 'burn-dataset[polars]'" in out


def test_unknown_attribute():
    with pytest.raises(AttributeError, match="has no attribute 'Nope'"):
        burn_dataset.Nope  # noqa: B018
    assert burn_dataset.ImageFolderDataset.__name__ == "ImageFolderDataset"
