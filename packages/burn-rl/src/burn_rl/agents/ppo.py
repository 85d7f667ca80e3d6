"""PPO (Schulman et al. 2017): vectorised rollouts, GAE, the clipped surrogate objective, value
clipping and an entropy bonus, for discrete (categorical) and continuous (Gaussian) actions."""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import burn
import burn.functional as F
from burn.nn import Module, Param
from burn.optim import AdamConfig, clip_grad_norm_
from burn.optim.grads import to_grads_params
from burn.train.progress import ProgressDisplay
from burn_rl.agents.base import flat_observation_shape, training_device
from burn_rl.checkpoint import STATE_FILE, damaged_file, load_checkpoint, save_checkpoint
from burn_rl.environment import Environment
from burn_rl.errors import ActionSpaceError
from burn_rl.metrics import EpisodeTracker, RlLog, RlMetrics
from burn_rl.nets import Mlp
from burn_rl.normalize import RunningMeanStd
from burn_rl.policy import check_observation

_LOG_2PI = math.log(2.0 * math.pi)


def _maximum(a: burn.Tensor, b: burn.Tensor) -> burn.Tensor:
    """Elementwise max of two tensors (torch.maximum; burn-core has no binary max)."""
    return burn.where(a >= b, a, b)


@dataclass
class PpoConfig:
    """PPO hyperparameters; the defaults are CleanRL's `ppo.py` for CartPole.

    Args:
        hidden: hidden sizes of the actor and of the critic (tanh).
        learning_rate: Adam's learning rate, annealed linearly to 0 when `anneal_lr`.
        anneal_lr: anneal the learning rate over the run.
        num_steps: steps per environment per rollout.
        gamma: discount factor; gae_lambda: GAE's lambda.
        num_minibatches: minibatches per epoch; update_epochs: epochs per rollout.
        clip_coef: the policy ratio clip; clip_vloss: clip the value loss too (same coef).
        ent_coef: entropy bonus; vf_coef: value loss weight.
        max_grad_norm: global gradient norm clip.
        normalize_advantages: per-minibatch advantage normalisation.
        normalize_observations, normalize_rewards: running normalisation (CleanRL's
            continuous-action wrappers); rewards are divided by the std of the discounted
            return.
        init_log_std: initial log std of Gaussian actions.
    """

    hidden: tuple[int, ...] = (64, 64)
    learning_rate: float = 2.5e-4
    anneal_lr: bool = True
    num_steps: int = 128
    gamma: float = 0.99
    gae_lambda: float = 0.95
    num_minibatches: int = 4
    update_epochs: int = 4
    clip_coef: float = 0.2
    clip_vloss: bool = True
    ent_coef: float = 0.01
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    normalize_advantages: bool = True
    normalize_observations: bool = False
    normalize_rewards: bool = False
    init_log_std: float = 0.0


def gae(rewards: np.ndarray, values: np.ndarray, dones: np.ndarray, last_value: np.ndarray,
        gamma: float, lam: float) -> tuple[np.ndarray, np.ndarray]:
    """Generalised advantage estimation over a rollout of T steps of N environments.

    A_t = delta_t + gamma * lam * (1 - done_t) * A_{t+1}, with
    delta_t = r_t + gamma * (1 - done_t) * V_{t+1} - V_t, V_T = `last_value`. `done_t` marks
    the episode ending at step t (a truncated episode's last reward should already hold the
    bootstrapped value of its final observation).

    Args:
        rewards, values, dones: [T, N].
        last_value: [N], the value of the observation after the rollout.
        gamma: discount; lam: GAE lambda.
    Returns:
        (advantages, returns = advantages + values), both [T, N] float32.
    """
    steps = len(rewards)
    advantages = np.zeros_like(values, dtype=np.float32)
    running = np.zeros(values.shape[1:], np.float32)
    for t in reversed(range(steps)):
        next_value = last_value if t == steps - 1 else values[t + 1]
        alive = 1.0 - dones[t]
        delta = rewards[t] + gamma * next_value * alive - values[t]
        running = delta + gamma * lam * alive * running
        advantages[t] = running
    return advantages, (advantages + values).astype(np.float32)


