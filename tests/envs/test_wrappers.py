"""``SuccessInfo``: ``info["is_success"]`` once per episode, on the step that ends it."""

from __future__ import annotations

import gymnasium as gym

from doors_gym.core import STAY, UP
from doors_gym.wrappers import SUCCESS_KEY, SuccessInfo


def test_reaching_the_goal_is_a_success_and_only_the_last_step_says_so():
    env = SuccessInfo(gym.make("Doors-v0"))
    env.reset(seed=0, options={"agent_pos": (2, 0), "goal_pos": (0, 0)})
    *_, terminated, truncated, info = env.step(UP)
    assert not (terminated or truncated) and SUCCESS_KEY not in info
    *_, terminated, truncated, info = env.step(UP)
    assert terminated and info[SUCCESS_KEY] is True
    assert info["distance"] == 0.0


def test_the_time_limit_is_a_failure():
    env = SuccessInfo(gym.make("Doors-v0", max_episode_steps=3))
    env.reset(seed=0)
    infos = [env.step(STAY)[4] for _ in range(3)]
    assert [SUCCESS_KEY in info for info in infos] == [False, False, True]
    assert infos[-1][SUCCESS_KEY] is False
