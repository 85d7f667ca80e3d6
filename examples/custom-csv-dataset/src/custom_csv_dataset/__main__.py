"""Train a regressor on a CSV file with the Learner: polars reads the file, a `DataframeDataset`
serves its rows and a custom Batcher maps its columns to feature / target tensors:
`python -m custom_csv_dataset [--csv FILE --target COLUMN] [--epochs N]`. Without `--csv` it
writes a synthetic house-price table first. Artifacts go to `--artifact-dir` (default
`artifacts/custom-csv-dataset`)."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

import burn
import burn.optim as optim
from burn.data import DataLoader
from burn.nn import Gelu, Linear, Module, MseLoss
from burn.train import Learner, LossMetric, RegressionOutput
from burn_dataset import DataframeDataset, train_valid_split

Row = dict[str, Any]
CITY_PREMIUM = {"centre": 1.4, "north": 1.0, "south": 0.8}


class CsvError(ValueError):
    """A CSV this example cannot train on: missing file, bad target column, empty cells."""


def read_table(csv: Path, missing: str = "error") -> pl.DataFrame:
    """The rows of `csv`, with empty cells refused or their rows dropped.

    Args:
        csv: the CSV file (a header row).
        missing: "error" (refuse empty cells) or "drop" (drop the rows holding one).
    Returns:
        The table.
    Raises:
        CsvError: the file does not exist, a cell is empty with `missing="error"` (the
            message names its line and column), or no row is left.
    """
    if not csv.is_file():
        raise CsvError(f"{csv}: no such file (--csv takes a CSV file with a header row)")
    table = pl.read_csv(csv)
    holes = table.with_row_index("_row").filter(pl.any_horizontal(pl.exclude("_row").is_null()))
    if missing == "error" and holes.height:
        first = holes.row(0, named=True)
        row = first.pop("_row")
        column = next(name for name, value in first.items() if value is None)
        raise CsvError(f"{csv} line {row + 2} (data row {row + 1}), column {column!r}: empty "
                       f"cell ({holes.height} rows have one); fill them, or pass --missing drop "
                       f"to skip those rows")
    table = table.drop_nulls()
    if table.height == 0:
        raise CsvError(f"{csv}: no row without empty cells")
    return table


def write_houses(path: Path, rows: int, seed: int) -> Path:
    """Write a synthetic house-price table (area, rooms, age, city -> price in k) to `path`:
    price = city premium * (1.8 area + 8 rooms - 0.6 age) + 40 + N(0, 10^2)."""
    rng = np.random.default_rng(seed)
    area = rng.uniform(30, 200, rows).round(1)
    rooms = np.clip(np.rint(area / 25 + rng.normal(0, 0.7, rows)), 1, 8).astype(np.int64)
    age = rng.integers(0, 80, rows)
    city = rng.choice(list(CITY_PREMIUM), rows)
    premium = np.vectorize(CITY_PREMIUM.get)(city)
    price = premium * (1.8 * area + 8 * rooms - 0.6 * age) + 40 + rng.normal(0, 10, rows)
    path.parent.mkdir(parents=True, exist_ok=True)
    pl.DataFrame({"area": area, "rooms": rooms, "age": age, "city": city,
                  "price": price.round(2)}).write_csv(path)
    return path


@dataclass(frozen=True)
class TableBatcher:
    """A `StagedBatcher` of table rows ({column: value}) into (features [n, F], targets [n, 1])
    float32 tensors: numeric columns and the target standardised with the training rows'
    statistics, string columns one-hot encoded (unseen values give all zeros).

    Build it with `fit`. Attributes:
        numeric: the numeric feature columns.
        categories: the values of each string column.
        target: the target column.
        mean, std: statistics of the numeric columns, then of the target.
    """

    numeric: tuple[str, ...]
    categories: dict[str, tuple[str, ...]]
    target: str
    mean: np.ndarray
    std: np.ndarray

    @classmethod
    def fit(cls, rows: pl.DataFrame, target: str) -> TableBatcher:
        """The batcher of the columns of `rows` (the training rows), predicting `target`.

        Raises:
            CsvError: `target` is missing or not numeric (--target names it).
        """
        if target not in rows.columns or not rows.schema[target].is_numeric():
            raise CsvError(f"target {target!r} must be a numeric column; columns are "
                             f"{dict(rows.schema)}")
        numeric = tuple(c for c, t in rows.schema.items() if c != target and t.is_numeric())
        categories = {c: tuple(sorted(rows[c].drop_nulls().unique().to_list()))
                      for c, t in rows.schema.items() if t == pl.String}
        stats = rows.select(*numeric, target).to_numpy().astype(np.float64)
        return cls(numeric, categories, target, stats.mean(0), stats.std(0) + 1e-12)

    @property
    def features(self) -> int:
        """Width of the feature vectors."""
        return len(self.numeric) + sum(len(v) for v in self.categories.values())

    def collate(self, items: list[Row]) -> tuple[np.ndarray, np.ndarray]:
        """Numpy stage: standardised numeric columns, one-hot string columns, the target."""
        values = np.array([[row[c] for c in (*self.numeric, self.target)] for row in items],
                          np.float64)
        values = ((values - self.mean) / self.std).astype(np.float32)
        one_hot = [np.array([[row[c] == v for v in vocab] for row in items], np.float32)
                   for c, vocab in self.categories.items()]
        return np.concatenate([values[:, :-1], *one_hot], axis=1), values[:, -1:]

    def to_device(self, collated: tuple[np.ndarray, np.ndarray],
                  device: burn.Device) -> tuple[burn.Tensor, burn.Tensor]:
        """Tensor stage."""
        return tuple(burn.tensor(a, device=device) for a in collated)  # type: ignore[return-value]

    def batch(self, items: list[Row], device: burn.Device) -> tuple[burn.Tensor, burn.Tensor]:
        """`to_device(collate(items), device)`."""
        return self.to_device(self.collate(items), device)

    def unscale(self, targets: np.ndarray) -> np.ndarray:
        """Standardised targets (or predictions) back in the target column's units."""
        return targets * self.std[-1] + self.mean[-1]


