"""The rules of SPEC.md on hand-built situations, through ``doors_gym.core`` and through ``DoorsEnv``."""

import math
import re

import gymnasium as gym
import numpy as np
import pytest

from doors_gym import core
from doors_gym.core import AGENT, EMPTY, GOAL, WALL, DoorsParams
from doors_gym.envs.doors import DoorsEnv

STAY, RIGHT, DOWN, LEFT, UP = range(5)
HEIGHT = WIDTH = 15
WALL_ROW = 7
BOTTOM = HEIGHT - 1

# (name, agent (row, col), goal (row, col), action, expected agent after the step)
MOVE_CASES = [
    ("wall bump from row 8", (8, 3), (0, 3), UP, (8, 3)),
    ("wall bump from row 6", (6, 12), (14, 12), DOWN, (6, 12)),
    ("left edge", (BOTTOM, 0), (0, 7), LEFT, (BOTTOM, 0)),
    ("right edge", (BOTTOM, WIDTH - 1), (0, 7), RIGHT, (BOTTOM, WIDTH - 1)),
    ("bottom edge", (BOTTOM, 7), (0, 7), DOWN, (BOTTOM, 7)),
    ("top edge", (0, 7), (0, 3), UP, (0, 7)),
    ("top-left corner, left", (0, 0), (0, 3), LEFT, (0, 0)),
    ("stay", (10, 4), (0, 7), STAY, (10, 4)),
    ("right", (10, 4), (0, 7), RIGHT, (10, 5)),
    ("down", (10, 4), (0, 7), DOWN, (11, 4)),
    ("left", (10, 4), (0, 7), LEFT, (10, 3)),
    ("up", (10, 4), (0, 7), UP, (9, 4)),
    ("along row 8 under the wall", (8, 3), (0, 3), RIGHT, (8, 4)),
]
for door in (0, 5, 10):
    MOVE_CASES += [
        (f"door {door}: up into the door", (8, door), (0, 7), UP, (WALL_ROW, door)),
        (f"door {door}: up out of the door", (WALL_ROW, door), (0, 7), UP, (6, door)),
        (f"door {door}: down into the door", (6, door), (14, 7), DOWN, (WALL_ROW, door)),
        (f"door {door}: down out of the door", (WALL_ROW, door), (14, 7), DOWN, (8, door)),
        (f"door {door}: sideways into the wall, left", (WALL_ROW, door), (0, 7), LEFT, (WALL_ROW, door)),
        (f"door {door}: sideways into the wall, right", (WALL_ROW, door), (0, 7), RIGHT, (WALL_ROW, door)),
    ]
MOVE_IDS = [case[0] for case in MOVE_CASES]


@pytest.mark.parametrize(("name", "agent", "goal", "action", "expected"), MOVE_CASES, ids=MOVE_IDS)
def test_core_move_on_hand_built_situations(name, agent, goal, action, expected):
    params = DoorsParams()
    row, col = core.move(params, np.int32(agent[0]), np.int32(agent[1]), np.int32(action))
    assert (int(row), int(col)) == expected


@pytest.mark.parametrize(("name", "agent", "goal", "action", "expected"), MOVE_CASES, ids=MOVE_IDS)
def test_env_step_on_hand_built_situations(name, agent, goal, action, expected):
    env = DoorsEnv()
    obs, info = env.reset(seed=0, options={"agent_pos": agent, "goal_pos": goal})
    assert obs.reshape(HEIGHT, WIDTH)[agent] == AGENT
    assert info["distance"] == pytest.approx(math.hypot(goal[0] - agent[0], goal[1] - agent[1]), abs=1e-5)

    obs, reward, terminated, truncated, info = env.step(action)

    grid = obs.reshape(HEIGHT, WIDTH)
    assert np.argwhere(grid == AGENT).tolist() == [list(expected)]
    assert grid[goal] == GOAL
    expected_reward = np.float32(
        np.float32(math.hypot(goal[0] - agent[0], goal[1] - agent[1]))
        - np.float32(math.hypot(goal[0] - expected[0], goal[1] - expected[1]))
    )
    assert reward == expected_reward
    if expected == agent:
        assert reward == 0.0
    assert info["distance"] == np.float32(math.hypot(goal[0] - expected[0], goal[1] - expected[1]))
    assert terminated is False
    assert truncated is False


