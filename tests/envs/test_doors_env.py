"""``Doors-v0``: Gymnasium's checks, registration, keywords, determinism, pickling and input validation."""

import os
import pickle
import re
import subprocess
import sys
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.error import ResetNeeded
from gymnasium.utils.env_checker import check_env

import doors_gym
from doors_gym.core import AGENT, GOAL
from doors_gym.envs.doors import DoorsEnv


def _run_python(code: str) -> subprocess.CompletedProcess:
    """Runs ``code`` in a fresh interpreter, with the warnings filters of a plain start."""
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONWARNINGS": ""},
    )


def _random_actions(seed: int, count: int) -> list[int]:
    return np.random.default_rng(seed).integers(0, 5, size=count).tolist()


def test_check_env_on_the_unwrapped_env():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(gym.make("Doors-v0").unwrapped)


def test_check_env_on_the_made_env_raises_no_warning_but_its_wrapper_advice():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.filterwarnings("ignore", message=".*is different from the unwrapped version")
        check_env(gym.make("Doors-v0"))


@pytest.mark.parametrize(
    "kwargs",
    [{"grid_size": (9, 21), "n_doors": 4}, {"grid_size": (3, 1), "n_doors": 1}, {"door_cols": (14,)}],
    ids=["9x21", "3x1", "last-column-door"],
)
def test_check_env_on_other_layouts(kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(gym.make("Doors-v0", **kwargs).unwrapped)


def test_importing_the_package_loads_no_heavy_library():
    result = _run_python(
        "import sys, doors_gym\n"
        "print(sorted(m for m in ('jax', 'torch', 'pygame', 'cv2', 'moviepy') if m in sys.modules))"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_module_prefixed_id_works_in_a_fresh_interpreter():
    result = _run_python(
        "import sys, gymnasium as gym\n"
        "assert 'doors_gym' not in sys.modules\n"
        "env = gym.make('doors_gym:Doors-v0')\n"
        "obs, info = env.reset(seed=0)\n"
        "print(type(env.unwrapped).__name__, obs.shape, env.spec.max_episode_steps)"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "DoorsEnv (225,) 60"


def test_every_registered_id_is_registered():
    for env_id in doors_gym.ENV_IDS:
        assert env_id in gym.registry
        assert gym.registry[env_id].max_episode_steps == 60
    env = gym.make("Doors-v0")
    assert isinstance(env.unwrapped, DoorsEnv)


def test_keywords_reach_the_env():
    env = gym.make("Doors-v0", grid_size=(9, 21), n_doors=4, max_episode_steps=100)
    obs, info = env.reset(seed=0)
    assert obs.shape == (189,)
    assert env.observation_space.shape == (189,)
    params = env.unwrapped.params
    assert params.grid_size == (9, 21)
    assert params.n_doors == 4
    assert params.door_cols == (0, 5, 10, 15)
    for step in range(1, 101):
        _, _, terminated, truncated, _ = env.step(0)
        assert terminated is False
        assert truncated == (step == 100)


def test_spaces_follow_the_spec():
    env = gym.make("Doors-v0")
    space = env.observation_space
    assert isinstance(space, gym.spaces.MultiDiscrete)
    assert space.shape == (225,)
    assert space.dtype == np.int16
    np.testing.assert_array_equal(space.nvec, np.full(225, 4))
    assert env.action_space == gym.spaces.Discrete(5)


def _rollout(env, seed: int, actions: list[int]) -> list[tuple]:
    records = []
    obs, info = env.reset(seed=seed)
    records.append(("reset", obs.tolist(), info))
    for action in actions:
        obs, reward, terminated, truncated, info = env.step(action)
        records.append((obs.tolist(), reward, terminated, truncated, info))
        if terminated or truncated:
            obs, info = env.reset()
            records.append(("reset", obs.tolist(), info))
    return records


def test_same_seed_gives_the_same_episodes():
    actions = _random_actions(0, 400)
    first = _rollout(gym.make("Doors-v0"), 42, actions)
    second = _rollout(gym.make("Doors-v0"), 42, actions)
    assert first == second
    assert sum(record[0] == "reset" for record in first) >= 2


def test_different_seeds_give_different_starts():
    def starts(seed):
        env = DoorsEnv()
        observations = [env.reset(seed=seed)[0].tolist()]
        observations += [env.reset()[0].tolist() for _ in range(9)]
        return observations

    assert starts(1) != starts(2)
    assert len({tuple(obs) for obs in starts(1) + starts(2)}) > 5


@pytest.mark.parametrize("render_mode", [None, "rgb_array", "ansi", "human"])
def test_pickle_round_trip_continues_identically(render_mode):
    env = gym.make("Doors-v0", render_mode=render_mode)
    # A human window waits 1 / render_fps per frame: keep those rollouts short.
    num_actions = 3 if render_mode == "human" else 150
    env.reset(seed=5)
    for action in _random_actions(1, num_actions):
        env.step(action)
    if render_mode is not None:
        env.render()
    copy = pickle.loads(pickle.dumps(env))
    actions = _random_actions(2, num_actions)
    try:
        assert _continue(env, actions) == _continue(copy, actions)
    finally:
        env.close()
        copy.close()


def _continue(env, actions):
    records = []
    for action in actions:
        obs, reward, terminated, truncated, info = env.step(action)
        records.append((obs.tolist(), reward, terminated, truncated, info))
        if terminated or truncated:
            obs, info = env.reset()
            records.append((obs.tolist(), info))
    return records


def test_observations_never_alias_internal_state():
    env = gym.make("Doors-v0")
    obs, _ = env.reset(seed=0, options={"agent_pos": (14, 3), "goal_pos": (0, 3)})
    reset_copy = obs.copy()
    obs[:] = 3
    next_obs, _, _, _, _ = env.step(0)
    np.testing.assert_array_equal(next_obs, reset_copy)
    assert next_obs is not obs
    following, _, _, _, _ = env.step(0)
    assert following is not next_obs
    assert not np.shares_memory(following, next_obs)
    following[:] = 0
    np.testing.assert_array_equal(env.step(0)[0], reset_copy)


def test_state_is_a_snapshot_and_set_state_round_trips():
    env = DoorsEnv()
    env.reset(seed=3)
    for action in _random_actions(4, 7):
        env.step(action)
    state = env.state
    obs_at_state = env.step(0)[0]
    for action in _random_actions(5, 5):
        env.step(action)
    assert env.state != state
    restored = env.set_state(state)
    assert env.state == state
    np.testing.assert_array_equal(restored, obs_at_state)


def test_reset_options_place_agent_and_goal_and_reject_bad_cells():
    env = DoorsEnv()
    obs, info = env.reset(options={"agent_pos": (9, 2), "goal_pos": (3, 11)})
    grid = obs.reshape(15, 15)
    assert grid[9, 2] == AGENT and grid[3, 11] == GOAL
    assert info["distance"] == np.float32(np.hypot(6, 9))
    for options, word in [
        ({"agent_pos": (7, 3)}, "wall"),
        ({"goal_pos": (15, 0)}, "outside"),
        ({"agent_pos": (2, 2), "goal_pos": (2, 2)}, "goal"),
        ({"begin": (1, 1)}, "unknown"),
        ({"start": (1, 1)}, "start=\\(1, 1\\) is not supported"),
        ({"agent_pos": "ab"}, "agent_pos"),
    ]:
        with pytest.raises(ValueError, match=word):
            env.reset(options=options)


@pytest.mark.parametrize("make", [DoorsEnv, lambda: gym.make("Doors-v0")], ids=["unwrapped", "gym.make"])
def test_stepping_before_reset_raises_reset_needed(make):
    env = make()
    with pytest.raises(ResetNeeded):
        env.step(0)


def test_state_and_render_before_reset_raise_reset_needed():
    env = DoorsEnv(render_mode="rgb_array")
    with pytest.raises(ResetNeeded):
        env.state  # noqa: B018
    with pytest.raises(ResetNeeded):
        env.render()


BAD_ACTIONS = [5, -1, 2.0, "up", None, True, False, np.float32(1), np.array([1]), np.int64(7), np.array(9), 1 + 0j]


@pytest.mark.parametrize("action", BAD_ACTIONS, ids=[repr(action) for action in BAD_ACTIONS])
@pytest.mark.parametrize("make", [DoorsEnv, lambda: gym.make("Doors-v0")], ids=["unwrapped", "gym.make"])
def test_bad_actions_raise_errors_naming_the_value_and_the_valid_range(make, action):
    env = make()
    obs, _ = env.reset(seed=0)
    with pytest.raises((TypeError, ValueError)) as error:
        env.step(action)
    message = str(error.value)
    assert repr(action) in message
    assert "0..4" in message
    # A rejected action leaves the episode where it was.
    np.testing.assert_array_equal(env.step(0)[0], obs)


@pytest.mark.parametrize(
    "action",
    [np.int64(1), np.int8(1), np.uint8(1), np.int32(1), np.array(1), np.array(1, dtype=np.uint16)],
    ids=["int64", "int8", "uint8", "int32", "0-d int64", "0-d uint16"],
)
def test_numpy_integer_actions_are_accepted(action):
    reference_env, env = DoorsEnv(), DoorsEnv()
    reference_env.reset(seed=0, options={"agent_pos": (14, 3)})
    env.reset(seed=0, options={"agent_pos": (14, 3)})
    expected = reference_env.step(1)
    result = env.step(action)
    np.testing.assert_array_equal(result[0], expected[0])
    assert result[1:] == expected[1:]
    assert result[0].reshape(15, 15)[14, 4] == AGENT


@pytest.mark.parametrize(
    "make", [DoorsEnv, lambda **kwargs: gym.make("Doors-v0", **kwargs)], ids=["unwrapped", "gym.make"]
)
def test_bad_render_mode_raises_value_error(make):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # gym.make warns about the unknown mode before the env raises
        with pytest.raises(ValueError, match=re.escape("render_mode='foo'")):
            make(render_mode="foo")


@pytest.mark.parametrize("cell_pixels", [0, 1000, 2.5, -4, True])
def test_bad_cell_pixels_raise_value_error(cell_pixels):
    with pytest.raises(ValueError, match=re.escape(f"cell_pixels={cell_pixels!r}")):
        DoorsEnv(render_mode="rgb_array", cell_pixels=cell_pixels)


@pytest.mark.parametrize("colors", [{7: (1, 2, 3)}, {3: (256, 0, 0)}, {3: (1, 2)}, {1: (-1, 0, 0)}])
def test_bad_colors_raise_value_error(colors):
    with pytest.raises(ValueError, match="colors"):
        DoorsEnv(render_mode="rgb_array", colors=colors)


def test_render_without_mode_warns_and_returns_none():
    env = DoorsEnv()
    env.reset(seed=0)
    with pytest.warns(UserWarning, match="render"):
        assert env.render() is None
