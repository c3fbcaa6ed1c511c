"""Observation variants (``obs_mode``): spaces, check_env with warnings as errors, values, bad values."""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest
from stacks import needs
from gymnasium.utils.env_checker import check_env

from doors_gym import core
from doors_gym.core import AGENT, GOAL, OBS_MODES, WALL
from doors_gym.pixels import DEFAULT_COLORS

ENV_IDS = ["Doors-v0", "DoorsJax-v0"]


def make(env_id: str, **kwargs):
    if env_id == "DoorsJax-v0":
        needs("jax")
    return gym.make(env_id, **kwargs)


@pytest.mark.parametrize("obs_mode", OBS_MODES)
@pytest.mark.parametrize("env_id", ENV_IDS)
def test_every_variant_passes_check_env_with_warnings_as_errors(env_id, obs_mode):
    env = make(env_id, obs_mode=obs_mode, cell_pixels=4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(env.unwrapped, skip_render_check=True)
    env.close()


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_spaces_and_dtypes_of_each_variant(env_id):
    height, width, pixels = 9, 21, 3
    expected = {
        "grid": (gym.spaces.MultiDiscrete, (height * width,), np.int16),
        "onehot": (gym.spaces.MultiBinary, (height, width, 4), np.int8),
        "rgb": (gym.spaces.Box, (height * pixels, width * pixels, 3), np.uint8),
        "coords": (gym.spaces.MultiDiscrete, (4,), np.int16),
    }
    for mode, (kind, shape, dtype) in expected.items():
        env = make(env_id, obs_mode=mode, grid_size=(height, width), n_doors=4, cell_pixels=pixels)
        space = env.observation_space
        assert isinstance(space, kind) and space.shape == shape and space.dtype == dtype
        obs, _ = env.reset(seed=3)
        assert isinstance(obs, np.ndarray) and obs.shape == shape and obs.dtype == dtype
        assert space.contains(obs)
    coords_space = make(env_id, obs_mode="coords", grid_size=(height, width)).observation_space
    np.testing.assert_array_equal(coords_space.nvec, [height, width, height, width])
    assert coords_space.nvec.dtype == np.int16


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_variants_describe_the_same_state(env_id):
    envs = {mode: make(env_id, obs_mode=mode, cell_pixels=2, render_mode="rgb_array") for mode in OBS_MODES}
    observations = {mode: env.reset(seed=11)[0] for mode, env in envs.items()}
    grid = observations["grid"].reshape(15, 15)
    agent, goal = np.argwhere(grid == AGENT)[0], np.argwhere(grid == GOAL)[0]
    np.testing.assert_array_equal(observations["coords"], [*agent, *goal])
    onehot = observations["onehot"]
    assert (onehot.sum(axis=-1) == 1).all()
    np.testing.assert_array_equal(onehot.argmax(axis=-1), grid)
    assert onehot[..., WALL].sum() == 15 - 3
    # The rgb observation is the rgb_array frame.
    np.testing.assert_array_equal(observations["rgb"], envs["rgb"].render())


def test_a_bad_obs_mode_names_the_value_and_the_choices():
    with pytest.raises(ValueError) as caught:
        gym.make("Doors-v0", obs_mode="pixels")
    message = str(caught.value)
    assert "obs_mode='pixels'" in message
    for mode in OBS_MODES:
        assert repr(mode) in message
    jax = needs("jax")  # noqa: F841
    with pytest.raises(ValueError, match="obs_mode='pixels'"):
        gym.make_vec("DoorsJax-v0", 2, obs_mode="pixels")


def test_the_goal_stays_visible_in_the_last_frame():
    env = gym.make("Doors-v0", render_mode="rgb_array", obs_mode="rgb", cell_pixels=8)
    env.reset(options={"agent_pos": (1, 4), "goal_pos": (0, 4)})
    obs, _, terminated, _, _ = env.step(core.UP)
    assert terminated
    frame = env.render()
    np.testing.assert_array_equal(obs, frame)
    tile = frame[0:8, 32:40]
    palette = DEFAULT_COLORS
    assert tuple(tile[0, 0]) == palette[GOAL] and tuple(tile[7, 7]) == palette[GOAL]  # the goal's border
    assert tuple(tile[4, 4]) == palette[AGENT]  # the agent inside it
    # Before the goal is reached the agent's tile is plain.
    env.reset(options={"agent_pos": (1, 4), "goal_pos": (0, 4)})
    frame = env.render()
    assert (frame[8:16, 32:40] == palette[AGENT]).all() and (frame[0:8, 32:40] == palette[GOAL]).all()


def test_largest_grid_spaces_do_not_overflow_in_clients():
    """``sum(nvec)`` (Stable-Baselines3), Gymnasium's flatten/unflatten offsets and one-hot sizes stay exact."""
    for grid_size in ((3, core.MAX_CELLS // 3), (91, 90)):
        assert grid_size[0] * grid_size[1] <= core.MAX_CELLS
        env = gym.make("Doors-v0", grid_size=grid_size, n_doors=1)
        space = env.observation_space
        cells = grid_size[0] * grid_size[1]
        total = sum(space.nvec)  # Python's sum over numpy scalars of the space's dtype
        assert total == 4 * cells > 0
        assert np.cumsum(space.nvec, dtype=space.dtype)[-1] == 4 * cells
        assert gym.spaces.flatdim(space) == 4 * cells
        obs, _ = env.reset(seed=0)
        flat = gym.spaces.flatten(space, obs)
        assert flat.shape == (4 * cells,) and flat.sum() == cells
        np.testing.assert_array_equal(gym.spaces.unflatten(space, flat), obs)
    with pytest.raises(ValueError, match=f"at most {core.MAX_CELLS}"):
        gym.make("Doors-v0", grid_size=(92, 90))
