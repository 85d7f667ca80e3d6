"""Train a PPO agent on CartPole-v1 or Pendulum-v1, then evaluate its deterministic policy over
100 episodes: `python -m ppo_agent --env CartPole-v1|Pendulum-v1 [--steps N] [--smoke]`."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import burn_rl
from burn.record.files import atomic_path
from burn_rl import PpoAgent, PpoConfig, evaluate

#: Per environment: (config, parallel environments, training steps, the mean return to reach).
#: CartPole: CleanRL's ppo.py settings. Pendulum: rl-baselines3-zoo's PPO settings (gamma 0.9,
#: 4 x 1024-step rollouts, 10 epochs of 64 minibatches, lr 1e-3) with reward scaling.
SETTINGS: dict[str, tuple[PpoConfig, int, int, float]] = {
    "CartPole-v1": (PpoConfig(), 4, 150_000, 475.0),
    "Pendulum-v1": (PpoConfig(learning_rate=1e-3, num_steps=1024, gamma=0.9, num_minibatches=64,
                              update_epochs=10, ent_coef=0.0, normalize_rewards=True),
                    4, 200_000, -250.0),
}


def run(env_id: str, steps: int, seed: int, artifact_dir: Path, eval_episodes: int = 100,
        progress: bool = True) -> dict[str, float]:
    """Train for `steps` environment steps and evaluate.

    Returns:
        The figures: env_steps, eval_mean, eval_std, threshold, solved (0/1), wall_seconds.
    """
    config, num_envs, _, threshold = SETTINGS[env_id]
    start = time.perf_counter()
    agent = PpoAgent(burn_rl.make(env_id, num_envs), config, seed=seed)
    agent.learn(steps, artifact_dir=artifact_dir, progress=progress,
                log_interval=max(num_envs * config.num_steps, steps // 50))
    result = evaluate(agent, env_id, eval_episodes, seed=seed + 10_000)
    agent.save(artifact_dir / "final")
    figures = {"env_steps": float(agent.env_steps), "eval_mean": result.mean,
               "eval_std": result.std, "threshold": threshold,
               "solved": float(result.mean >= threshold),
               "wall_seconds": time.perf_counter() - start}
    with atomic_path(artifact_dir / "result.json") as partial:  # (never half-written)
        partial.write_text(json.dumps(figures, indent=2))
    return figures


def main(argv: list[str] | None = None) -> int:
    """Command line entry point; exit status 1 when the threshold is missed (not in smoke
    mode)."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--env", choices=sorted(SETTINGS), default="CartPole-v1")
    parser.add_argument("--steps", type=int, default=None,
                        help="environment steps (default: 150k for CartPole, 200k for Pendulum)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--artifact-dir", type=Path, default=None,
                        help="default: artifacts/ppo-agent/<env>")
    parser.add_argument("--quiet", action="store_true", help="no progress display")
    parser.add_argument("--smoke", action="store_true",
                        help="a quick check: 2 rollouts, 5 evaluation episodes, no threshold")
    args = parser.parse_args(argv)
    config, num_envs, default_steps, _ = SETTINGS[args.env]
    steps = 2 * num_envs * config.num_steps if args.smoke else (args.steps or default_steps)
    artifact_dir = args.artifact_dir or Path("artifacts/ppo-agent") / args.env
    figures = run(args.env, steps, args.seed, artifact_dir, 5 if args.smoke else 100,
                  progress=not (args.quiet or args.smoke))
    print(f"{args.env}: mean return {figures['eval_mean']:.1f} +- {figures['eval_std']:.1f} "
          f"after {figures['env_steps']:.0f} steps ({figures['wall_seconds']:.0f} s; target "
          f"{figures['threshold']:g}); curve: {artifact_dir / 'learning_curve.png'}")
    return 0 if args.smoke or figures["solved"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
