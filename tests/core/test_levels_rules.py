"""The rules of the levels (SPEC.md, "Levels") on hand-built situations: several walls, an episode's own doors."""

import numpy as np
import pytest

from doors_gym import core
from doors_gym.core import AGENT, GOAL, WALL, DoorsParams, DoorsState

STAY, RIGHT, DOWN, LEFT, UP = range(5)
THREE_WALLS = DoorsParams(n_walls=3, n_doors=2, doors="random")  # walls at rows 3, 7 and 11 of 15
DOORS = np.array([[0, 14], [5, 6], [2, 9]], dtype=np.int32)
"""One episode's doors: wall 0 (row 3) open at columns 0 and 14, wall 1 (row 7) at 5 and 6, wall 2 (row 11) at 2, 9."""

# (name, agent (row, col), action, expected agent after the step), on THREE_WALLS with DOORS
CASES = [
    ("bump into wall 2 from below", (12, 3), UP, (12, 3)),
    ("through wall 2's door", (12, 2), UP, (11, 2)),
    ("out of wall 2's door", (11, 9), UP, (10, 9)),
    ("sideways inside a door into the wall", (11, 9), RIGHT, (11, 9)),
    ("bump into wall 1 from above", (6, 2), DOWN, (6, 2)),
    ("wall 1's door from above", (6, 6), DOWN, (7, 6)),
    ("along wall 1's two adjacent doors", (7, 5), RIGHT, (7, 6)),
    ("wall 0 at a column that is a door of another wall", (4, 5), UP, (4, 5)),
    ("wall 0's edge door", (4, 14), UP, (3, 14)),
    ("edge", (4, 14), RIGHT, (4, 14)),
    ("free row between walls", (9, 4), DOWN, (10, 4)),
]


@pytest.mark.parametrize(("name", "agent", "action", "expected"), CASES, ids=[case[0] for case in CASES])
def test_moves_against_an_episodes_own_walls(name, agent, action, expected):
    row, col = core.move(THREE_WALLS, np.int32(agent[0]), np.int32(agent[1]), np.int32(action), doors=DOORS)
    assert (int(row), int(col)) == expected


def test_a_batch_of_episodes_moves_each_against_its_own_doors():
    other = np.array([[3, 4], [0, 1], [12, 13]], dtype=np.int32)
    rows, cols = core.move(THREE_WALLS, np.int32([12, 12]), np.int32([2, 2]), np.int32([UP, UP]),
                           doors=np.stack([DOORS, other]))
    assert rows.tolist() == [11, 12] and cols.tolist() == [2, 2]


def test_the_episode_grid_shows_its_walls_and_doors():
    mask = core.wall_mask(THREE_WALLS, DOORS)
    assert mask.shape == (15, 15) and mask.dtype == bool
    assert np.flatnonzero(mask.any(axis=1)).tolist() == [3, 7, 11]
    for wall, row in enumerate((3, 7, 11)):
        assert np.flatnonzero(~mask[row]).tolist() == DOORS[wall].tolist()
    state = DoorsState(*(np.int32(v) for v in (14, 4, 0, 9, 0)), doors=DOORS)
    grid = core.grid_observation(THREE_WALLS, state).reshape(15, 15)
    np.testing.assert_array_equal(grid == WALL, mask)
    assert grid[14, 4] == AGENT and grid[0, 9] == GOAL
    batch = core.wall_mask(THREE_WALLS, np.stack([DOORS, DOORS[::-1]]))
    assert batch.shape == (2, 15, 15) and (batch[1, 3] == mask[11]).all()


def test_fixed_doors_are_the_door_columns_on_every_wall():
    params = DoorsParams(n_walls=3, door_cols=(1, 8))
    np.testing.assert_array_equal(params.fixed_doors, [[1, 8]] * 3)
    np.testing.assert_array_equal(core.wall_mask(params), core.wall_mask(params, params.fixed_doors))
    assert params.wall_rows == (3, 7, 11) and params.max_episode_steps == 4 * 30


def test_defaults_follow_the_spec():
    assert DoorsParams().max_episode_steps == 60 and DoorsParams().wall_row == 7
    assert DoorsParams(grid_size=(31, 31), n_walls=3).max_episode_steps == 248
    assert DoorsParams(grid_size=(4, 7)).max_episode_steps == 22  # 2 * (H + W): one wall
    assert DoorsParams(grid_size=(63, 63)).cell_pixels == 10 and DoorsParams().cell_pixels == 16
    assert DoorsParams(doors="random").door_cols is None


@pytest.mark.parametrize("name", ["layout", "door_mask", "fixed_doors"])
def test_fixed_layout_properties_refuse_random_doors(name):
    with pytest.raises(ValueError, match=f"DoorsParams.{name} is undefined with doors='random'"):
        getattr(THREE_WALLS, name)


def test_door_sets_are_sorted_distinct_and_cover_every_subset():
    rng = np.random.default_rng(0)
    params = DoorsParams(grid_size=(5, 4), n_doors=2, doors="random")
    doors = core.sample_doors(params, rng, (3000,))
    assert doors.shape == (3000, 1, 2) and doors.dtype == np.int32
    assert (doors[..., 1] > doors[..., 0]).all()
    subsets, counts = np.unique(doors[:, 0], axis=0, return_counts=True)
    assert len(subsets) == 6 and counts.min() > 400  # all C(4, 2) = 6 sets, about 500 each


def test_initial_state_needs_doors_exactly_when_they_are_random():
    with pytest.raises(ValueError, match="expected an array of door columns exactly when the doors are random"):
        core.initial_state(THREE_WALLS, 3, 4)
    with pytest.raises(ValueError, match="exactly when the doors are random"):
        core.initial_state(DoorsParams(), 3, 4, doors=DOORS)
    state = core.initial_state(THREE_WALLS, 3, 4, doors=DOORS)
    np.testing.assert_array_equal(state.doors, DOORS)
