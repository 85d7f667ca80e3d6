"""burn-rl PPO agents for CartPole-v1 (discrete actions) and Pendulum-v1 (Gaussian actions)."""