def test_moving_into_the_wall_from_row_8_at_every_non_door_column_stays():
    env = DoorsEnv()
    for col in range(WIDTH):
        obs, _ = env.reset(options={"agent_pos": (8, col), "goal_pos": (0, col)})
        obs, reward, terminated, _, _ = env.step(UP)
        expected = (WALL_ROW, col) if col in (0, 5, 10) else (8, col)
        assert np.argwhere(obs.reshape(HEIGHT, WIDTH) == AGENT).tolist() == [list(expected)]
        if col not in (0, 5, 10):
            assert reward == 0.0
            assert obs.reshape(HEIGHT, WIDTH)[WALL_ROW, col] == WALL


def test_every_cell_and_action_matches_the_reference_rules(reference):
    """Exhaustive over the default layout: move, reward and distance agree with SPEC.md written out in Python."""
    params = DoorsParams()
    env = DoorsEnv()
    for goal in [(0, 3), (0, 14), (10, 10)]:
        for row in range(HEIGHT):
            for col in range(WIDTH):
                if (row == WALL_ROW and col not in params.door_cols) or (row, col) == goal:
                    continue
                for action in range(5):
                    env.reset(options={"agent_pos": (row, col), "goal_pos": goal})
                    obs, reward, terminated, _, info = env.step(action)
                    after = reference.move(params, row, col, action)
                    core_after = core.move(params, np.int32(row), np.int32(col), np.int32(action))
                    assert (int(core_after[0]), int(core_after[1])) == after
                    assert obs.reshape(HEIGHT, WIDTH)[after] == AGENT
                    assert reward == reference.reward((row, col), after, goal)
                    assert info["distance"] == reference.distance(*after, *goal)
                    assert terminated == (after == goal)


def test_reaching_the_goal_terminates_with_the_agent_covering_the_goal():
    env = DoorsEnv()
    env.reset(options={"agent_pos": (1, 3), "goal_pos": (0, 3)})
    obs, reward, terminated, truncated, info = env.step(UP)
    assert terminated is True
    assert truncated is False
    assert obs[0 * WIDTH + 3] == AGENT
    assert np.count_nonzero(obs == AGENT) == 1
    assert np.count_nonzero(obs == GOAL) == 0
    assert reward == np.float32(1.0)
    assert info["distance"] == 0.0


def test_core_termination_and_observation_when_the_agent_is_on_the_goal():
    params = DoorsParams()
    state = core.DoorsState(*(np.int32(v) for v in (0, 3, 0, 3, 5)))
    assert bool(core.terminated(state))
    obs = core.observation(params, state)
    assert obs[3] == AGENT
    assert not np.any(obs == GOAL)
    assert obs.dtype == np.int16


@pytest.mark.parametrize(
    ("agent", "goal", "action"),
    [
        ((14, 0), (0, 14), RIGHT),
        ((14, 14), (0, 0), UP),
        ((8, 5), (0, 4), UP),
        ((3, 1), (0, 13), LEFT),
        ((12, 9), (5, 2), DOWN),
    ],
)
def test_reward_is_the_float32_difference_of_distances(agent, goal, action, reference):
    params = DoorsParams()
    after = reference.move(params, *agent, action)
    before_distance = np.float32(np.sqrt(np.float32((goal[0] - agent[0]) ** 2 + (goal[1] - agent[1]) ** 2)))
    after_distance = np.float32(np.sqrt(np.float32((goal[0] - after[0]) ** 2 + (goal[1] - after[1]) ** 2)))
    expected = np.float32(before_distance - after_distance)

    env = DoorsEnv()
    env.reset(options={"agent_pos": agent, "goal_pos": goal})
    _, reward, _, _, _ = env.step(action)
    assert reward == expected

    core_distance_before = core.distance(np.int32(agent[0]), np.int32(agent[1]), np.int32(goal[0]), np.int32(goal[1]))
    core_distance_after = core.distance(np.int32(after[0]), np.int32(after[1]), np.int32(goal[0]), np.int32(goal[1]))
    core_reward = core.reward(core_distance_before, core_distance_after)
    assert core_reward.dtype == np.float32
    assert core_reward == expected


def _steps_until_truncation(env, limit_to_try):
    """Stays in place from a fresh start; returns the step at which ``truncated`` first is True (or None)."""
    env.reset(seed=3)
    for step in range(1, limit_to_try + 1):
        _, _, terminated, truncated, _ = env.step(STAY)
        assert terminated is False
        if truncated:
            return step
    return None


def test_gym_make_truncates_at_exactly_60_steps():
    assert _steps_until_truncation(gym.make("Doors-v0"), 200) == 60


