"""rejax's PPO, DQN and PQN, installed from the registry, take ``DoorsGymnax()`` as their env object.

rejax 0.1 steps gymnax's five-value protocol (gymnax 0.0.x), as it does for gymnax's own envs: the main venv
has gymnax 1.x and skips this file; ``.ci/run``'s gymnax 0.0.9 venv runs it. Each algorithm trains on a short
budget with rejax's own evaluation (128 greedy episodes every ``eval_freq`` steps).
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
from stacks import needs

needs("gymnax", major=0)
jax = needs("jax")
rejax = needs("rejax")

from doors_gym.jax import DoorsGymnax  # noqa: E402

pytestmark = [
    # gymnax's Discrete.sample and rejax's float observations ask for 64-bit dtypes, which JAX truncates.
    pytest.mark.filterwarnings("ignore:Explicitly requested dtype"),
    pytest.mark.filterwarnings("ignore::DeprecationWarning:rejax"),
]

NUM_EVALUATIONS, EVALUATION_EPISODES = 5, 128
CONFIGS = {
    "ppo": dict(total_timesteps=32768, num_envs=16, num_steps=64, eval_freq=8192, learning_rate=1e-3),
    "pqn": dict(total_timesteps=32768, num_envs=16, num_steps=32, eval_freq=8192, learning_rate=1e-3),
    "dqn": dict(
        total_timesteps=16384,
        eval_freq=4096,
        fill_buffer=1000,
        buffer_size=10000,
        batch_size=64,
        exploration_fraction=0.5,
        learning_rate=1e-3,
    ),
}
"""A few seconds each on two cores; rejax's defaults otherwise."""


@functools.cache
def train(name: str) -> tuple[np.ndarray, np.ndarray]:
    """rejax's README, with its env line changed: ``(lengths, returns)``, one row per evaluation."""
    algo = rejax.get_algo(name).create(env=DoorsGymnax(), **CONFIGS[name])
    _, (lengths, returns) = jax.jit(algo.train)(jax.random.key(0))
    return np.asarray(lengths), np.asarray(returns)


@pytest.mark.parametrize("name", ["ppo", "pqn"])
def test_rejax_on_policy_algorithms_learn_to_walk_towards_the_goal(name):
    lengths, returns = train(name)
    assert returns.shape == lengths.shape == (NUM_EVALUATIONS, EVALUATION_EPISODES)
    # A step's reward is the distance it gains on the goal: an untrained policy gains about nothing.
    assert returns[-1].mean() > returns[0].mean() + 3.0
    assert (lengths <= DoorsGymnax().default_params.max_steps_in_episode).all()


def test_rejax_dqn_runs_to_its_end():
    lengths, returns = train("dqn")
    assert returns.shape == lengths.shape == (NUM_EVALUATIONS, EVALUATION_EPISODES)
    assert np.isfinite(returns).all() and (lengths >= 1).all()
    assert (lengths <= DoorsGymnax().default_params.max_steps_in_episode).all()


def test_rejax_ppo_reaches_the_goal():
    lengths, _ = train("ppo")
    # Episodes shorter than the time limit ended on the goal.
    assert (lengths[-1] < DoorsGymnax().default_params.max_steps_in_episode).mean() > 0.2
