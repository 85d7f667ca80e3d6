"""Training-curve plot structure, checked through matplotlib objects (not pixels)."""

from __future__ import annotations

import numpy as np
import pytest

import burn.optim as optim
import burn.train.learner as learner_module
from burn.train import AccuracyMetric, EarlyStopping, Learner, LossMetric
from burn.train.plot import history_figure, plot_history

matplotlib = pytest.importorskip("matplotlib")

TRAIN_LOSS = [2.0, 0.3, 0.05, 0.01, 0.004]       # spans ~2.7 decades
VALID_LOSS = [1.5, 0.4, 0.08, 0.09, 0.1]         # best at epoch 3
TRAIN_ACC = [0.1, 0.5, 0.8, 0.9, 0.95]
VALID_ACC = [0.2, 0.6, 0.85, 0.83, 0.84]         # best at epoch 3
LR = [1e-2, 1e-3, 1e-4, 1e-5, 1e-6]              # train only, no best


def history() -> dict[str, list[dict[str, float]]]:
    return {
        "train": [{"epoch": e + 1, "loss": TRAIN_LOSS[e], "accuracy": TRAIN_ACC[e], "lr": LR[e],
                   "items_per_sec": 1000.0 + 300 * (-1) ** e} for e in range(5)],
        "valid": [{"epoch": e + 1, "loss": VALID_LOSS[e], "accuracy": VALID_ACC[e],
                   "items_per_sec": 5000.0 * (e % 2 + 1)} for e in range(5)],
    }


def panels(fig) -> dict[str, object]:
    return {ax.get_title(): ax for ax in fig.axes}


def line(ax, label: str):
    found = [ln for ln in ax.get_lines() if ln.get_label().startswith(label)]
    assert len(found) == 1, [ln.get_label() for ln in ax.get_lines()]
    return found[0]


def test_panels_splits_and_noisy_metrics_left_out() -> None:
    fig = history_figure(history(), higher_is_better={"accuracy": True, "lr": None})
    axes = panels(fig)
    assert sorted(axes) == ["accuracy", "loss", "lr"]  # items_per_sec left out
    for name, train, valid in (("loss", TRAIN_LOSS, VALID_LOSS),
                               ("accuracy", TRAIN_ACC, VALID_ACC)):
        ax = axes[name]
        for label, values in (("train", train), ("valid", valid)):
            xs, ys = line(ax, label).get_data()
            assert list(xs) == [1, 2, 3, 4, 5]
            np.testing.assert_allclose(ys, values)
        assert ax.get_xlabel() == "epoch"
    assert [ln.get_label() for ln in axes["lr"].get_lines()] == ["train"]  # no valid, no best


def test_log_scale_only_where_a_lower_is_better_metric_spans_decades() -> None:
    axes = panels(history_figure(history(), higher_is_better={"accuracy": True, "lr": None}))
    assert axes["loss"].get_yscale() == "log"
    assert axes["lr"].get_yscale() == "log"
    assert axes["accuracy"].get_yscale() == "linear"  # 0.1 .. 0.95, but higher is better
    narrow = {"train": [{"epoch": 1, "loss": 1.0}, {"epoch": 2, "loss": 0.2}]}  # < 1 decade
    assert panels(history_figure(narrow))["loss"].get_yscale() == "linear"
    with_zero = {"train": [{"epoch": 1, "loss": 1.0}, {"epoch": 2, "loss": 0.0}]}
    assert panels(history_figure(with_zero))["loss"].get_yscale() == "linear"


@pytest.mark.parametrize(("name", "higher", "values", "pick"), [
    ("loss", False, VALID_LOSS, np.argmin), ("accuracy", True, VALID_ACC, np.argmax)])
def test_best_epoch_marker(name, higher, values, pick) -> None:
    ax = panels(history_figure(history(), higher_is_better={name: higher}))[name]
    best = int(pick(values))
    marker = line(ax, "best valid")
    assert marker.get_marker() == "*" and marker.get_linestyle() == "None"
    assert list(marker.get_xdata()) == [best + 1]
    assert list(marker.get_ydata()) == [values[best]]
    assert f"(epoch {best + 1})" in marker.get_label()


def test_best_marker_on_train_without_valid_and_skips_nan() -> None:
    rows = [{"epoch": 1, "loss": float("nan")}, {"epoch": 2, "loss": 0.5},
            {"epoch": 3, "loss": 0.7}]
    marker = line(panels(history_figure({"train": rows}))["loss"], "best train")
    assert list(marker.get_xdata()) == [2] and list(marker.get_ydata()) == [0.5]


def test_early_stop_line_on_every_panel() -> None:
    fig = history_figure(history(), stopped_epoch=5)
    for ax in fig.axes:
        stop = line(ax, "early stop")
        assert list(stop.get_xdata()) == [5, 5] and stop.get_linestyle() == "--"
    fig = history_figure(history())
    assert not any(ln.get_label().startswith("early stop") for ax in fig.axes
                   for ln in ax.get_lines())


def test_plot_history_writes_png_or_nothing(tmp_path) -> None:
    path = plot_history(history(), tmp_path / "sub" / "curves.png", stopped_epoch=4)
    assert path == tmp_path / "sub" / "curves.png"
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert [p.name for p in path.parent.iterdir()] == ["curves.png"]  # no temp file left
    only_noisy = {"train": [{"epoch": 1, "items_per_sec": 10.0}]}
    assert plot_history(only_noisy, tmp_path / "none.png") is None
    assert not (tmp_path / "none.png").exists()


def test_learner_passes_directions_and_early_stop(tmp_path, monkeypatch) -> None:
    from test_learner import Classifier, classification_loaders

    seen: dict[str, object] = {}

    def record(history, path, **kwargs):
        seen.update(kwargs, history=history)
        return plot_history(history, path, **kwargs)

    monkeypatch.setattr(learner_module, "plot_history", record)
    train, valid = classification_loaders()
    stopper = EarlyStopping("loss", split="valid", patience=1)
    summary = Learner(Classifier(), optim.AdamConfig().init(), 0.0,
                      metrics=[LossMetric(), AccuracyMetric()], early_stopping=stopper,
                      progress=False, artifact_dir=tmp_path).fit(train, valid, 5)
    assert summary.stopped_early and summary.epochs == 2
    assert seen["stopped_epoch"] == 2
    assert seen["higher_is_better"] == {"loss": False, "accuracy": True}
    assert summary.plot is not None and summary.plot.exists()
