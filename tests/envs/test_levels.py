"""The registered levels (SPEC.md, "Levels"): every id builds, passes ``check_env``, is deterministic per seed,
pickles, renders in every mode and records video; every shell refuses bad layouts in one clear error."""

from __future__ import annotations

import pickle

import gymnasium as gym
import numpy as np
import pytest
from stacks import needs
from gymnasium.utils.env_checker import check_env

import doors_gym
from doors_gym import core
from doors_gym.levels import LEVEL_NAMES, LEVELS, get_level

SPEC_TABLE = {
    # level: ids, grid, walls, doors per wall, doors, time limit (SPEC.md's table, written out by hand)
    "study": (("Doors-v0", "DoorsJax-v0"), (15, 15), 1, 3, "fixed", 60),
    "Random": (("Doors-Random-v0", "DoorsJax-Random-v0"), (15, 15), 1, 3, "random", 60),
    "3Walls": (("Doors-3Walls-v0", "DoorsJax-3Walls-v0"), (15, 15), 3, 1, "random", 120),
    "31x31": (("Doors-31x31-v0", "DoorsJax-31x31-v0"), (31, 31), 3, 2, "random", 248),
    "63x63": (("Doors-63x63-v0", "DoorsJax-63x63-v0"), (63, 63), 3, 3, "random", 504),
}
ALL_IDS = [*doors_gym.NUMPY_ENV_IDS, *doors_gym.JAX_ENV_IDS, *doors_gym.FLAT_ENV_IDS]


def skip_without_jax(env_id: str) -> None:
    if env_id.startswith("DoorsJax"):
        needs("jax")


def flat_ids(level) -> tuple[str, str]:
    return level.flat_env_id, level.jax_flat_env_id


def test_the_table_is_specs():
    assert LEVEL_NAMES == tuple(SPEC_TABLE)
    for level in LEVELS:
        ids, grid, walls, doors_per_wall, doors, limit = SPEC_TABLE[level.name]
        assert (level.env_id, level.jax_env_id) == ids
        assert (level.grid_size, level.n_walls, level.n_doors, level.doors) == (grid, walls, doors_per_wall, doors)
        assert level.max_episode_steps == limit
        for env_id in ids:
            assert gym.spec(env_id).max_episode_steps == limit
    assert get_level("63x63") is LEVELS[-1]


def test_an_unknown_level_names_the_known_ones():
    with pytest.raises(ValueError, match=r"level='15x15' is unknown: expected one of \['study', 'Random'"):
        get_level("15x15")


def test_a_level_refuses_a_layout_keyword_beside_it_and_names_each():
    level = get_level("3Walls")
    level.check_alone({})  # nothing beside it
    level.check_alone({"grid_size": [15, 15], "n_walls": None, "doors": None, "n_doors": None, "door_cols": None})
    level.check_alone({"max_episode_steps": 50})  # the time limit is the command's to refuse or keep
    with pytest.raises(ValueError, match=r"level='3Walls' sets the layout: grid_size=\(9, 9\), n_doors=2, "
                       r"door_cols=\[1, 5\] cannot be given beside it"):  # fmt: skip
        level.check_alone({"grid_size": [9, 9], "n_doors": 2, "door_cols": [1, 5]})
    with pytest.raises(ValueError, match=r"level='study' sets the layout: n_walls=2, doors='random' cannot"):
        get_level("study").check_alone({"n_walls": 2, "doors": "random"})


def test_wall_rows_follow_the_spec():
    assert core.wall_rows(15, 1) == (7,)
    assert core.wall_rows(15, 3) == (3, 7, 11)
    assert get_level("63x63").params().wall_rows == (15, 31, 47)