def test_gym_make_max_episode_steps_truncates_at_5():
    assert _steps_until_truncation(gym.make("Doors-v0", max_episode_steps=5), 200) == 5


def test_unwrapped_env_with_a_limit_truncates_at_7():
    assert _steps_until_truncation(DoorsEnv(max_episode_steps=7), 200) == 7


def test_unwrapped_env_without_a_limit_never_truncates():
    assert _steps_until_truncation(DoorsEnv(), 500) is None


def test_core_truncated_follows_the_step_counter():
    params = DoorsParams(max_episode_steps=60)
    times = np.arange(0, 70, dtype=np.int32)
    state = core.DoorsState(times * 0 + 14, times * 0, times * 0, times * 0 + 3, times)
    np.testing.assert_array_equal(core.truncated(params, state), times >= 60)
    unlimited = DoorsParams(max_episode_steps=None)
    assert not np.any(core.truncated(unlimited, state))


def test_core_transition_advances_the_clock_and_moves():
    params = DoorsParams()
    state = core.initial_state(params, np.int32(4), np.int32(9))
    assert (int(state.agent_row), int(state.agent_col), int(state.goal_row), int(state.goal_col), int(state.time)) == (
        14,
        4,
        0,
        9,
        0,
    )
    state = core.transition(params, state, np.int32(UP))
    assert (int(state.agent_row), int(state.agent_col), int(state.time)) == (13, 4, 1)


@pytest.mark.parametrize(
    ("kwargs", "door_cols", "wall_row"),
    [
        ({}, (0, 5, 10), 7),
        ({"grid_size": (9, 21), "n_doors": 4}, (0, 5, 10, 15), 4),
        ({"grid_size": (4, 10), "n_doors": 1}, (0,), 2),
        ({"grid_size": (5, 7), "n_doors": 7}, (0, 1, 2, 3, 4, 5, 6), 2),
        ({"door_cols": (7, 2)}, (2, 7), 7),
        ({"grid_size": (9, 21), "door_cols": [20, 3, 11]}, (3, 11, 20), 4),
        ({"door_cols": (4,), "n_doors": 1}, (4,), 7),
    ],
)
def test_layout_door_columns_and_wall_row(kwargs, door_cols, wall_row):
    params = DoorsParams(**kwargs)
    assert params.door_cols == door_cols
    assert params.n_doors == len(door_cols)
    assert params.wall_row == wall_row
    height, width = params.grid_size
    expected = np.zeros((height, width), dtype=np.int8)
    expected[wall_row, :] = WALL
    expected[wall_row, list(door_cols)] = EMPTY
    np.testing.assert_array_equal(params.layout, expected)

    env = DoorsEnv(**kwargs)
    obs, _ = env.reset(seed=0)
    grid = obs.reshape(height, width)
    np.testing.assert_array_equal(grid[wall_row], expected[wall_row])
    assert env.params.grid_size == params.grid_size
    assert env.params.door_cols == door_cols and env.params.n_doors == len(door_cols)
    assert env.params.max_episode_steps is None


