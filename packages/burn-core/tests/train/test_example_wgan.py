"""The wgan example: its smoke mode (seeded: the same PNGs twice, others for another seed,
nothing outside --artifact-dir), its networks against torch with copied weights, the critic's
clipping, the grid layout, the offline fallback and bad flags."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

import burn
from burn.nn.torch_adapters import load_torch_state_dict

torch.set_num_threads(1)
EXAMPLES = Path(__file__).resolve().parents[4] / "examples"
D = burn.Device("numpy").autodiff()


@pytest.fixture
def wgan(tmp_path, monkeypatch: pytest.MonkeyPatch):
    """The example's modules, offline (an empty dataset cache), run from an empty cwd."""
    monkeypatch.syspath_prepend(str(EXAMPLES / "wgan" / "src"))
    monkeypatch.setenv("BURN_DATASET_CACHE", str(tmp_path / "cache"))
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    import burn_wgan.__main__ as cli
    import burn_wgan.training as training

    return cli, training


def test_smoke_is_seeded_and_writes_only_its_artifacts(wgan, tmp_path, capsys) -> None:
    cli, _ = wgan
    runs = {}
    for name, seed in (("a", "0"), ("b", "0"), ("c", "1")):
        assert cli.main(["--smoke", "--seed", seed, "--artifact-dir", str(tmp_path / name)]) == 0
        runs[name] = capsys.readouterr().out.replace(str(tmp_path / name), "<dir>")
    assert "scikit-learn digits" in runs["a"] and "nan" not in runs["a"].lower()
    assert runs["a"] == runs["b"] != runs["c"]
    files = sorted(p.name for p in (tmp_path / "a").iterdir())
    assert files == ["losses.csv", "losses.png", "samples.png", "samples_epoch_1.png",
                     "samples_epoch_2.png"]
    read = {name: np.asarray(Image.open(tmp_path / name / "samples.png")) for name in runs}
    assert read["a"].shape == (8 * 34, 8 * 34) and read["a"].dtype == np.uint8
    assert np.array_equal(read["a"], read["b"]) and not np.array_equal(read["a"], read["c"])
    rows = (tmp_path / "a" / "losses.csv").read_text().splitlines()
    assert rows[0] == "epoch,critic_loss,generator_loss" and len(rows) == 3
    assert list((tmp_path / "cwd").iterdir()) == []


class TorchMlp(torch.nn.Module):
    """The reference of both networks: Linear layers with LeakyReLU(0.2) between them."""

    def __init__(self, widths: list[int]) -> None:
        super().__init__()
        self.layers = torch.nn.ModuleList(torch.nn.Linear(a, b)
                                          for a, b in zip(widths, widths[1:], strict=False))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers[:-1]:
            x = torch.nn.functional.leaky_relu(layer(x), 0.2)
        return self.layers[-1](x)


def test_networks_and_critic_loss_match_torch(wgan) -> None:
    from burn_wgan.model import Critic, Generator

    torch.manual_seed(0)
    ref_g, ref_c = TorchMlp([4, 16, 32, 36]), TorchMlp([36, 32, 16, 1])
    gen, critic = Generator(4, 6, (16, 32), device=D), Critic(6, (32, 16), device=D)
    assert load_torch_state_dict(gen, ref_g.state_dict()).ok
    assert load_torch_state_dict(critic, ref_c.state_dict()).ok
    rng = np.random.default_rng(0)
    z = rng.standard_normal((5, 4)).astype(np.float32)
    real = rng.uniform(-1, 1, (5, 6, 6)).astype(np.float32)
    fake = gen(burn.tensor(z, device=D))
    fake_t = torch.tanh(ref_g(torch.tensor(z))).reshape(5, 6, 6)
    assert fake.shape == (5, 6, 6) and fake.dtype == burn.float32
    np.testing.assert_allclose(fake.to_numpy(), fake_t.detach().numpy(), rtol=1e-5, atol=1e-6)
    loss = critic(fake).mean() - critic(burn.tensor(real, device=D)).mean()
    loss_t = ref_c(fake_t.flatten(1)).mean() - ref_c(torch.tensor(real).flatten(1)).mean()
    assert loss.shape == () and loss.dtype == burn.float32
    np.testing.assert_allclose(loss.to_numpy(), loss_t.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_training_clips_the_critic(wgan, tmp_path, monkeypatch) -> None:
    _, training = wgan
    critics = []
    original = training.Critic
    monkeypatch.setattr(training, "Critic",
                        lambda *a, **k: critics.append(original(*a, **k)) or critics[-1])
    images = np.random.default_rng(0).uniform(-1, 1, (64, 4, 4)).astype(np.float32)
    config = training.WganConfig(epochs=2, batch_size=16, n_critic=2, clip=0.01, samples=4)
    history = training.train(images, config, burn.Device("numpy"), tmp_path, progress=False)
    assert len(history) == 2 and all(np.isfinite(h).all() for h in history)
    params = critics[0].parameters()
    assert params and all(np.abs(p.to_numpy()).max() <= 0.01 for p in params)
    assert max(np.abs(p.to_numpy()).max() for p in params) == pytest.approx(0.01)


def test_grid_places_and_scales_each_image(wgan, tmp_path) -> None:
    _, training = wgan
    images = -np.ones((4, 2, 2), np.float32)
    images[3] = 1.0  # the last image white: bottom right cell
    training.write_grid(images, tmp_path / "g.png", cell=4)
    grid = np.asarray(Image.open(tmp_path / "g.png"))
    assert grid.shape == (12, 12) and grid.dtype == np.uint8  # 2 x (2 * 2 + 2 gap)
    assert (grid[7:11, 7:11] == 255).all() and grid.sum() == 255 * 16


@pytest.mark.parametrize(("args", "message"), [
    (["--epochs", "0"], "--epochs must be at least 1"),
    (["--clip", "0"], "--clip must be positive"),
    (["--lr", "-1"], "--lr must be positive"),
    (["--device", "no-such-backend"], "unknown backend"),
    (["--no-such-flag"], "--no-such-flag"),
])
def test_bad_flags_exit_2_naming_the_flag(wgan, capsys, args, message) -> None:
    cli, _ = wgan
    with pytest.raises(SystemExit) as exit_:
        cli.main(args)
    assert exit_.value.code == 2 and message in capsys.readouterr().err