@pytest.mark.parametrize("env_id", ALL_IDS)
def test_every_id_passes_check_env_and_is_deterministic_per_seed(env_id):
    skip_without_jax(env_id)
    env = gym.make(env_id)
    check_env(env.unwrapped, skip_render_check=True)
    level = next(level for level in LEVELS if env_id in (level.env_id, level.jax_env_id, *flat_ids(level)))
    params = env.unwrapped.params
    assert (params.grid_size, params.n_walls, params.n_doors, params.doors) == tuple(level.keywords.values())
    assert env.spec.max_episode_steps == level.max_episode_steps
    runs = []
    for _ in range(2):
        obs, _ = env.reset(seed=11)
        trace = [obs]
        for action in [4, 1, 4, 3, 4, 4, 2, 4] * 3:
            obs, reward, terminated, truncated, _ = env.step(action)
            trace += [obs, np.float32(reward)]
        runs.append(trace)
    for first, second in zip(*runs):
        np.testing.assert_array_equal(first, second)
    assert env.observation_space.contains(runs[0][0])


@pytest.mark.parametrize("level", LEVELS[1:], ids=lambda level: level.name)
def test_random_levels_draw_new_doors_per_episode_and_keep_them_within_one(level):
    env = gym.make(level.env_id).unwrapped
    layouts = set()
    for seed in range(8):
        env.reset(seed=seed)
        doors = env.state.doors
        assert doors.shape == (level.n_walls, level.n_doors) and doors.dtype == np.int32
        assert (np.diff(doors, axis=-1) > 0).all() and doors.min() >= 0 and doors.max() < level.grid_size[1]
        grid = env._grid()
        wall_rows = env.params.wall_rows
        np.testing.assert_array_equal(np.flatnonzero((grid == core.WALL).any(axis=1)), wall_rows)
        for wall, row in enumerate(wall_rows):
            np.testing.assert_array_equal(np.flatnonzero(grid[row] != core.WALL), doors[wall])
        for action in (4, 1, 3, 4, 2):
            env.step(action)
            np.testing.assert_array_equal(env.state.doors, doors)
        layouts.add(doors.tobytes())
    assert len(layouts) > 1


def test_the_vector_env_of_a_seed_draws_what_the_single_env_of_that_seed_draws():
    envs = gym.make_vec("Doors-3Walls-v0", 4)
    obs, _ = envs.reset(seed=40)
    for index in range(4):
        single, _ = gym.make("Doors-3Walls-v0").reset(seed=40 + index)
        np.testing.assert_array_equal(obs[index], single)


@pytest.mark.parametrize("env_id", ["Doors-63x63-v0", "Doors-31x31-Flat-v0", "DoorsJax-3Walls-v0"])
def test_pickling_a_random_level_continues_identically(env_id):
    skip_without_jax(env_id)
    env = gym.make(env_id)
    env.reset(seed=3)
    env.step(4)
    copy = pickle.loads(pickle.dumps(env))
    for action in (4, 1, 1, 4, 3):
        first, second = env.step(action), copy.step(action)
        np.testing.assert_array_equal(first[0], second[0])
        assert first[1:4] == second[1:4]


@pytest.mark.parametrize("env_id", [level.env_id for level in LEVELS] + ["DoorsJax-63x63-v0"])
def test_render_modes_at_every_size(env_id):
    skip_without_jax(env_id)
    params = gym.make(env_id).unwrapped.params
    frame = gym.make(env_id, render_mode="rgb_array")
    frame.reset(seed=0)
    image = frame.render()
    side = {15: 16, 31: 16, 63: 10}[params.height]  # the default cell size: frames of at most 640 pixels a side
    assert image.shape == (params.height * side, params.width * side, 3) and image.dtype == np.uint8
    text = gym.make(env_id, render_mode="ansi")
    text.reset(seed=0)
    rows = text.render().splitlines()
    assert len(rows) == params.height and all(len(row) == params.width for row in rows)
    assert [index for index, row in enumerate(rows) if "#" in row] == list(params.wall_rows)
    vector = gym.make_vec(env_id, 2, render_mode="rgb_array")
    vector.reset(seed=0)
    assert all(frame.shape == image.shape for frame in vector.render())


