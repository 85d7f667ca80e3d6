"""`burn.train.evaluate`: test-set metrics of a trained model, against torch."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from test_learner import Classifier, classification_loaders, learner, weights

import burn
from burn.train import AccuracyMetric, LearningRateMetric, LossMetric, evaluate


def test_evaluate_matches_torch(tmp_path) -> None:
    train, valid = classification_loaders()
    burn.seed(0)
    model = Classifier()
    trained = learner(model, tmp_path).fit(train, valid, 2).model
    model.seen.clear()
    got = evaluate(trained, valid, [LossMetric(), AccuracyMetric()])
    assert sorted(got) == ["accuracy", "loss"]
    assert model.seen and all(seen == (False, False) for seen in model.seen)  # valid_step
    x = np.concatenate([b[0].to_numpy() for b in valid])
    y = np.concatenate([b[1].to_numpy() for b in valid])
    w = weights(trained)
    logits = torch.from_numpy(x) @ torch.from_numpy(w["linear.weight"]) + torch.from_numpy(
        w["linear.bias"])
    target = torch.from_numpy(y)
    assert logits.shape == (50, 3) and target.dtype == torch.int64
    assert got["loss"] == pytest.approx(
        torch.nn.functional.cross_entropy(logits, target).item(), rel=1e-5)
    assert got["accuracy"] == pytest.approx(
        (logits.argmax(1) == target).double().mean().item(), rel=1e-12)


def test_evaluate_refuses_train_only_metrics_and_stepless_objects() -> None:
    _, valid = classification_loaders()
    with pytest.raises(ValueError, match="lr is a train-only metric"):
        evaluate(Classifier(), valid, [LearningRateMetric()])
    with pytest.raises(TypeError, match="int has no valid_step or train_step"):
        evaluate(3, valid, [LossMetric()])  # type: ignore[arg-type]
