"""A burn-rl DQN agent that solves CartPole-v1 (mean return >= 475 over 100 episodes)."""
