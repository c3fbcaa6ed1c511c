"""Stable-Baselines3 against the envs by id: its env checker, PPO and DQN built and trained, CnnPolicy on pixels.

Before int16 observation spaces, ``PPO("MlpPolicy", make_vec_env("Doors-v0", n_envs=8))``
died building the policy: SB3 sums ``observation_space.nvec`` with Python's
``sum``, which wrapped around in int8 (900 -> -124).
"""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest
from stacks import needs

needs("torch")
sb3 = needs("stable_baselines3")
from stable_baselines3 import DQN, PPO  # noqa: E402
from stable_baselines3.common.env_checker import check_env  # noqa: E402
from stable_baselines3.common.env_util import make_vec_env  # noqa: E402

from doors_gym.core import OBS_MODES  # noqa: E402

ENV_IDS = ["Doors-v0", "DoorsJax-v0"]


def skip_without_jax(env_id: str) -> None:
    if env_id == "DoorsJax-v0":
        needs("jax")


@pytest.mark.parametrize("obs_mode", OBS_MODES)
@pytest.mark.parametrize("env_id", ENV_IDS)
def test_sb3_check_env_passes_with_warnings_as_errors(env_id, obs_mode):
    skip_without_jax(env_id)
    env = gym.make(env_id, obs_mode=obs_mode, cell_pixels=4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(env.unwrapped, warn=True)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_ppo_mlp_policy_builds_and_trains_through_make_vec_env(env_id):
    skip_without_jax(env_id)
    venv = make_vec_env(env_id, n_envs=8, seed=0)
    model = PPO("MlpPolicy", venv, n_steps=32, batch_size=64, n_epochs=1, seed=0, device="cpu")
    # One one-hot feature per cell and code: 15 * 15 * 4.
    assert model.policy.features_extractor.features_dim == 900
    model.learn(total_timesteps=512)
    assert model.num_timesteps >= 512
    obs = venv.reset()
    actions, _ = model.predict(obs, deterministic=True)
    assert actions.shape == (8,) and set(actions.tolist()) <= set(range(5))


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_dqn_by_id_builds_and_trains(env_id):
    skip_without_jax(env_id)
    model = DQN("MlpPolicy", env_id, learning_starts=64, buffer_size=1_000, batch_size=32, seed=0, device="cpu")
    assert model.q_net.features_extractor.features_dim == 900
    assert model.replay_buffer.observations.dtype == np.int16
    model.learn(total_timesteps=300)
    assert model.num_timesteps == 300 and model.replay_buffer.pos > 0


def test_sb3_on_the_largest_grid_counts_every_feature():
    """On an 11 x 7 grid int8 gave 52 features instead of 308; on the largest grid nothing may wrap."""
    venv = make_vec_env("Doors-v0", n_envs=1, env_kwargs={"grid_size": (11, 7)})
    assert PPO("MlpPolicy", venv, n_steps=8, batch_size=8, device="cpu").policy.features_dim == 308
    venv = make_vec_env("Doors-v0", n_envs=1, env_kwargs={"grid_size": (91, 90), "n_doors": 1})
    model = PPO("MlpPolicy", venv, n_steps=8, batch_size=8, n_epochs=1, device="cpu")
    assert model.policy.features_dim == 4 * 91 * 90
    model.learn(total_timesteps=8)


def test_cnn_policy_accepts_the_rgb_observation():
    venv = make_vec_env("Doors-v0", n_envs=2, seed=0, env_kwargs={"obs_mode": "rgb", "cell_pixels": 4})
    assert venv.observation_space.shape == (60, 60, 3)
    model = PPO("CnnPolicy", venv, n_steps=16, batch_size=32, n_epochs=1, seed=0, device="cpu")
    assert model.policy.features_extractor.__class__.__name__ == "NatureCNN"
    model.learn(total_timesteps=32)
    assert model.num_timesteps >= 32


def greedy_success(model, episodes: int, first_seed: int) -> float:
    env = gym.make("Doors-v0", obs_mode="onehot")
    successes = 0
    for episode in range(episodes):
        obs, _ = env.reset(seed=first_seed + episode)
        terminated = truncated = False
        while not (terminated or truncated):
            action, _ = model.predict(obs, deterministic=True)
            obs, _, terminated, truncated, _ = env.step(int(action))
        successes += terminated
    return successes / episodes


@pytest.mark.slow
def test_ppo_learns_doors():
    """PPO reaches the goal from fresh starts far more often than random play.

    Measured on this project's 2-core CPU: 150k steps (about 35 s) give greedy
    success 0.99 over 200 fresh seeds (50k: 0.06, 100k: 0.29); a random policy
    succeeds in 0.1 % of episodes. ``onehot`` is the grid observation as SB3
    one-hot encodes it (identical features, identical learning curve), built
    by the env instead of per dimension in SB3, three times faster.
    """
    venv = make_vec_env("Doors-v0", n_envs=8, seed=0, env_kwargs={"obs_mode": "onehot"})
    model = PPO("MlpPolicy", venv, n_steps=128, batch_size=256, learning_rate=1e-3, gamma=0.9, ent_coef=0.01, seed=0)
    model.learn(total_timesteps=150_000)
    assert greedy_success(model, episodes=200, first_seed=10_000) >= 0.8
