"""Gymnasium wrappers for what clients read beyond the Doors rules: ``info["is_success"]``, and the grid as the
agent's and the goal's cells (the features the package's own DQN arms read, for a library's network).

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
import numpy as np

from doors_gym.codes import AGENT, GOAL

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


def agent_goal_planes(grid: Any, xp: Any = np) -> Any:
    """Grid observations ``(..., H * W)`` as the agent's and the goal's one-hot planes ``(..., 2 * H * W)``
    float32 (``xp``: NumPy, or ``jax.numpy`` inside a compiled loop).

    On a layout of fixed doors the walls never change, so the two cells are all an observation holds: the
    features the package's DQN arms read (one input row per agent cell and per goal cell), against the
    ``flat`` one-hot grid's ``4 * H * W`` (empty, agent, wall and goal planes). Where the agent stands on the
    goal its plane shows the agent and the goal's is empty, as in the grid.
    """
    return xp.concatenate([grid == AGENT, grid == GOAL], axis=-1).astype(xp.float32)


class AgentGoalPlanes(gym.ObservationWrapper):
    """A ``grid`` observation as :func:`agent_goal_planes`: a ``Box(0, 1, (2 * H * W,), float32)``.

    ``ValueError`` for another observation mode, or doors drawn per episode (the walls would then be part of
    the state, and these planes leave them out).
    """

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        params = env.unwrapped.params
        if params.obs_mode != "grid":
            raise ValueError(f"obs_mode={params.obs_mode!r} is not supported: expected 'grid' (cell codes)")
        if params.random_doors:
            raise ValueError("doors='random' is not supported: the agent's and goal's planes leave out the walls")
        self.observation_space = gym.spaces.Box(0.0, 1.0, (2 * params.num_cells,), np.float32)

    def observation(self, observation: Any) -> np.ndarray:
        return agent_goal_planes(observation)
