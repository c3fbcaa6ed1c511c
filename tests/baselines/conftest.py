"""Tiny trainings shared by the baseline tests: each (arm, env id, overrides) trains once per session."""

import importlib

import numpy as np
import pytest
from stacks import needs

from doors_gym.core import DoorsParams
from doors_gym_baselines.harness import evaluation
from doors_gym_baselines.config import DQNConfig

ARM_STACKS = {"torch": ("torch",), "flax": ("flax", "optax"), "flax-scan": ("flax", "optax")}
ARM_MODULES = {"torch": "dqn_torch", "flax": "dqn_flax", "flax-scan": "dqn_flax_scan"}
TINY = dict(
    total_steps=12_000,
    num_envs=16,
    learning_starts=1_000,
    buffer_size=10_000,
    batch_size=64,
    hidden_sizes=(64, 64),
    target_update=100,
    exploration_fraction=0.5,
    eval_every=0,
    quiet=True,
)
"""A few seconds per arm on two CPU cores, and enough updates for the greedy policy to beat random play."""


def _arm_module(arm: str):
    for stack in ARM_STACKS[arm]:
        needs(stack)
    return importlib.import_module(f"doors_gym_baselines.learners.{ARM_MODULES[arm]}")


@pytest.fixture
def tiny_config() -> dict:
    """The keyword arguments of the tiny trainings (a fresh dict)."""
    return dict(TINY)


@pytest.fixture(scope="session")
def load_arm():
    """``load_arm(arm) -> module`` under the installed name; skips when the arm's framework is missing."""
    return _arm_module


@pytest.fixture(scope="session")
def trained():
    """``trained(arm, env_id, **overrides) -> (module, TrainResult)``, cached for the session."""
    cache = {}

    def get(arm: str, env_id: str = "Doors-v0", **overrides):
        module = _arm_module(arm)
        key = (arm, env_id, tuple(sorted(overrides.items())))
        if key not in cache:
            config = DQNConfig.of(env_id=env_id, **{**TINY, **overrides})
            cache[key] = module.train(config)
        return module, cache[key]

    return get


@pytest.fixture(scope="session")
def random_evaluation() -> evaluation.Evaluation:
    """Greedy-evaluation figures of a seeded uniformly random policy on the default layout."""
    rng = np.random.default_rng(12345)
    return evaluation.evaluate_greedy(lambda obs: rng.integers(0, 5, len(obs)), DoorsParams())


def make_fixed_batch(size: int = 128, num_cells: int = 225, seed: int = 0):
    """A replay batch as the buffer stores it: the cells (:mod:`doors_gym_baselines.learners.cells`) of grids with one
    agent and one goal, except where a terminated transition's next grid shows the agent on the goal."""
    from doors_gym_baselines.learners.cells import encode

    rng = np.random.default_rng(seed)
    obs = np.zeros((size, num_cells), dtype=np.int16)
    next_obs = obs.copy()
    rows = np.arange(size)
    obs[rows, rng.integers(0, 15, size)] = 3
    obs[rows, rng.integers(120, 225, size)] = 1
    next_obs[rows, rng.integers(0, 15, size)] = 3
    next_obs[rows, rng.integers(120, 225, size)] = 1
    actions = rng.integers(0, 5, size)
    rewards = rng.normal(0, 0.5, size).astype(np.float32)
    terminated = (rng.random(size) < 0.25).astype(np.float32)
    reached = terminated.astype(bool)
    next_obs[reached] = 0
    next_obs[reached, rng.integers(0, 15, int(reached.sum()))] = 1  # the agent covers the goal
    return encode(obs), actions, rewards, encode(next_obs), terminated


@pytest.fixture
def fixed_batch():
    """:func:`make_fixed_batch`: ``fixed_batch(size, num_cells, seed)``."""
    return make_fixed_batch