class Regressor(Module):
    """An MLP with GELU between layers, trained on the mean squared error.

    Args:
        sizes: input width, hidden widths, output width.
        device: where the params live (the default device when None).
    """

    def __init__(self, sizes: list[int], device: burn.Device | None = None) -> None:
        self.layers = [Linear(n_in, n_out, device=device)
                       for n_in, n_out in zip(sizes, sizes[1:], strict=False)]
        self.activation = Gelu()
        self.loss = MseLoss()

    def forward(self, x: burn.Tensor) -> burn.Tensor:
        """[n, F] features -> [n, 1] predictions."""
        for layer in self.layers[:-1]:
            x = self.activation(layer(x))
        return self.layers[-1](x)

    def train_step(self, batch: tuple[burn.Tensor, burn.Tensor]) -> RegressionOutput:
        """The loss and predictions of one (features, targets) batch (also validates)."""
        x, y = batch
        predictions = self(x)
        return RegressionOutput(self.loss(predictions, y), predictions, y)


def evaluate(model: Module, loader: DataLoader[Any],
             batcher: TableBatcher) -> dict[str, float]:
    """RMSE, MAE and R^2 of the model's predictions over `loader`, in the target's units."""
    model.eval()
    device = model.devices()[0]
    with burn.no_grad():
        pairs = [(model(x.to_device(device)).to_numpy(), y.to_numpy()) for x, y in loader]
    predictions, targets = (batcher.unscale(np.concatenate(p)) for p in zip(*pairs, strict=True))
    error = predictions - targets
    return {"rmse": float(np.sqrt(np.mean(error ** 2))), "mae": float(np.mean(np.abs(error))),
            "r2": float(1 - np.sum(error ** 2) / np.sum((targets - targets.mean()) ** 2))}