def ppo_loss(new_log_prob: burn.Tensor, old_log_prob: burn.Tensor, advantage: burn.Tensor,
             new_value: burn.Tensor, old_value: burn.Tensor, returns: burn.Tensor,
             entropy: burn.Tensor, *, clip_coef: float = 0.2, clip_vloss: bool = True,
             ent_coef: float = 0.01, vf_coef: float = 0.5
             ) -> tuple[burn.Tensor, dict[str, burn.Tensor]]:
    """The PPO loss (CleanRL's form): clipped policy loss - ent_coef * entropy +
    vf_coef * value loss, the value loss 0.5 * max((V - R)^2, (V_clip - R)^2) when clipped.

    Args:
        new_log_prob, old_log_prob, advantage, new_value, old_value, returns, entropy: [n].
        clip_coef, clip_vloss, ent_coef, vf_coef: as `PpoConfig`.
    Returns:
        (the scalar loss, {"policy_loss", "value_loss", "entropy", "approx_kl",
        "clip_fraction"} as scalar tensors).
    """
    log_ratio = new_log_prob - old_log_prob
    ratio = log_ratio.exp()
    pg = _maximum(-advantage * ratio,
                      -advantage * ratio.clamp(1.0 - clip_coef, 1.0 + clip_coef)).mean()
    unclipped = (new_value - returns).square()
    if clip_vloss:
        clipped = old_value + (new_value - old_value).clamp(-clip_coef, clip_coef)
        v_loss = 0.5 * _maximum(unclipped, (clipped - returns).square()).mean()
    else:
        v_loss = 0.5 * unclipped.mean()
    ent = entropy.mean()
    loss = pg - ent_coef * ent + vf_coef * v_loss
    with burn.no_grad():
        stats = {"policy_loss": pg.detach(), "value_loss": v_loss.detach(), "entropy": ent.detach(),
                 "approx_kl": ((ratio - 1.0) - log_ratio).mean().detach(),
                 "clip_fraction": ((ratio - 1.0).abs() > clip_coef).float().mean()}
    return loss, stats


class ActorCritic(Module):
    """Separate actor and critic MLPs (tanh). Discrete actions: the actor gives logits;
    continuous ones: the Gaussian mean, with a learned state-independent log std.

    Args:
        obs_dim: observation size.
        action_dim: number of actions (discrete) or action size (continuous).
        continuous: Gaussian actions.
        hidden: hidden sizes.
        init_log_std: initial log std (continuous).
        device: where the params live.
    """

    def __init__(self, obs_dim: int, action_dim: int, continuous: bool,
                 hidden: tuple[int, ...] = (64, 64), init_log_std: float = 0.0,
                 device: burn.Device | str | None = None) -> None:
        self.continuous = continuous
        self.actor = Mlp([obs_dim, *hidden, action_dim], "tanh", device)
        self.critic = Mlp([obs_dim, *hidden, 1], "tanh", device)
        self.log_std = (Param(burn.full((action_dim,), init_log_std, device=device))
                        if continuous else None)

    def forward(self, x: burn.Tensor) -> tuple[burn.Tensor, burn.Tensor]:
        """(actor output [n, action_dim], value [n])."""
        return self.actor(x), self.critic(x).squeeze(1)

    def evaluate(self, x: burn.Tensor, action: burn.Tensor
                 ) -> tuple[burn.Tensor, burn.Tensor, burn.Tensor]:
        """(log-probability of `action` [n], entropy [n], value [n])."""
        out, value = self(x)
        if self.log_std is None:
            log_p = F.log_softmax(out, 1)
            taken = log_p.gather(1, action.unsqueeze(1)).squeeze(1)
            entropy = -(log_p.exp() * log_p).sum(1)
            return taken, entropy, value
        log_std = self.log_std.unsqueeze(0)
        z = (action - out) * (-log_std).exp()
        log_prob = (-0.5 * z.square() - log_std - 0.5 * _LOG_2PI).sum(1)
        entropy = (log_std + 0.5 * (1.0 + _LOG_2PI)).sum(1).expand(out.shape[0])
        return log_prob, entropy, value


