"""Short seeded training runs that must reach a return threshold; checkpoint and resume;
evaluation; bad observations."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from burn.record import CorruptRecordError
from burn_rl.agents.dqn import DqnAgent, DqnConfig
from burn_rl.agents.ppo import PpoAgent, PpoConfig
from burn_rl.environment import make
from burn_rl.errors import CheckpointError, ObservationShapeError
from burn_rl.evaluate import evaluate
from burn_rl.exploration import LinearSchedule

FAST_DQN = DqnConfig(hidden=(64, 64), learning_rate=1e-3, batch_size=64, buffer_size=20_000,
                     learning_starts=500, train_frequency=4, gradient_steps=1,
                     target_update_interval=250, exploration=LinearSchedule(1.0, 0.05, 4_000))


def test_dqn_learns_cartpole(tmp_path: Path) -> None:
    agent = DqnAgent(make("CartPole-v1"), FAST_DQN, "numpy", seed=0)
    history = agent.learn(12_000, log_interval=2_000, artifact_dir=tmp_path)
    assert [row["env_steps"] for row in history] == [2000.0 * i for i in range(1, 7)]
    assert (tmp_path / "logs" / "train.csv").is_file()
    assert (tmp_path / "learning_curve.png").is_file()
    result = evaluate(agent, "CartPole-v1", episodes=10)
    assert result.returns.shape == (10,)
    assert result.mean >= 150, f"DQN reached {result.mean:.1f} (random policy: ~22)"


def test_ppo_learns_cartpole() -> None:
    agent = PpoAgent(make("CartPole-v1", 4), PpoConfig(), "numpy", seed=0)
    agent.learn(25_000)
    result = evaluate(agent, "CartPole-v1", episodes=10)
    assert result.mean >= 150, f"PPO reached {result.mean:.1f} (random policy: ~22)"


def test_dqn_checkpoint_resumes_exactly(tmp_path: Path) -> None:
    config = DqnConfig(hidden=(16,), batch_size=8, learning_starts=50, train_frequency=2,
                       target_update_interval=20, prioritized=True,
                       exploration=LinearSchedule(1.0, 0.1, 100))
    agent = DqnAgent(make("CartPole-v1"), config, "numpy", seed=1)
    agent.learn(200, log_interval=100)
    agent.save(tmp_path / "ckpt")
    fresh = DqnAgent(make("CartPole-v1"), config, "numpy", seed=2)
    fresh.load(tmp_path / "ckpt")
    obs = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    np.testing.assert_allclose(fresh.forward(obs), agent.forward(obs), rtol=1e-6)
    assert fresh.env_steps == agent.env_steps == 200 and len(fresh.buffer) == len(agent.buffer)
    # same RNG, buffer and optimizer state: the next updates and actions are identical
    assert fresh.update() == pytest.approx(agent.update(), rel=1e-6)
    np.testing.assert_array_equal(fresh.action(obs), agent.action(obs))
    with pytest.raises(CheckpointError, match="another agent"):
        PpoAgent(make("CartPole-v1"), PpoConfig(), "numpy").load(tmp_path / "ckpt")
    with pytest.raises(CheckpointError, match="no complete checkpoint"):
        fresh.load(tmp_path / "missing")


def test_ppo_checkpoint_round_trip(tmp_path: Path) -> None:
    config = PpoConfig(num_steps=16, normalize_observations=True, normalize_rewards=True)
    agent = PpoAgent(make("Pendulum-v1", 2), config, "numpy", seed=0)
    agent.learn(64)
    agent.save(tmp_path / "ppo")
    fresh = PpoAgent(make("Pendulum-v1", 2), config, "numpy", seed=5)
    fresh.load(tmp_path / "ppo")
    obs = np.random.default_rng(0).standard_normal((3, 3)).astype(np.float32)
    np.testing.assert_allclose(fresh.forward(obs), agent.forward(obs), rtol=1e-6)
    np.testing.assert_array_equal(fresh.action(obs), agent.action(obs))
    actions = agent.action(obs)
    assert actions.shape == (3, 1) and actions.dtype == np.float32
    assert np.all(np.abs(actions) <= 2.0)


def test_observation_that_does_not_fit_the_network() -> None:
    agent = DqnAgent(make("CartPole-v1"), DqnConfig(hidden=(8,)), "numpy")
    with pytest.raises(ObservationShapeError, match=r"got=\(2, 3\), expected=\('n', 4\)"):
        agent.forward(np.zeros((2, 3), np.float32))
    with pytest.raises(ObservationShapeError, match=r"got=\(4,\)"):
        agent.action(np.zeros(4, np.float32), deterministic=True)


@pytest.mark.parametrize(("name", "damage"), [
    ("state.json", lambda raw: raw[:len(raw) // 2]),
    ("state.json", lambda raw: b"\xff" + raw),
    ("state.json", lambda raw: raw.replace(b'"env_steps"', b'"env_stepz"')),
    ("buffer.npz", lambda raw: raw[:len(raw) // 2]),
    ("optimizer.npz", lambda raw: raw[:len(raw) // 2]),
], ids=["truncated-state", "state-not-utf8", "state-key", "truncated-buffer",
        "truncated-optimizer"])
def test_damaged_dqn_checkpoint_is_a_typed_error(tmp_path: Path, name: str, damage) -> None:
    """A damaged file of an agent's checkpoint raises a typed error naming it (CheckpointError;
    CorruptRecordError for the optimizer file): JSONDecodeError, UnicodeDecodeError, KeyError
    and BadZipFile escaped before; the networks stay as they were (the state, its entries,
    the buffer and the optimizer file are read before anything is loaded)."""
    config = DqnConfig(hidden=(8,), batch_size=8, learning_starts=20, train_frequency=2)
    agent = DqnAgent(make("CartPole-v1"), config, "numpy", seed=1)
    agent.learn(40, log_interval=100)
    agent.save(tmp_path / "ckpt")
    path = tmp_path / "ckpt" / name
    path.write_bytes(damage(path.read_bytes()))
    fresh = DqnAgent(make("CartPole-v1"), config, "numpy", seed=2)
    obs = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    before = fresh.forward(obs)
    with pytest.raises((CheckpointError, CorruptRecordError), match=name.replace(".", r"\.")):
        fresh.load(tmp_path / "ckpt")
    np.testing.assert_array_equal(fresh.forward(obs), before)
