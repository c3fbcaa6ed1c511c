"""Properties of SPEC.md over random seeds, layouts and action streams (hypothesis)."""

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from doors_gym import core
from doors_gym.core import AGENT, GOAL, WALL, DoorsParams
from doors_gym.envs.doors import DoorsEnv

PROPERTY_SETTINGS = settings(max_examples=50, deadline=None)


@st.composite
def layouts(draw):
    """Small valid layouts: ``(grid_size, door_cols)``, door columns either by count or explicit."""
    height = draw(st.integers(3, 9))
    width = draw(st.integers(1, 9))
    if draw(st.booleans()):
        n_doors = draw(st.integers(1, width))
        door_cols = tuple(k * (width // n_doors) for k in range(n_doors))
    else:
        door_cols = tuple(sorted(draw(st.sets(st.integers(0, width - 1), min_size=1, max_size=width))))
    return (height, width), door_cols


action_streams = st.lists(st.integers(0, 4), min_size=1, max_size=60)
seeds = st.integers(0, 2**32 - 1)


def _agent_and_goal(obs, params):
    grid = obs.reshape(params.grid_size)
    return [tuple(cell) for cell in np.argwhere(grid == AGENT).tolist()], [
        tuple(cell) for cell in np.argwhere(grid == GOAL).tolist()
    ]


@PROPERTY_SETTINGS
@given(layout=layouts(), seed=seeds, actions=action_streams)
def test_episode_invariants(layout, seed, actions, reference):
    grid_size, door_cols = layout
    env = DoorsEnv(grid_size=grid_size, door_cols=door_cols)
    params = env.params
    height, width = grid_size
    wall_row = height // 2
    wall_cols = [col for col in range(width) if col not in door_cols]

    obs, info = env.reset(seed=seed)
    agents, goals = _agent_and_goal(obs, params)
    assert len(agents) == 1 and len(goals) == 1
    agent, goal = agents[0], goals[0]
    assert agent[0] == height - 1 and goal[0] == 0
    start_distance = info["distance"]
    assert start_distance == np.float32(math.hypot(goal[0] - agent[0], goal[1] - agent[1]))

    episode_return = 0.0
    for action in actions:
        obs, reward, terminated, truncated, info = env.step(action)
        episode_return += reward
        assert obs.dtype == np.int16
        assert obs.shape == (height * width,)
        assert env.observation_space.contains(obs)
        grid = obs.reshape(grid_size)
        assert np.count_nonzero(grid == AGENT) == 1
        assert np.all(grid[wall_row, wall_cols] == WALL)
        assert np.count_nonzero(grid == WALL) == len(wall_cols)
        assert np.all(np.isin(grid[wall_row, list(door_cols)], (0, AGENT, GOAL)))

        expected_agent = reference.move(params, *agent, action)
        assert grid[expected_agent] == AGENT
        assert reward == reference.reward(agent, expected_agent, goal)
        agent = expected_agent
        assert terminated == (agent == goal)
        assert truncated is False
        assert np.count_nonzero(grid == GOAL) == (0 if terminated else 1)
        if terminated:
            break
    assert abs(episode_return - (start_distance - info["distance"])) < 1e-4


@PROPERTY_SETTINGS
@given(layout=layouts(), seed=seeds, actions=action_streams, limit=st.integers(1, 30))
def test_truncation_happens_exactly_at_the_limit(layout, seed, actions, limit):
    grid_size, door_cols = layout
    env = DoorsEnv(grid_size=grid_size, door_cols=door_cols, max_episode_steps=limit)
    env.reset(seed=seed)
    for step, action in enumerate(actions, start=1):
        _, _, terminated, truncated, _ = env.step(action)
        assert truncated == (step >= limit)
        if terminated or truncated:
            break


@PROPERTY_SETTINGS
@given(layout=layouts(), seed=seeds, actions=action_streams)
def test_core_functions_agree_with_the_env(layout, seed, actions):
    """The pure functions of ``core`` replay the env's episode step by step."""
    grid_size, door_cols = layout
    env = DoorsEnv(grid_size=grid_size, door_cols=door_cols)
    params = env.params
    obs, _ = env.reset(seed=seed)
    state = env.state
    np.testing.assert_array_equal(core.observation(params, state), obs)
    for action in actions:
        obs, reward, terminated, _, info = env.step(action)
        next_state = core.transition(params, state, np.int32(action))
        core_reward = core.reward(core.state_distance(state), core.state_distance(next_state))
        state = next_state
        assert state == env.state
        np.testing.assert_array_equal(core.observation(params, state), obs)
        assert core_reward == reward
        assert core.state_distance(state) == info["distance"]
        assert bool(core.terminated(state)) == terminated
        if terminated:
            break


@PROPERTY_SETTINGS
@given(layout=layouts(), seed=seeds)
def test_same_seed_same_start_and_start_on_the_outer_rows(layout, seed):
    grid_size, door_cols = layout
    first = DoorsEnv(grid_size=grid_size, door_cols=door_cols)
    second = DoorsEnv(grid_size=grid_size, door_cols=door_cols)
    first_obs, first_info = first.reset(seed=seed)
    second_obs, second_info = second.reset(seed=seed)
    np.testing.assert_array_equal(first_obs, second_obs)
    assert first_info == second_info
    assert first.observation_space.contains(first_obs)


@PROPERTY_SETTINGS
@given(layout=layouts(), rows=st.lists(st.integers(-5, 15), min_size=1, max_size=20), actions=st.data())
def test_core_move_stays_in_the_grid_and_off_the_wall(layout, rows, actions, reference):
    grid_size, door_cols = layout
    params = DoorsParams(grid_size=grid_size, door_cols=door_cols)
    height, width = grid_size
    row = np.array([r % height for r in rows], dtype=np.int32)
    col = np.array([(r * 7) % width for r in rows], dtype=np.int32)
    off_wall = (row != params.wall_row) | np.isin(col, door_cols)
    row, col = row[off_wall], col[off_wall]
    action = np.array(actions.draw(st.lists(st.integers(0, 4), min_size=row.size, max_size=row.size)), dtype=np.int32)
    new_row, new_col = core.move(params, row, col, action)
    assert new_row.dtype == np.int32 and new_col.dtype == np.int32
    assert np.all((0 <= new_row) & (new_row < height) & (0 <= new_col) & (new_col < width))
    for index in range(row.size):
        expected = reference.move(params, int(row[index]), int(col[index]), int(action[index]))
        assert (int(new_row[index]), int(new_col[index])) == expected
