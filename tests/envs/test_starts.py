"""The training-only start distribution ``reset(options={"start": "anywhere"})`` (exploring starts), in every shell.

The agent's row is drawn uniformly from :func:`doors_gym.core.start_rows` (rows 1..H-1 without a wall); its column,
the goal and the doors are the default start's draws, which the option leaves as they were.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from stacks import needs

import doors_gym  # noqa: F401
from doors_gym import core

SINGLE_IDS = ["Doors-31x31-v0", "DoorsJax-31x31-v0", "Doors-v0"]
VECTOR_IDS = ["Doors-3Walls-v0", "DoorsJax-3Walls-v0"]


def maybe_jax(env_id: str) -> None:
    if env_id.startswith("DoorsJax"):
        needs("jax")


def test_start_rows_skip_the_goal_row_and_every_wall():
    params = core.DoorsParams(grid_size=(15, 15), n_walls=3, n_doors=1, doors="random")
    assert core.start_rows(params).tolist() == [1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14]
    assert core.start_rows(core.DoorsParams()).tolist() == [1, 2, 3, 4, 5, 6, 8, 9, 10, 11, 12, 13, 14]


@pytest.mark.parametrize("env_id", SINGLE_IDS)
def test_anywhere_draws_every_start_row_and_keeps_the_default_draws(env_id):
    maybe_jax(env_id)
    env = gym.make(env_id)
    params = env.unwrapped.params
    rows = []
    for seed in range(300):
        env.reset(seed=seed)
        default = env.unwrapped.state
        env.reset(seed=seed, options={"start": "anywhere"})
        anywhere = env.unwrapped.state
        rows.append(int(anywhere.agent_row))
        # The agent's column, the goal and the doors are the default start's draws.
        assert int(anywhere.agent_col) == int(default.agent_col)
        assert (int(anywhere.goal_row), int(anywhere.goal_col)) == (0, int(default.goal_col))
        if params.random_doors:
            np.testing.assert_array_equal(np.asarray(anywhere.doors), np.asarray(default.doors))
        assert int(default.agent_row) == params.height - 1
    assert set(rows) == set(core.start_rows(params).tolist())
    # "bottom" is the default start, draw for draw.
    first, _ = env.reset(seed=7)
    second, _ = env.reset(seed=7, options={"start": "bottom"})
    np.testing.assert_array_equal(np.asarray(first), np.asarray(second))


@pytest.mark.parametrize("env_id", SINGLE_IDS[:2])
def test_bad_start_options_name_the_value(env_id):
    maybe_jax(env_id)
    env = gym.make(env_id)
    with pytest.raises(ValueError, match="start='top'.*'bottom', 'anywhere'"):
        env.reset(options={"start": "top"})
    with pytest.raises(ValueError, match="both place the agent"):
        env.reset(options={"start": "anywhere", "agent_pos": (30, 0)})


@pytest.mark.parametrize("env_id", VECTOR_IDS)
def test_a_vector_reset_to_anywhere_replaces_the_autoreset_of_the_masked_envs(env_id):
    maybe_jax(env_id)
    envs = gym.make_vec(env_id, 8)
    params = envs.unwrapped.params if hasattr(envs, "unwrapped") else envs.params
    envs.reset(seed=0)
    rows = set()
    for _ in range(40):
        mask = np.zeros(8, dtype=bool)
        mask[:4] = True
        obs, info = envs.reset(options={"reset_mask": mask, "start": "anywhere"})
        state = envs.unwrapped.state
        rows |= set(np.asarray(state.agent_row)[:4].tolist())
        assert (np.asarray(state.time)[:4] == 0).all()
        _, rewards, terminated, truncated, _ = envs.step(np.full(8, core.UP))
        # A masked env steps from its new start: a move, not an autoreset (which returns reward 0 and time 0).
        assert (np.asarray(envs.unwrapped.state.time)[:4] == 1).all()
    assert rows == set(core.start_rows(params).tolist())