def run(csv: Path, target: str, epochs: int, artifact_dir: Path, seed: int = 0,
        batch_size: int = 64, holdout: float = 0.3, missing: str = "error",
        progress: bool = True, resume: bool = False) -> dict[str, float]:
    """Split the rows of `csv` into train, validation and test rows, fit the batcher on the
    training rows, train, evaluate on the test rows.

    Args:
        csv: the CSV file (header row; numeric and string columns).
        target: the column to predict.
        epochs: training epochs.
        artifact_dir: where the logs, checkpoints and curves go.
        seed: seed of the split, the init and the shuffles.
        batch_size: rows per batch.
        holdout: share of the rows held out, half to validate (each epoch), half to test
            (the final metrics).
        missing: "error" or "drop", see `read_table`.
        progress: show training progress and the summary.
        resume: continue from the latest checkpoint in `artifact_dir` (if any).
    Returns:
        RMSE, MAE and R^2 on the test rows.
    Raises:
        CsvError: see `read_table` and `TableBatcher.fit`.
    """
    burn.seed(seed)
    # Read eagerly: shuffled batches visit rows at random, and a lazy `from_csv` dataset
    # re-scans the file for each row outside its few cached chunks; small chunks keep each
    # random read of an in-memory frame cheap.
    table = DataframeDataset(read_table(csv, missing), chunk_size=16)
    train, rest = train_valid_split(table, holdout, seed)
    valid, test = train_valid_split(rest, 0.5, seed)
    if min(len(train), len(valid), len(test)) == 0:
        raise CsvError(f"{csv}: {len(table)} rows are too few to train, validate and test on")
    rows = pl.DataFrame(train.get_many(list(range(len(train)))), schema=table.schema)
    batcher = TableBatcher.fit(rows, target)
    if progress:
        print(f"{csv}: {len(table)} rows; features {list(batcher.numeric)} (standardised), "
              f"{list(batcher.categories)} (one-hot) -> {batcher.features} inputs; "
              f"target {target!r}; {len(train)} rows to train, {len(valid)} to validate, "
              f"{len(test)} to test", flush=True)
    train_loader = DataLoader(train, batcher, batch_size=batch_size, shuffle=True, seed=seed)
    valid_loader = DataLoader(valid, batcher, batch_size=256)
    test_loader = DataLoader(test, batcher, batch_size=256)
    learner = Learner(Regressor([batcher.features, 64, 64, 1]), optim.AdamConfig().init(),
                      3e-3, metrics=[LossMetric()], progress=progress,
                      artifact_dir=artifact_dir, resume_hint="--resume continues it")
    model = learner.fit(train_loader, valid_loader, epochs, resume=resume).model
    return evaluate(model, test_loader, batcher)


def main(argv: list[str] | None = None) -> int:
    """Command line entry point; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--csv", type=Path, help="the CSV to train on (default: generate one)")
    parser.add_argument("--target", default="price", help="the column to predict")
    parser.add_argument("--rows", type=int, default=2000, help="rows of the generated CSV")
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--artifact-dir", type=Path,
                        default=Path("artifacts/custom-csv-dataset"),
                        help="logs, checkpoints, curves, houses.csv (default: %(default)s)")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--missing", choices=("error", "drop"), default="error",
                        help="empty cells: refuse the file (default) or drop their rows")
    parser.add_argument("--quiet", action="store_true", help="no progress display")
    parser.add_argument("--resume", action="store_true", help="continue the latest checkpoint")
    parser.add_argument("--smoke", action="store_true",
                        help="a quick check: 300 generated rows, 2 epochs, no progress display")
    args = parser.parse_args(argv)
    for flag in ("rows", "epochs", "batch_size"):
        if getattr(args, flag) < 1:
            parser.error(f"--{flag.replace('_', '-')} must be at least 1")
    rows, epochs = (300, min(args.epochs, 2)) if args.smoke else (args.rows, args.epochs)
    csv = args.csv or write_houses(args.artifact_dir / "houses.csv", rows, args.seed)
    try:
        metrics = run(csv, args.target, epochs, args.artifact_dir, args.seed, args.batch_size,
                      missing=args.missing, progress=not (args.quiet or args.smoke),
                      resume=args.resume)
    except CsvError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"test {args.target}: " + ", ".join(f"{k} {v:.4g}" for k, v in metrics.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