@pytest.mark.parametrize("suffix", [".mp4", ".gif"])
def test_video_of_the_largest_level(tmp_path, suffix):
    needs("cv2")
    from doors_gym.rendering import read_video_frame_count, write_video

    env = gym.make("Doors-63x63-v0", render_mode="rgb_array", cell_pixels=3)  # odd sides: 189 x 189
    env.reset(seed=0)
    frames = [env.render()]
    for action in (4, 4, 1):
        env.step(action)
        frames.append(env.render())
    assert frames[0].shape == (189, 189, 3)
    path = write_video(frames, tmp_path / f"level{suffix}")
    assert read_video_frame_count(path) == len(frames)


def test_flat_observations_are_the_onehot_planes_row_major():
    flat = gym.make("Doors-Random-Flat-v0")
    onehot = gym.make("Doors-Random-v0", obs_mode="onehot")
    assert flat.observation_space == gym.spaces.Box(0.0, 1.0, (15 * 15 * 4,), np.float32)
    for env in (flat, onehot):
        env.reset(seed=9)
    for action in (4, 4, 1, 4):
        flat_obs, onehot_obs = flat.step(action)[0], onehot.step(action)[0]
        assert flat_obs.dtype == np.float32 and flat_obs.shape == (900,)
        np.testing.assert_array_equal(flat_obs, onehot_obs.reshape(-1).astype(np.float32))
        assert flat_obs.reshape(225, 4).sum(axis=1).tolist() == [1.0] * 225


BAD_LAYOUTS = [
    ({"n_walls": 8}, r"n_walls=8 is too many for grid_size=\(15, 15\): expected H >= 2 \* n_walls \+ 1"),
    ({"n_walls": 0}, r"n_walls=0 is invalid: expected an integer >= 1"),
    ({"n_walls": 2.0}, r"n_walls=2.0 is invalid"),
    ({"doors": "shuffled"}, r"doors='shuffled' is not supported: expected one of \['fixed', 'random'\]"),
    ({"doors": "random", "door_cols": (1, 2)}, r"door_cols=\(1, 2\) contradicts doors='random'"),
    ({"doors": "random", "obs_mode": "coords"}, r"obs_mode='coords' contradicts doors='random'"),
    ({"grid_size": (91, 91)}, r"grid_size=\(91, 91\) is out of range: H \* W = 8281 cells, expected at most 8191"),
]
BAD_IDS = ["too-many-walls", "no-walls", "float-walls", "unknown-doors", "door-cols-random", "coords-random", "int16"]


@pytest.mark.parametrize(("keywords", "message"), BAD_LAYOUTS, ids=BAD_IDS)
def test_bad_layouts_are_one_value_error_at_every_shell(keywords, message):
    from doors_gym.core import DoorsParams

    shells = {
        "DoorsParams": lambda: DoorsParams(**keywords),
        "make": lambda: gym.make("Doors-v0", **keywords),
        "make_vec": lambda: gym.make_vec("Doors-v0", 2, **keywords),
        "make level": lambda: gym.make("Doors-Random-v0", **{"doors": "fixed", **keywords}),
    }
    if keywords.get("doors") != "random":
        del shells["make level"]  # a random level with explicit door_cols or coords says it the same way
    try:
        import jax  # noqa: F401

        from doors_gym.jax import DoorsGymnax

        shells.update(
            {
                "DoorsGymnax": lambda: DoorsGymnax(**keywords),
                "make jax": lambda: gym.make("DoorsJax-v0", **keywords),
                "make_vec jax": lambda: gym.make_vec("DoorsJax-v0", 2, **keywords),
            }
        )
    except ImportError:
        pass
    for shell, build in shells.items():
        with pytest.raises(ValueError, match=message) as caught:
            build()
        assert len(str(caught.value).splitlines()) == 1, shell


def test_a_random_level_refuses_coords_and_door_cols_by_id():
    with pytest.raises(ValueError, match="obs_mode='coords' contradicts doors='random'"):
        gym.make("Doors-31x31-v0", obs_mode="coords")
    with pytest.raises(ValueError, match=r"door_cols=\(0,\) contradicts doors='random'"):
        gym.make_vec("Doors-3Walls-v0", 2, door_cols=(0,))
