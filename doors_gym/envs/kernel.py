"""The NumPy step of ``Doors-v0``, written once for the single env and the native vector env.

Both envs hold an episode as the flat cell indices (``row * W + col``) of the agent and the goal, a step
count and the flat grid observation, and move the agent through :func:`doors_gym.core.all_transitions`.
The functions here take Python ints (:class:`~doors_gym.envs.doors.DoorsEnv`: one episode, no array made
per step) and integer arrays (:class:`~doors_gym.envs.vector.DoorsVectorEnv`: one element per env) alike,
so they only index, compare and assign. A position in ``grid`` is a cell of one env's flat grid, or
``env * H * W + cell`` in the grids of all envs laid end to end (where a comparison of positions is the
comparison of their cells). ``tests/test_parity.py`` holds the result to :mod:`doors_gym.core`'s rules.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from doors_gym.core import AGENT, EMPTY, GOAL, DoorsParams

NEVER = int(np.iinfo(np.int64).max)
"""A step count no episode reaches: the limit of episodes without one."""


def step_limit(params: DoorsParams) -> int:
    """The step count that truncates an episode: ``params.max_episode_steps``, or :data:`NEVER` when None."""
    return params.max_episode_steps or NEVER


def draw(grid: Any, agent: Any, goal: Any) -> None:
    """Draws the goal, then the agent over it, into a grid that holds the layout (an episode's start).

    The order of :func:`doors_gym.core.grid_observation`: an agent on its goal covers it.
    """
    grid[goal] = GOAL
    grid[agent] = AGENT


def advance(grid: Any, left: Any, entered: Any, goal: Any, time: Any, limit: int) -> tuple[Any, Any]:
    """Redraws ``grid`` after the agent moved from ``left`` to ``entered``; says whether the episode ended.

    The cell left becomes empty (the agent never stands on a wall), then the goal and the agent are drawn
    as :func:`draw` draws them (written out: one call fewer per step of the single env), so the goal shows
    again once an agent steps off it.

    Args:
        grid: the flat grid (one env) or grids (many), written in place.
        left: the agent's position before the move.
        entered: its position after the move (``left`` again when it stayed or bumped).
        goal: the goal's position.
        time: steps taken in the episode, this one included.
        limit: :func:`step_limit` of the layout.

    Returns:
        ``(terminated, truncated)``: the agent on the goal, ``time`` at the limit; bools for one env,
        bool arrays for many.
    """
    grid[left] = EMPTY
    grid[goal] = GOAL
    grid[entered] = AGENT
    return entered == goal, time >= limit
