"""Tiny trainings shared by the baseline tests: each (arm, env id, overrides) trains once per session."""

import importlib

import numpy as np
import pytest

from doors_gym.core import DoorsParams
from doors_gym_baselines import evaluation
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
        pytest.importorskip(stack)
    return importlib.import_module(f"doors_gym_baselines.{ARM_MODULES[arm]}")


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
