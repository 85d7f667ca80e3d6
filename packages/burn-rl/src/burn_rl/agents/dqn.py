"""DQN (Mnih et al. 2015) with double DQN, a target network (hard or soft updates), Huber
loss, n-step returns and optional prioritised replay."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

import burn
import burn.functional as F
from burn.optim import AdamConfig, clip_grad_norm_
from burn.optim.grads import to_grads_params
from burn.train.progress import ProgressDisplay
from burn_rl.agents.base import flat_observation_shape, training_device
from burn_rl.buffer import NStepAccumulator, PrioritizedReplayBuffer, ReplayBuffer
from burn_rl.checkpoint import STATE_FILE, damaged_file, load_checkpoint, save_checkpoint
from burn_rl.environment import Environment, StepResult
from burn_rl.errors import ActionSpaceError
from burn_rl.exploration import LinearSchedule, Schedule, epsilon_greedy
from burn_rl.metrics import EpisodeTracker, RlLog, RlMetrics
from burn_rl.nets import Mlp
from burn_rl.policy import check_observation


@dataclass
class DqnConfig:
    """DQN hyperparameters; the defaults are CleanRL's `dqn.py` for CartPole.

    Args:
        hidden: hidden layer sizes of the Q-network (ReLU).
        learning_rate: Adam's learning rate (Adam's epsilon is torch's 1e-8 here).
        gamma: discount factor.
        buffer_size: replay capacity.
        batch_size: transitions per gradient step.
        learning_starts: environment steps before the first gradient step.
        train_frequency: environment steps between training phases.
        gradient_steps: gradient steps per training phase.
        target_update_interval: environment steps between target updates.
        tau: target update rate: 1 copies the online network (hard update), less mixes it in
            (soft update `target = tau * online + (1 - tau) * target`).
        double: double DQN (the online network picks the next action, the target values it).
        n_step: steps of the returns.
        huber_delta: the Huber loss threshold (the TD error is squared below it).
        max_grad_norm: clip the global gradient norm (None: no clipping).
        exploration: epsilon as a function of the environment step.
        prioritized: prioritised replay instead of uniform.
        alpha: prioritisation exponent; beta: importance-sampling exponent.
    """

    hidden: tuple[int, ...] = (120, 84)
    learning_rate: float = 2.5e-4
    gamma: float = 0.99
    buffer_size: int = 10_000
    batch_size: int = 128
    learning_starts: int = 10_000
    train_frequency: int = 10
    gradient_steps: int = 1
    target_update_interval: int = 500
    tau: float = 1.0
    double: bool = True
    n_step: int = 1
    huber_delta: float = 1.0
    max_grad_norm: float | None = None
    exploration: Schedule = field(default_factory=lambda: LinearSchedule(1.0, 0.05, 250_000))
    prioritized: bool = False
    alpha: float = 0.6
    beta: float = 0.4


def dqn_targets(next_q_target: burn.Tensor, reward: burn.Tensor, discount: burn.Tensor,
                next_q_online: burn.Tensor | None = None) -> burn.Tensor:
    """The bootstrapped targets `reward + discount * V(next)` ([n]).

    Args:
        next_q_target: the target network's Q-values of the next observations, [n, actions].
        reward: [n] (n-step) rewards.
        discount: [n] gamma^k, 0 at terminal states.
        next_q_online: the online network's Q-values of the next observations: given, V is
            the target's value of the online argmax (double DQN); None: the target's max.
    """
    if next_q_online is None:
        value = next_q_target.max(1)
    else:
        value = next_q_target.gather(1, next_q_online.argmax(1).unsqueeze(1)).squeeze(1)
    return reward + discount * value


def dqn_loss(q_values: burn.Tensor, action: burn.Tensor, target: burn.Tensor,
             weight: burn.Tensor | None = None, delta: float = 1.0
             ) -> tuple[burn.Tensor, burn.Tensor]:
    """The (importance-weighted) mean Huber loss of Q(s, a) against `target`.

    Args:
        q_values: the online network's Q-values, [n, actions].
        action: the taken actions, int [n].
        target: the targets, [n] (no gradient flows into them).
        weight: importance-sampling weights [n] (None: all ones).
        delta: the Huber threshold.
    Returns:
        (the scalar loss, the TD errors Q(s, a) - target [n]).
    """
    q_taken = q_values.gather(1, action.unsqueeze(1)).squeeze(1)
    target = target.detach()
    per_item = F.huber_loss(q_taken, target, reduction="none", delta=delta)
    loss = (per_item * weight).mean() if weight is not None else per_item.mean()
    return loss, q_taken - target


class DqnAgent:
    """A DQN agent for an environment with a flat Box observation and a Discrete action space.

    It is a `Policy`: `action(obs, deterministic=False)` is epsilon-greedy at the current
    exploration rate, `deterministic=True` greedy.

    Args:
        env: the training environment (batched).
        config: the hyperparameters.
        device: the training device (made autodiff; the default device when None).
        seed: seed of the network init, exploration and replay sampling.
    Raises:
        ActionSpaceError: when the action space is not Discrete.
        ObservationShapeError: when the observation space is not flat.
    """

    kind = "DqnAgent"

    def __init__(self, env: Environment, config: DqnConfig | None = None,
                 device: burn.Device | str | None = None, seed: int = 0) -> None:
        from gymnasium import spaces

        self.config = cfg = config or DqnConfig()
        if not isinstance(env.action_space, spaces.Discrete):
            raise ActionSpaceError("DqnAgent", "DQN needs a Discrete action space",
                                   action_space=env.action_space)
        shape = flat_observation_shape("DqnAgent", env)
        self.env = env
        self.observation_shape: tuple[int, ...] = shape
        self.n_actions = int(env.action_space.n)
        self.device = training_device(device)
        burn.seed(seed, self.device)
        sizes = [shape[0], *cfg.hidden, self.n_actions]
        self.q = Mlp(sizes, "relu", self.device)
        self.target = Mlp(sizes, "relu", self.device).freeze()
        self.target.load_state_dict(self.q.state_dict())
        self.optimizer = AdamConfig(epsilon=1e-8).init()
        buffer_args: dict[str, Any] = {"seed": seed}
        self.buffer: ReplayBuffer = (
            PrioritizedReplayBuffer(cfg.buffer_size, self.observation_shape, alpha=cfg.alpha,
                                    beta=cfg.beta, **buffer_args) if cfg.prioritized
            else ReplayBuffer(cfg.buffer_size, self.observation_shape, **buffer_args))
        self.nstep = NStepAccumulator(cfg.n_step, cfg.gamma, env.num_envs)
        self.rng = np.random.default_rng(seed + 1)
        self.env_steps = 0
        self.updates = 0
        self.seed = seed

    # --- Policy ---
    def forward(self, observation: np.ndarray) -> np.ndarray:
        """Q-values [n, actions] of observations [n, *obs_shape].

        Raises:
            ObservationShapeError: when the observations do not fit the network.
        """
        obs = check_observation("DqnAgent.forward", observation, self.observation_shape)
        with burn.no_grad():
            return np.asarray(self.q(burn.tensor(obs, device=self.device)).to_numpy())

    def action(self, observation: np.ndarray, deterministic: bool = False) -> np.ndarray:
        """Greedy actions (`deterministic`), else epsilon-greedy at the current step's epsilon
        (Q-values are only computed for the rows that act greedily)."""
        epsilon = 0.0 if deterministic else self.epsilon
        return epsilon_greedy(np.asarray(observation), self.forward, self.n_actions, epsilon,
                              self.rng)

    @property
    def epsilon(self) -> float:
        """The exploration rate at the current environment step."""
        return self.config.exploration.value(self.env_steps)

    # --- learning ---
    def update(self) -> float:
        """One gradient step on a sampled batch; returns the loss.

        Raises:
            BufferNotReadyError: when the buffer holds fewer transitions than a batch.
        """
        cfg = self.config
        batch = self.buffer.sample(cfg.batch_size, self.device)
        with burn.no_grad():
            online_next = self.q(batch.next_observation) if cfg.double else None
            target = dqn_targets(self.target(batch.next_observation), batch.reward,
                                 batch.discount, online_next)
        weight = batch.weight if cfg.prioritized else None
        loss, td = dqn_loss(self.q(batch.observation), batch.action, target, weight,
                            cfg.huber_delta)
        grads = to_grads_params(loss.backward(), self.q.parameters())
        if cfg.max_grad_norm is not None:
            clip_grad_norm_(grads, cfg.max_grad_norm)
        self.optimizer.step(cfg.learning_rate, self.q, grads)
        if isinstance(self.buffer, PrioritizedReplayBuffer):
            self.buffer.update_priorities(batch.index, np.asarray(td.detach().to_numpy()))
        self.updates += 1
        return float(loss.item())

    def update_target(self) -> None:
        """Hard (tau = 1) or soft update of the target network."""
        tau = self.config.tau
        online = self.q.state_dict()
        if tau >= 1.0:
            self.target.load_state_dict(online)
        else:
            current = self.target.state_dict()
            self.target.load_state_dict({k: online[k] * tau + current[k] * (1.0 - tau)
                                         for k in online})

    def train_step(self, observation: np.ndarray) -> tuple[StepResult, list[float]]:
        """One environment step of training: act epsilon-greedily on `observation`, store the
        transition, then run the gradient steps and the target update due at this step.

        Returns:
            (the environment's step result, the losses of the gradient steps run).
        """
        cfg, n = self.config, self.env.num_envs
        action = self.action(observation)
        result = self.env.step(action)
        transition = self.nstep.push(observation, action, result.reward,
                                     result.next_observation, result.terminated,
                                     result.truncated)
        if transition is not None:
            self.buffer.add(transition)
        self.env_steps += n
        losses = []
        if self.env_steps >= cfg.learning_starts and self.env_steps % cfg.train_frequency < n:
            losses = [self.update() for _ in range(cfg.gradient_steps)]
        if self.env_steps % cfg.target_update_interval < n:
            self.update_target()
        return result, losses

    def learn(self, total_steps: int, *, log_interval: int = 1_000,
              artifact_dir: str | os.PathLike[str] | None = None,
              progress: bool | ProgressDisplay = False,
              callback: Callable[[DqnAgent, dict[str, float]], bool] | None = None,
              ) -> list[dict[str, float]]:
        """Train until `total_steps` environment steps (counted from the agent's start, so a
        resumed agent continues).

        Args:
            total_steps: the environment step to train up to.
            log_interval: environment steps per metrics row.
            artifact_dir: where `logs/train.csv` and `learning_curve.png` go (None: nowhere).
            progress: show a progress display (burn.train's, as the Learner).
            callback: called with each metrics row; returning True stops training.
        Returns:
            The metrics rows (episode_return, episode_length, loss, exploration,
            steps_per_second, env_steps).
        """
        env = self.env
        metrics = RlMetrics()
        log = RlLog(metrics, total_steps, log_interval, artifact_dir, progress)
        tracker = EpisodeTracker(env.num_envs)
        obs = env.reset(seed=self.seed + self.env_steps)
        n = env.num_envs
        try:
            while self.env_steps < total_steps:
                result, losses = self.train_step(obs)
                obs = result.observation
                metrics.episodes_done(tracker.step(result.reward, result.done))
                metrics.steps(n)
                for loss in losses:
                    metrics.record("loss", loss)
                if self.env_steps % log_interval < n:
                    metrics.record("exploration", self.epsilon)
                    row = log.write(self.env_steps)
                    if callback is not None and callback(self, row):
                        break
                else:
                    log.tick(self.env_steps)
        finally:
            log.close()
        return log.history

    # --- checkpoints ---
    def save(self, directory: str | os.PathLike[str]) -> None:
        """Checkpoint the networks, optimizer, buffer, counters and RNG states."""
        state = {"env_steps": self.env_steps, "updates": self.updates,
                 "rng": self.rng.bit_generator.state}
        save_checkpoint(directory, kind=self.kind, modules={"q": self.q, "target": self.target},
                        optimizer=self.optimizer, state=state, buffer=self.buffer.state_dict())

    def load(self, directory: str | os.PathLike[str]) -> None:
        """Resume from `save()`'s checkpoint.

        Raises:
            CheckpointError: when it is missing, incomplete, or does not fit this agent.
        """
        state, buffer = load_checkpoint(directory, kind=self.kind,
                                        modules={"q": self.q, "target": self.target},
                                        optimizer=self.optimizer,
                                        state_keys=("env_steps", "updates", "rng"))
        with damaged_file(Path(directory) / STATE_FILE):
            if buffer is not None:
                self.buffer.load_state_dict(buffer)
            self.env_steps, self.updates = int(state["env_steps"]), int(state["updates"])
            self.rng.bit_generator.state = state["rng"]
