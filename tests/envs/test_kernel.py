"""The NumPy step kernel: the same grids and flags on Python ints (one env) and index arrays (many), as core says."""

import numpy as np

from doors_gym import core
from doors_gym.core import WALL, DoorsParams, DoorsState
from doors_gym.envs.kernel import NEVER, advance, draw, step_limit


def test_one_env_and_many_step_alike_and_as_the_rules_say():
    params = DoorsParams(grid_size=(5, 4), n_doors=2, max_episode_steps=7)
    cells = params.num_cells
    free = np.flatnonzero(params.layout.reshape(-1) != WALL)
    rng = np.random.default_rng(0)
    num_envs = 200
    agent, goal = rng.choice(free, num_envs), rng.choice(free, num_envs)
    goal[:20] = agent[:20]  # agents set on their goals, which they may step off
    actions, time = rng.integers(0, core.NUM_ACTIONS, num_envs), rng.integers(1, 9, num_envs)
    new = core.all_transitions(params)[agent, actions]

    grids = np.tile(params.layout.reshape(-1), num_envs)
    offset = np.arange(num_envs) * cells
    draw(grids, offset + agent, offset + goal)
    terminated, truncated = advance(grids, offset + agent, offset + new, offset + goal, time, step_limit(params))
    assert 0 < terminated.sum() < num_envs and 0 < truncated.sum() < num_envs

    for index in range(num_envs):
        grid = params.layout.reshape(-1).copy()
        draw(memoryview(grid), int(agent[index]), int(goal[index]))
        flags = advance(memoryview(grid), int(agent[index]), int(new[index]), int(goal[index]), int(time[index]), 7)
        assert flags == (terminated[index], truncated[index])
        np.testing.assert_array_equal(grid, grids[offset[index] : offset[index] + cells])
        row, col = divmod(int(new[index]), params.width)
        state = DoorsState(*(np.int32(v) for v in (row, col, *divmod(int(goal[index]), params.width), time[index])))
        np.testing.assert_array_equal(grid, core.grid_observation(params, state))
        assert flags == (core.terminated(state), core.truncated(params, state))


def test_episodes_without_a_limit_never_truncate():
    assert step_limit(DoorsParams(max_episode_steps=None)) == NEVER
    assert step_limit(DoorsParams(max_episode_steps=9)) == 9
    assert advance(np.zeros(4, dtype=np.int16), 0, 1, 3, np.iinfo(np.int32).max, NEVER) == (False, False)
