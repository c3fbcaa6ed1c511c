"""SBX (Stable-Baselines3 in JAX), installed from the registry: its DQN and PPO by id, as its README writes them.

``DQN("MlpPolicy", "Doors-v0")`` and ``PPO("MlpPolicy", "Doors-v0")`` take the id alone (the grid observation,
a ``MultiDiscrete``), train on a short budget and then reach the goal from fresh starts far more often than
random play does (0.1 % of episodes).
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from stacks import needs

needs("jax")
sbx = needs("sbx")

FRESH_STARTS = 50


def greedy_success(model) -> float:
    """Share of fresh starts (seeds 1000 on, unseen in training) the greedy policy ends on the goal."""
    env = gym.make("Doors-v0")
    successes = 0
    for episode in range(FRESH_STARTS):
        obs, _ = env.reset(seed=1000 + episode)
        terminated = truncated = False
        while not (terminated or truncated):
            action, _ = model.predict(obs, deterministic=True)
            obs, _, terminated, truncated, _ = env.step(int(action))
        successes += terminated
    return successes / FRESH_STARTS


def test_sbx_dqn_by_id_learns():
    model = sbx.DQN(
        "MlpPolicy",
        "Doors-v0",
        learning_starts=500,
        buffer_size=5000,
        batch_size=64,
        target_update_interval=250,
        exploration_fraction=0.5,
        learning_rate=1e-3,
        seed=0,
    )
    assert isinstance(model.observation_space, gym.spaces.MultiDiscrete)
    model.learn(total_timesteps=5000)
    assert model.num_timesteps == 5000 and model.replay_buffer.observations.dtype == np.int16
    assert greedy_success(model) >= 0.05


@pytest.mark.filterwarnings("ignore:You have specified a mini-batch size")
def test_sbx_ppo_by_id_learns():
    model = sbx.PPO("MlpPolicy", "Doors-v0", n_steps=256, batch_size=64, n_epochs=4, learning_rate=1e-3, gamma=0.9, seed=0)
    model.learn(total_timesteps=16384)
    assert model.num_timesteps >= 16384
    assert greedy_success(model) >= 0.05