class PpoAgent:
    """A PPO agent for a flat Box observation and a Discrete or Box action space; a `Policy`
    (`action(obs, deterministic)` samples, or takes the mode).

    Args:
        env: the training environment (its num_envs sub-environments give the rollouts).
        config: the hyperparameters.
        device: the training device (made autodiff; the default device when None).
        seed: seed of the init, action sampling and minibatch shuffles.
    Raises:
        ActionSpaceError: for an action space that is neither Discrete nor a flat Box.
    """

    kind = "PpoAgent"

    def __init__(self, env: Environment, config: PpoConfig | None = None,
                 device: burn.Device | str | None = None, seed: int = 0) -> None:
        from gymnasium import spaces

        self.config = cfg = config or PpoConfig()
        space = env.action_space
        if isinstance(space, spaces.Discrete):
            self.continuous, action_dim = False, int(space.n)
        elif isinstance(space, spaces.Box) and len(space.shape) == 1:
            self.continuous, action_dim = True, int(space.shape[0])
            self.low, self.high = space.low.astype(np.float32), space.high.astype(np.float32)
        else:
            raise ActionSpaceError("PpoAgent", "PPO needs a Discrete or flat Box action space",
                                   action_space=space)
        shape = flat_observation_shape("PpoAgent", env)
        self.env = env
        self.observation_shape: tuple[int, ...] = shape
        self.device = training_device(device)
        burn.seed(seed, self.device)
        self.model = ActorCritic(shape[0], action_dim, self.continuous, cfg.hidden,
                                 cfg.init_log_std, self.device)
        self.optimizer = AdamConfig(epsilon=1e-5).init()
        self.obs_rms = RunningMeanStd(self.observation_shape)
        self.ret_rms = RunningMeanStd(())
        self.rng = np.random.default_rng(seed + 1)
        self.env_steps = 0
        self.seed = seed

    # --- Policy ---
    def _prepare(self, observation: np.ndarray, update: bool = False) -> np.ndarray:
        obs = check_observation("PpoAgent", observation, self.observation_shape)
        if not self.config.normalize_observations:
            return obs
        if update:
            self.obs_rms.update(obs)
        return self.obs_rms.normalize(obs, clip=10.0)

    def _outputs(self, obs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        with burn.no_grad():
            out, value = self.model(burn.tensor(obs, device=self.device))
            return np.asarray(out.to_numpy()), np.asarray(value.to_numpy())

    def forward(self, observation: np.ndarray) -> np.ndarray:
        """Logits (discrete) or Gaussian means (continuous), [n, action_dim]."""
        return self._outputs(self._prepare(observation))[0]

    def _sample(self, out: np.ndarray, deterministic: bool) -> tuple[np.ndarray, np.ndarray]:
        """(actions, their log-probabilities) from the actor outputs."""
        if self.continuous:
            log_std = np.asarray(self.model.log_std.to_numpy())  # type: ignore[union-attr]
            action = out if deterministic else (
                out + np.exp(log_std) * self.rng.standard_normal(out.shape).astype(np.float32))
            z = (action - out) / np.exp(log_std)
            log_prob = (-0.5 * z ** 2 - log_std - 0.5 * _LOG_2PI).sum(1)
            return action.astype(np.float32), log_prob.astype(np.float32)
        z = out - out.max(1, keepdims=True)
        log_p = z - np.log(np.exp(z).sum(1, keepdims=True))
        if deterministic:
            action = log_p.argmax(1)
        else:
            u = self.rng.random((len(out), 1))
            action = np.minimum((np.exp(log_p).cumsum(1) < u).sum(1), out.shape[1] - 1)
        return action.astype(np.int64), log_p[np.arange(len(out)), action].astype(np.float32)

    def _env_action(self, action: np.ndarray) -> np.ndarray:
        return np.clip(action, self.low, self.high) if self.continuous else action

    def action(self, observation: np.ndarray, deterministic: bool = False) -> np.ndarray:
        """Actions for observations [n, *obs_shape] (continuous ones clipped to the space)."""
        return self._env_action(self._sample(self.forward(observation), deterministic)[0])

    # --- learning ---
    def learn(self, total_steps: int, *, log_interval: int | None = None,
              artifact_dir: str | os.PathLike[str] | None = None,
              progress: bool | ProgressDisplay = False,
              callback: Callable[[PpoAgent, dict[str, float]], bool] | None = None,
              ) -> list[dict[str, float]]:
        """Train until `total_steps` environment steps: rollouts of num_steps x num_envs, then
        `update_epochs` epochs of minibatch updates.

        Args:
            total_steps: the environment step to train up to.
            log_interval: environment steps per metrics row (default: one rollout).
            artifact_dir: where `logs/train.csv` and `learning_curve.png` go (None: nowhere).
            progress: show a progress display.
            callback: called with each metrics row; returning True stops training.
        Returns:
            The metrics rows.
        """
        cfg, env = self.config, self.env
        n, steps = env.num_envs, cfg.num_steps
        batch = n * steps
        metrics = RlMetrics()
        log = RlLog(metrics, total_steps, log_interval or batch, artifact_dir, progress)
        tracker = EpisodeTracker(n)
        raw_obs = env.reset(seed=self.seed + self.env_steps)
        discounted = np.zeros(n, np.float64)
        start_steps = self.env_steps
        try:
            while self.env_steps < total_steps:
                frac = 1.0 - (self.env_steps - start_steps) / max(1, total_steps - start_steps)
                lr = cfg.learning_rate * (frac if cfg.anneal_lr else 1.0)
                obs_buf = np.zeros((steps, n, *self.observation_shape), np.float32)
                act_buf: list[np.ndarray] = []
                logp_buf = np.zeros((steps, n), np.float32)
                val_buf = np.zeros((steps, n), np.float32)
                rew_buf = np.zeros((steps, n), np.float32)
                done_buf = np.zeros((steps, n), np.float32)
                obs = self._prepare(raw_obs, update=True)
                for t in range(steps):
                    out, value = self._outputs(obs)
                    action, log_prob = self._sample(out, False)
                    result = env.step(self._env_action(action))
                    metrics.episodes_done(tracker.step(result.reward, result.done))
                    reward = self._scale_rewards(result.reward, result.done, discounted)
                    if result.truncated.any():  # bootstrap a time limit from its last state
                        cut = result.truncated & ~result.terminated
                        final = self._prepare(result.next_observation[cut])
                        reward[cut] += cfg.gamma * self._outputs(final)[1]
                    obs_buf[t], logp_buf[t], val_buf[t] = obs, log_prob, value
                    act_buf.append(action)
                    rew_buf[t], done_buf[t] = reward, result.done
                    raw_obs = result.observation
                    obs = self._prepare(raw_obs, update=True)
                    self.env_steps += n
                    metrics.steps(n)
                    log.tick(self.env_steps)
                advantages, returns = gae(rew_buf, val_buf, done_buf, self._outputs(obs)[1],
                                          cfg.gamma, cfg.gae_lambda)
                self._update(lr, obs_buf.reshape(batch, -1), np.concatenate(act_buf),
                             logp_buf.ravel(), advantages.ravel(), returns.ravel(),
                             val_buf.ravel(), metrics)
                if self.env_steps % log.interval < batch:
                    row = log.write(self.env_steps)
                    if callback is not None and callback(self, row):
                        break
        finally:
            log.close()
        return log.history

    def _scale_rewards(self, reward: np.ndarray, done: np.ndarray,
                       discounted: np.ndarray) -> np.ndarray:
        """Rewards divided by the running std of the discounted return (when enabled)."""
        if not self.config.normalize_rewards:
            return reward.astype(np.float32)
        discounted *= self.config.gamma
        discounted += reward
        self.ret_rms.update(discounted)
        discounted[done] = 0.0
        return (reward / np.sqrt(self.ret_rms.var + 1e-8)).astype(np.float32)

    def _update(self, lr: float, obs: np.ndarray, actions: np.ndarray, old_log_prob: np.ndarray,
                advantages: np.ndarray, returns: np.ndarray, old_values: np.ndarray,
                metrics: RlMetrics) -> None:
        cfg, dev = self.config, self.device
        size = len(obs)
        minibatch = max(1, size // cfg.num_minibatches)
        for _ in range(cfg.update_epochs):
            order = self.rng.permutation(size)
            for start in range(0, size, minibatch):
                idx = order[start:start + minibatch]
                adv = advantages[idx]
                if cfg.normalize_advantages and len(idx) > 1:
                    adv = (adv - adv.mean()) / (adv.std(ddof=1) + 1e-8)
                log_prob, entropy, value = self.model.evaluate(
                    burn.tensor(obs[idx], device=dev), burn.tensor(actions[idx], device=dev))
                loss, stats = ppo_loss(
                    log_prob, burn.tensor(old_log_prob[idx], device=dev),
                    burn.tensor(adv.astype(np.float32), device=dev), value,
                    burn.tensor(old_values[idx], device=dev),
                    burn.tensor(returns[idx], device=dev), entropy, clip_coef=cfg.clip_coef,
                    clip_vloss=cfg.clip_vloss, ent_coef=cfg.ent_coef, vf_coef=cfg.vf_coef)
                grads = to_grads_params(loss.backward(), self.model.parameters())
                clip_grad_norm_(grads, cfg.max_grad_norm)
                self.optimizer.step(lr, self.model, grads)
                metrics.record("loss", float(loss.item()))
                for name in ("entropy", "approx_kl"):
                    metrics.record(name, float(stats[name].item()))

    # --- checkpoints ---
    def save(self, directory: str | os.PathLike[str]) -> None:
        """Checkpoint the network, optimizer, normalisation statistics, counters and RNG."""
        state = {"env_steps": self.env_steps, "rng": self.rng.bit_generator.state,
                 "obs_rms": self.obs_rms.state_dict(), "ret_rms": self.ret_rms.state_dict()}
        save_checkpoint(directory, kind=self.kind, modules={"model": self.model},
                        optimizer=self.optimizer, state=state)

    def load(self, directory: str | os.PathLike[str]) -> None:
        """Resume from `save()`'s checkpoint.

        Raises:
            CheckpointError: when it is missing, incomplete, or does not fit this agent.
        """
        state, _ = load_checkpoint(directory, kind=self.kind, modules={"model": self.model},
                                   optimizer=self.optimizer,
                                   state_keys=("env_steps", "rng", "obs_rms", "ret_rms"))
        with damaged_file(Path(directory) / STATE_FILE):
            self.env_steps = int(state["env_steps"])
            self.rng.bit_generator.state = state["rng"]
            self.obs_rms.load_state_dict(state["obs_rms"])
            self.ret_rms.load_state_dict(state["ret_rms"])
