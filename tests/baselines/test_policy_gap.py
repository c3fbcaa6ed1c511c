"""benchmarks/policy_gap.py's accounting: a policy's steps against the oracle's on the same starts."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from benchmark_scripts import load_benchmark

import doors_gym  # noqa: F401  (registers the ids)
from doors_gym.oracle import oracle_action


class Oracle:
    """The oracle's action in the env's current state, whatever the observation."""

    def __init__(self, env: gym.Env) -> None:
        self.env = env

    def act(self, obs: np.ndarray) -> np.ndarray:
        return np.array([int(oracle_action(self.env.unwrapped.params, self.env.unwrapped.state))])


class Stay:
    def act(self, obs: np.ndarray) -> np.ndarray:
        return np.zeros(len(obs), dtype=np.int64)


def test_the_oracle_has_no_gap_and_a_policy_that_stays_misses_every_episode() -> None:
    policy_gap = load_benchmark("policy_gap")
    env = gym.make("Doors-3Walls-v0")
    best = policy_gap.measure(Oracle(env), env, episodes=20, epsilon=0.0)
    assert best.missed == 0 and best.missed_steps == 0 and best.extra_steps == 0 and best.longer == 0.0
    assert best.steps == best.oracle_steps
    assert best.step_reward == pytest.approx(best.oracle_step_reward, rel=1e-5)
    stay = policy_gap.measure(Stay(), env, episodes=5, epsilon=0.0)
    assert stay.missed == 5 and stay.step_reward == 0.0 and stay.missed_steps == stay.steps == 5 * 120
    assert stay.oracle_step_reward == pytest.approx(best.oracle_step_reward, rel=0.5)  # other starts, same level
    wandering = policy_gap.measure(Oracle(env), env, episodes=20, epsilon=0.5)
    assert wandering.extra_steps > 0 and wandering.oracle_steps == best.oracle_steps  # the same starts