def test_default_door_columns_follow_the_formula():
    for width in range(1, 25):
        for n_doors in range(1, width + 1):
            params = DoorsParams(grid_size=(5, width), n_doors=n_doors)
            assert params.door_cols == tuple(k * (width // n_doors) for k in range(n_doors))
            assert len(set(params.door_cols)) == n_doors


def test_layout_is_a_fresh_array():
    params = DoorsParams()
    layout = params.layout
    layout[:] = 3
    assert np.count_nonzero(params.layout == WALL) == WIDTH - 3


BAD_PARAMS = [
    ({"n_doors": 0}, "n_doors", "0"),
    ({"n_doors": 16}, "n_doors", "16"),
    ({"grid_size": (4, 3), "n_doors": 4}, "n_doors", "4"),
    ({"grid_size": (2, 15)}, "grid_size", "(2, 15)"),
    ({"grid_size": (15, 0)}, "grid_size", "(15, 0)"),
    ({"grid_size": "ab"}, "grid_size", "'ab'"),
    ({"grid_size": (15,)}, "grid_size", "(15,)"),
    ({"grid_size": (15.0, 15)}, "grid_size", "(15.0, 15)"),
    ({"door_cols": (1, 1)}, "door_cols", "(1, 1)"),
    ({"door_cols": (-1, 3)}, "door_cols", "(-1, 3)"),
    ({"door_cols": (0, 15)}, "door_cols", "(0, 15)"),
    ({"door_cols": ()}, "door_cols", "()"),
    ({"n_doors": 2, "door_cols": (1, 4, 7)}, "n_doors", "2"),
    ({"n_doors": 1.5}, "n_doors", "1.5"),
    ({"max_episode_steps": 0}, "max_episode_steps", "0"),
    ({"max_episode_steps": -3}, "max_episode_steps", "-3"),
]


@pytest.mark.parametrize(("kwargs", "keyword", "value"), BAD_PARAMS, ids=[str(case[0]) for case in BAD_PARAMS])
@pytest.mark.parametrize("constructor", [DoorsParams, DoorsEnv], ids=["DoorsParams", "DoorsEnv"])
def test_bad_params_raise_value_error_naming_keyword_and_value(constructor, kwargs, keyword, value):
    with pytest.raises(ValueError, match=re.escape(f"{keyword}={value}")):
        constructor(**kwargs)


def test_contradicting_n_doors_error_names_both_keywords():
    with pytest.raises(ValueError, match=r"n_doors=2.*door_cols=\(1, 4, 7\)"):
        DoorsParams(n_doors=2, door_cols=(1, 4, 7))


def test_out_of_range_errors_state_the_allowed_range():
    with pytest.raises(ValueError, match=r"1 <= n_doors <= W = 15"):
        DoorsParams(n_doors=16)
    with pytest.raises(ValueError, match=r"H must be >= 3"):
        DoorsParams(grid_size=(2, 15))
    with pytest.raises(ValueError, match=re.escape("[0, 15)")):
        DoorsParams(door_cols=(0, 15))


def test_gym_make_passes_bad_keywords_to_the_checks():
    with pytest.raises(ValueError, match=re.escape("n_doors=0")):
        gym.make("Doors-v0", n_doors=0)


def test_params_are_hashable_and_compare_by_layout():
    assert DoorsParams(door_cols=(10, 0, 5)) == DoorsParams()
    assert hash(DoorsParams(door_cols=[10, 0, 5])) == hash(DoorsParams())
    assert DoorsParams(n_doors=4) != DoorsParams()


def test_start_distribution_is_uniform_and_independent():
    """Seeded resets: agent on row H-1, goal on row 0, columns uniform over W and independent."""
    env = DoorsEnv()
    num_resets = 4500
    pairs = np.zeros((WIDTH, WIDTH), dtype=np.int64)
    for seed in range(num_resets):
        obs, info = env.reset(seed=seed)
        grid = obs.reshape(HEIGHT, WIDTH)
        agent_cells = np.argwhere(grid == AGENT)
        goal_cells = np.argwhere(grid == GOAL)
        assert len(agent_cells) == 1 and len(goal_cells) == 1
        (agent_row, agent_col), (goal_row, goal_col) = agent_cells[0], goal_cells[0]
        assert agent_row == HEIGHT - 1
        assert goal_row == 0
        assert info["distance"] == pytest.approx(math.hypot(HEIGHT - 1, agent_col - goal_col), abs=1e-5)
        pairs[agent_col, goal_col] += 1

    def chi_square(counts):
        expected = counts.sum() / counts.size
        return float(((counts - expected) ** 2 / expected).sum())

    agent_counts, goal_counts = pairs.sum(axis=1), pairs.sum(axis=0)
    assert np.all(agent_counts > 0) and np.all(goal_counts > 0)
    # 14 degrees of freedom: mean 14, and 50 lies far in the tail (p < 1e-5).
    assert chi_square(agent_counts) < 50
    assert chi_square(goal_counts) < 50
    # Independence and uniformity of the pair: 224 degrees of freedom, mean 224, sd about 21.
    assert chi_square(pairs) < 224 + 7 * 21
    # Independence: the pair counts against the product of the marginals.
    expected = np.outer(agent_counts, goal_counts) / num_resets
    assert float(((pairs - expected) ** 2 / expected).sum()) < 196 + 7 * 20


def test_same_seed_gives_the_same_start():
    first, second = DoorsEnv(), DoorsEnv()
    for seed in (0, 1, 12345):
        np.testing.assert_array_equal(first.reset(seed=seed)[0], second.reset(seed=seed)[0])


def test_core_start_columns_split_one_draw_into_both_columns():
    params = DoorsParams(grid_size=(5, 7))
    draws = np.arange(49)
    agent_col, goal_col = core.start_columns(params, draws)
    pairs = set(zip(agent_col.tolist(), goal_col.tolist()))
    assert pairs == {(a, g) for a in range(7) for g in range(7)}
