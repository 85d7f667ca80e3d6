"""The modern-lstm example's LstmNetwork against a PyTorch network of the same layers (LSTM,
LayerNorm, Dropout, Linear) with copied weights: outputs (eval) and parameter gradients
(dropout 0, train mode) for the four variants; the data; `--infer` without a model."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

import burn
from burn.nn.torch_adapters import load_torch_state_dict

torch.set_num_threads(1)
D = burn.Device("numpy").autodiff()
EXAMPLES = Path(__file__).resolve().parents[4] / "examples"


@pytest.fixture
def example(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.syspath_prepend(str(EXAMPLES / "modern-lstm" / "src"))
    import modern_lstm.__main__ as main_module

    return main_module


class TorchLstmNetwork(torch.nn.Module):
    """The reference: torch's LSTM, then LayerNorm, Dropout and Linear on the last step."""

    def __init__(self, d_hidden: int, num_layers: int, bidirectional: bool,
                 dropout: float) -> None:
        super().__init__()
        d_features = d_hidden * (2 if bidirectional else 1)
        self.lstm = torch.nn.LSTM(1, d_hidden, num_layers, batch_first=True,
                                  bidirectional=bidirectional, dropout=dropout)
        self.norm = torch.nn.LayerNorm(d_features)
        self.dropout = torch.nn.Dropout(dropout)
        self.head = torch.nn.Linear(d_features, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _ = self.lstm(x)
        return self.head(self.dropout(self.norm(out[:, -1])))


VARIANTS = [(1, False), (3, False), (1, True), (2, True)]  # plain, stacked, bidir, both


def _pair(example, num_layers: int, bidirectional: bool, dropout: float):
    torch.manual_seed(num_layers * 2 + bidirectional)
    ref = TorchLstmNetwork(6, num_layers, bidirectional, dropout)
    with torch.no_grad():  # non-trivial affine params for the norm
        ref.norm.weight.uniform_(0.5, 1.5)
        ref.norm.bias.uniform_(-0.5, 0.5)
    ours = example.LstmNetwork(d_hidden=6, num_layers=num_layers, bidirectional=bidirectional,
                               dropout=dropout, device=D)
    assert load_torch_state_dict(ours, ref.state_dict()).ok
    return ours, ref


@pytest.mark.filterwarnings("ignore:dropout option adds dropout")  # torch, on one layer
@pytest.mark.parametrize(("num_layers", "bidirectional"), VARIANTS)
def test_outputs_match_torch_in_eval(example, num_layers, bidirectional) -> None:
    ours, ref = _pair(example, num_layers, bidirectional, dropout=0.3)
    ours.eval()
    ref.eval()
    x, _ = example.sine_sequences(4, 7, 0.1, seed=2)
    got = ours(burn.tensor(x, device=D))
    want = ref(torch.tensor(x))
    assert got.shape == tuple(want.shape) == (4, 1) and got.dtype == burn.float32
    np.testing.assert_allclose(got.to_numpy(), want.detach().numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(("num_layers", "bidirectional"), VARIANTS)
def test_loss_gradients_match_torch(example, num_layers, bidirectional) -> None:
    ours, ref = _pair(example, num_layers, bidirectional, dropout=0.0)
    x, y = example.sine_sequences(5, 6, 0.1, seed=3)
    output = ours.train_step((burn.tensor(x, device=D), burn.tensor(y, device=D)))
    grads = output.loss.backward()
    loss_t = torch.nn.functional.mse_loss(ref(torch.tensor(x)), torch.tensor(y))
    loss_t.backward()
    assert output.loss.shape == () and output.loss.dtype == burn.float32
    np.testing.assert_allclose(output.loss.to_numpy(), loss_t.detach().numpy(), rtol=1e-5)
    twin = example.LstmNetwork(d_hidden=6, num_layers=num_layers, bidirectional=bidirectional,
                               dropout=0.0, device=D)
    assert load_torch_state_dict(twin, {k: p.grad for k, p in ref.named_parameters()}).ok
    theirs = dict(twin.named_parameters())
    for path, p in ours.named_parameters():
        grad = p.grad(grads)
        assert grad.shape == theirs[path].shape, path
        np.testing.assert_allclose(grad.to_numpy(), theirs[path].to_numpy(), rtol=1e-4,
                                   atol=1e-5, err_msg=path)


def test_sine_sequences_follow_the_wave(example) -> None:
    x, y = example.sine_sequences(50, 8, 0.0, seed=0)
    assert x.shape == (50, 8, 1) and y.shape == (50, 1)
    assert x.dtype == y.dtype == np.float32
    # without noise a window is a sampled sine: x[t+1] + x[t-1] = 2 cos(freq) x[t], and the
    # target continues that recurrence
    w = np.concatenate([x[..., 0], y], axis=1).astype(np.float64)
    ratio = (w[:, 2:] + w[:, :-2]) / (2 * w[:, 1:-1])
    mask = np.abs(w[:, 1:-1]) > 0.2
    spread = np.array([np.ptp(r[m]) for r, m in zip(ratio, mask, strict=True) if m.sum() > 1])
    assert spread.max() < 1e-4
    assert not np.allclose(example.sine_sequences(5, 8, 0.1, seed=1)[0],
                           example.sine_sequences(5, 8, 0.1, seed=2)[0])


def test_infer_without_a_model_says_to_train(example, tmp_path, capsys) -> None:
    assert example.main(["--infer", "--artifact-dir", str(tmp_path)]) == 1
    assert "train first" in capsys.readouterr().err


def test_bad_device_names_the_flag_and_backends(example, capsys) -> None:
    with pytest.raises(SystemExit) as exit_:
        example.main(["--device", "no-such-backend"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "--device" in err and "unknown backend" in err
    assert "numpy" in err  # the valid backends
