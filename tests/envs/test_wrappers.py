"""``SuccessInfo``: ``info["is_success"]`` once per episode, on the step that ends it; ``AgentGoalPlanes``: the grid
as the agent's and the goal's cells."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

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


def test_agent_goal_planes_hold_the_agents_and_the_goals_cell_and_nothing_else() -> None:
    from doors_gym.codes import AGENT, GOAL
    from doors_gym.wrappers import AgentGoalPlanes, agent_goal_planes

    env = AgentGoalPlanes(gym.make("Doors-v0"))
    grid_env = gym.make("Doors-v0")
    assert env.observation_space == gym.spaces.Box(0.0, 1.0, (450,), np.float32)
    for seed in range(5):
        planes, info = env.reset(seed=seed)
        grid, _ = grid_env.reset(seed=seed)
        assert planes in env.observation_space
        np.testing.assert_array_equal(np.flatnonzero(planes[:225]), np.flatnonzero(grid == AGENT))
        np.testing.assert_array_equal(np.flatnonzero(planes[225:]), np.flatnonzero(grid == GOAL))
        for action in np.random.default_rng(seed).integers(0, 5, 20):
            planes, *_ = env.step(int(action))
            grid, *_ = grid_env.step(int(action))
            np.testing.assert_array_equal(planes, agent_goal_planes(grid))
    # A batch of grids at once.
    grids = np.stack([grid_env.reset(seed=seed)[0] for seed in range(4)])
    batch = agent_goal_planes(grids)
    assert batch.shape == (4, 450) and (batch.sum(axis=1) == 2).all()
    with pytest.raises(ValueError, match="obs_mode='flat' is not supported"):
        AgentGoalPlanes(gym.make("Doors-v0", obs_mode="flat"))
    with pytest.raises(ValueError, match="doors='random' is not supported"):
        AgentGoalPlanes(gym.make("Doors-Random-v0"))
