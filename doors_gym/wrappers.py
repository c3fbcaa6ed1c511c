"""Gymnasium wrappers for what clients read from ``info`` beyond the Doors rules.

>>> import gymnasium as gym
>>> import doors_gym
>>> from doors_gym.wrappers import SuccessInfo
>>> env = SuccessInfo(gym.make("Doors-v0"))
>>> _ = env.reset(options={"agent_pos": (1, 0), "goal_pos": (0, 0)})
>>> env.step(4)[4]
{'distance': 0.0, 'is_success': True}
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym

SUCCESS_KEY = "is_success"
"""The ``info`` key that Stable-Baselines3 (``EvalCallback``, ``Monitor(info_keywords=...)``) and RL Zoo's
``enjoy`` read for a success rate."""


class SuccessInfo(gym.Wrapper):
    """Adds ``info["is_success"]`` on the step that ends an episode: True when it reached the goal.

    An episode that ends by the time limit (truncated, not terminated) is a
    failure. Steps inside an episode leave ``info`` as the env returned it,
    so the success rate counts each episode once.
    """

    def step(self, action: Any) -> tuple[Any, Any, bool, bool, dict[str, Any]]:
        """The env's step, with ``info["is_success"]`` when the episode ends."""
        obs, reward, terminated, truncated, info = self.env.step(action)
        if terminated or truncated:
            info = {**info, SUCCESS_KEY: bool(terminated)}
        return obs, reward, terminated, truncated, info
