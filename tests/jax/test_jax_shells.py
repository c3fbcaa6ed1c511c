"""The Gymnasium shells of ``DoorsJax-v0``: ``gym.make`` and ``gym.make_vec``."""

from __future__ import annotations

import math
import pickle
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.error import ResetNeeded
from gymnasium.utils.env_checker import check_env
from gymnasium.vector import AutoresetMode

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

import doors_gym  # noqa: E402, F401  (registers the ids)
from doors_gym.core import AGENT, GOAL, STAY, UP, DoorsState  # noqa: E402
from doors_gym.jax import functional as F  # noqa: E402
from doors_gym.jax.shells import DoorsJaxEnv, DoorsJaxVectorEnv  # noqa: E402


def state_tuple(state: DoorsState) -> tuple:
    return tuple(None if v is None else np.asarray(v).tolist() for v in state)


@pytest.mark.parametrize(
    "make_env",
    [
        lambda: gym.make("DoorsJax-v0").unwrapped,
        lambda: gym.make("DoorsJax-v0"),
        lambda: gym.make("DoorsJax-v0", array_type="jax").unwrapped,
    ],
    ids=["unwrapped", "wrapped", "jax-arrays"],
)
def test_check_env_without_warnings(make_env):
    env = make_env()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.filterwarnings("ignore", message=".*is different from the unwrapped version")
        check_env(env)
    env.close()


def test_jax_array_type_returns_jax_arrays():
    # Gymnasium's passive checker expects NumPy arrays: check_env above covers this env.
    env = gym.make("DoorsJax-v0", array_type="jax", disable_env_checker=True)
    obs, _ = env.reset(seed=0)
    assert isinstance(obs, jax.Array) and obs.dtype == jnp.int16
    assert env.unwrapped.metadata["jax"] is True
    obs, reward, terminated, truncated, info = env.step(0)
    assert isinstance(obs, jax.Array)
    numpy_env = gym.make("DoorsJax-v0")
    obs, _ = numpy_env.reset(seed=0)
    assert isinstance(obs, np.ndarray) and obs.dtype == np.int16
    assert numpy_env.unwrapped.metadata["jax"] is False


def test_make_keywords_reach_the_env_and_truncate_at_limit():
    env = gym.make("DoorsJax-v0", grid_size=(9, 21), n_doors=4, max_episode_steps=100)
    params = env.unwrapped.params
    assert params.grid_size == (9, 21) and params.n_doors == 4
    assert params.door_cols == (0, 5, 10, 15)
    assert env.observation_space.shape == (189,)
    obs, info = env.reset(seed=3)
    assert obs.shape == (189,)
    grid = obs.reshape(9, 21)
    assert (grid[4] == 2).sum() == 21 - 4 and (grid[4, [0, 5, 10, 15]] == 0).all()
    for t in range(1, 101):
        obs, reward, terminated, truncated, info = env.step(STAY)
        assert not terminated
        assert truncated == (t == 100), f"truncated={truncated} at step {t}"


def test_unwrapped_env_truncates_by_itself():
    env = DoorsJaxEnv(max_episode_steps=7)
    env.reset(seed=0)
    flags = [env.step(STAY)[3] for _ in range(7)]
    assert flags == [False] * 6 + [True]
    assert env.params.max_episode_steps == 7
    # Without a limit of its own the unwrapped env never truncates.
    env = DoorsJaxEnv()
    env.reset(seed=0)
    assert not any(env.step(STAY)[3] for _ in range(70))


@pytest.mark.parametrize("action", [5, -1, 2.0, "up", None, True])
def test_bad_actions_raise(action):
    env = gym.make("DoorsJax-v0")
    env.reset(seed=0)
    with pytest.raises((TypeError, ValueError), match=r"0\.\.4"):
        env.step(action)


@pytest.mark.parametrize(
    ("keyword", "value"),
    [
        ("n_doors", 0),
        ("grid_size", (2, 15)),
        ("door_cols", (3, 3)),
        ("render_mode", "foo"),
        ("array_type", "torch"),
    ],
)
@pytest.mark.filterwarnings("ignore:.*not in the possible render_modes")
def test_bad_keywords_raise_naming_the_keyword(keyword, value):
    with pytest.raises(ValueError, match=keyword):
        gym.make("DoorsJax-v0", **{keyword: value})
    with pytest.raises(ValueError, match=keyword):
        gym.make_vec("DoorsJax-v0", 2, **{keyword: value})


def test_step_before_reset_raises():
    with pytest.raises(ResetNeeded):
        DoorsJaxEnv().step(0)
    with pytest.raises(ResetNeeded):
        gym.make("DoorsJax-v0").step(0)
    with pytest.raises(ResetNeeded):
        gym.make_vec("DoorsJax-v0", 2).step(np.zeros(2, dtype=np.int64))


def run_episode_prefix(env, seed, actions):
    outputs = [env.reset(seed=seed)]
    outputs += [env.step(action) for action in actions]
    return outputs


def test_same_seed_determinism():
    actions = [4, 4, 1, 3, 2, 0, 4, 4, 4, 1]
    first = run_episode_prefix(gym.make("DoorsJax-v0"), 42, actions)
    second = run_episode_prefix(gym.make("DoorsJax-v0"), 42, actions)
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a[0], b[0])
        assert a[1:] == b[1:]
    env = gym.make("DoorsJax-v0")
    starts = {env.reset(seed=seed)[0].tobytes() for seed in range(20)}
    assert len(starts) > 1


def test_pickle_round_trip():
    env = gym.make("DoorsJax-v0")
    env.reset(seed=0)
    env.step(UP)
    copy = pickle.loads(pickle.dumps(env))
    assert state_tuple(copy.unwrapped.state) == state_tuple(env.unwrapped.state)
    for action in [UP, UP, 1, 3, 0, UP]:
        original, restored = env.step(action), copy.step(action)
        np.testing.assert_array_equal(original[0], restored[0])
        assert original[1:] == restored[1:]


@pytest.mark.parametrize("render_mode", ["rgb_array", "ansi"])
def test_rendering_matches_numpy_env(render_mode):
    np_env = gym.make("Doors-v0", render_mode=render_mode)
    jax_env = gym.make("DoorsJax-v0", render_mode=render_mode)
    np_env.reset(seed=1)
    jax_env.reset(seed=1)
    jax_env.unwrapped.set_state(np_env.unwrapped.state)
    frames = [(np_env.render(), jax_env.render())]
    for action in [UP, UP, 1, 1, UP, 3]:
        np_env.step(action)
        jax_env.step(action)
        frames.append((np_env.render(), jax_env.render()))
    for np_frame, jax_frame in frames:
        if render_mode == "ansi":
            assert isinstance(jax_frame, str) and jax_frame == np_frame
            assert jax_frame.count("A") == 1
        else:
            assert jax_frame.dtype == np.uint8 and jax_frame.shape == (15 * 16, 15 * 16, 3)
            np.testing.assert_array_equal(jax_frame, np_frame)


# Vector env -----------------------------------------------------------------------------


def test_vector_metadata_and_array_types():
    env = gym.make_vec("DoorsJax-v0", 3, array_type="jax")
    assert isinstance(env.unwrapped, DoorsJaxVectorEnv)
    assert env.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP
    assert env.metadata["jax"] is True
    obs, info = env.reset(seed=0)
    assert isinstance(obs, jax.Array) and obs.shape == (3, 225) and obs.dtype == jnp.int16
    out = env.step(np.zeros(3, dtype=np.int64))
    assert all(isinstance(x, jax.Array) for x in (*out[:4], out[4]["distance"], out[4]["_distance"]))
    assert out[1].dtype == jnp.float32 and out[2].dtype == out[3].dtype == jnp.bool_

    # NumPy by default, as gym.make("DoorsJax-v0") and the native Doors-v0 vector env, with the same dtypes.
    for env in (gym.make_vec("DoorsJax-v0", 3), gym.make_vec("DoorsJax-v0", 3, array_type="numpy")):
        assert env.metadata["jax"] is False
        obs, info = env.reset(seed=0)
        assert isinstance(obs, np.ndarray) and obs.dtype == np.int16
        obs, reward, terminated, truncated, info = env.step(np.zeros(3, dtype=np.int64))
        arrays = (obs, reward, terminated, truncated, info["distance"], info["_distance"])
        assert all(isinstance(x, np.ndarray) for x in arrays)
        assert reward.dtype == info["distance"].dtype == np.float64
        assert terminated.dtype == truncated.dtype == np.bool_


def test_vector_reset_step_after_an_end():
    env = gym.make_vec("DoorsJax-v0", 4, max_episode_steps=3)
    env.reset(seed=0)
    env.unwrapped.set_state(
        DoorsState(np.int32(1), np.int32([0, 5, 10, 2]), np.int32(0), np.int32([0, 5, 10, 0]), np.int32(0))
    )
    actions = np.array([UP, UP, UP, STAY])
    _, reward, terminated, truncated, _ = env.step(actions)
    assert np.asarray(terminated).tolist() == [True, True, True, False]
    np.testing.assert_array_equal(np.asarray(reward), np.float32([1, 1, 1, 0]))
    env.step(np.full(4, STAY))
    _, _, terminated, truncated, _ = env.step(np.full(4, STAY))
    assert np.asarray(truncated).tolist() == [False, False, False, True]
    assert not np.asarray(terminated).any()
    # The envs 0..2 restarted on the step after their end, env 3 restarts now.
    obs, reward, terminated, truncated, info = env.step(np.full(4, UP))
    assert float(reward[3]) == 0.0 and not bool(terminated[3]) and not bool(truncated[3])
    state = env.unwrapped.state
    assert int(state.time[3]) == 0 and int(state.agent_row[3]) == 14 and int(state.goal_row[3]) == 0
    grid = np.asarray(obs[3]).reshape(15, 15)
    assert grid[14, int(state.agent_col[3])] == AGENT and grid[0, int(state.goal_col[3])] == GOAL
    expected = math.hypot(14, int(state.agent_col[3]) - int(state.goal_col[3]))
    assert float(info["distance"][3]) == pytest.approx(expected, abs=1e-5)


def test_vector_step_compiles_once():
    """100 steps with NumPy int64 and JAX int32 actions mixed: the step is traced and compiled once."""
    num_envs = 5
    env = gym.make_vec("DoorsJax-v0", num_envs, grid_size=(6, 9), n_doors=2)
    compiles = []

    def listener(event, duration, **kwargs):
        if "_vector_step" in kwargs.get("fun_name", "") and event.endswith(
            ("backend_compile_duration", "jaxpr_trace_duration")
        ):
            compiles.append(event)

    env.reset(seed=0)
    rng = np.random.default_rng(0)
    env.step(rng.integers(0, 5, num_envs))
    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        for t in range(100):
            actions = rng.integers(0, 5, num_envs)
            env.step(jnp.asarray(actions, dtype=jnp.int32) if t % 2 else actions.astype(np.int64))
        assert compiles == []
        # The counter does see compiles: int8 actions are a new signature.
        unwrapped = env.unwrapped
        unwrapped._step_fn(
            unwrapped._key, unwrapped._state, unwrapped._needs_reset, np.zeros(num_envs, np.int8), unwrapped.params
        )
        assert len(compiles) == 2
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)


def test_vector_render_returns_one_frame_per_env():
    num_envs = 3
    env = gym.make_vec("DoorsJax-v0", num_envs, render_mode="rgb_array")
    np_env = gym.make_vec("Doors-v0", num_envs, render_mode="rgb_array")
    np_env.reset(seed=0)
    env.reset(seed=0)
    env.unwrapped.set_state(np_env.unwrapped.state)
    frames = env.render()
    assert isinstance(frames, tuple) and len(frames) == num_envs
    for frame, np_frame in zip(frames, np_env.render()):
        assert frame.shape == (240, 240, 3) and frame.dtype == np.uint8
        np.testing.assert_array_equal(frame, np_frame)
    text_env = gym.make_vec("DoorsJax-v0", num_envs, render_mode="ansi")
    text_env.reset(seed=0)
    texts = text_env.render()
    assert isinstance(texts, tuple) and len(texts) == num_envs and all(t.count("A") == 1 for t in texts)


def test_vector_reset_mask_resets_only_masked_envs():
    env = gym.make_vec("DoorsJax-v0", 4)
    env.reset(seed=0)
    for _ in range(3):
        env.step(np.full(4, UP))
    before = state_tuple(env.unwrapped.state)
    assert before[4] == [3, 3, 3, 3]
    mask = np.array([True, False, True, False])
    obs, info = env.reset(options={"reset_mask": mask})
    after = state_tuple(env.unwrapped.state)
    for index in range(4):
        if mask[index]:
            assert after[4][index] == 0 and after[0][index] == 14 and after[2][index] == 0
        else:
            assert [field[index] for field in after[:5]] == [field[index] for field in before[:5]]
    np.testing.assert_array_equal(np.asarray(obs), np.asarray(F.observation(env.unwrapped.state, env.unwrapped.params)))


def test_vector_set_state_round_trip():
    env = gym.make_vec("DoorsJax-v0", 3, array_type="numpy")
    env.reset(seed=0)
    state = DoorsState(
        np.int32([14, 0, 8]), np.int32([0, 14, 3]), np.int32([0, 14, 6]), np.int32([4, 0, 3]), np.int32([0, 7, 59])
    )
    obs = env.unwrapped.set_state(state)
    assert state_tuple(env.unwrapped.state) == state_tuple(state)
    np.testing.assert_array_equal(obs, np.asarray(F.observation(DoorsState(*map(jnp.asarray, state[:5])))))
    # A masked set_state changes only the masked envs.
    other = DoorsState(np.int32(14), np.int32(1), np.int32(0), np.int32(2), np.int32(5))
    env.unwrapped.set_state(other, np.array([False, True, False]))
    after = state_tuple(env.unwrapped.state)
    assert [field[1] for field in after[:5]] == [14, 1, 0, 2, 5]
    assert [field[0] for field in after[:5]] == [field[0] for field in state_tuple(state)[:5]]
    assert [field[2] for field in after[:5]] == [field[2] for field in state_tuple(state)[:5]]
    with pytest.raises(ValueError, match="wall"):
        env.unwrapped.set_state(DoorsState(np.int32(7), np.int32(1), np.int32(0), np.int32(2), np.int32(0)))


def test_vector_set_state_cancels_a_pending_autoreset():
    env = gym.make_vec("DoorsJax-v0", 2, array_type="numpy")
    env.reset(seed=0)
    env.unwrapped.set_state(DoorsState(np.int32(1), np.int32([0, 5]), np.int32(0), np.int32([0, 5]), np.int32(0)))
    _, _, terminated, _, _ = env.step(np.array([UP, UP]))
    assert terminated.tolist() == [True, True]
    given = DoorsState(np.int32(14), np.int32(3), np.int32(0), np.int32(3), np.int32(4))
    env.unwrapped.set_state(given, np.array([True, False]))
    _, reward, terminated, truncated, _ = env.step(np.array([UP, UP]))
    state = state_tuple(env.unwrapped.state)
    # Env 0 steps on from the state it was given; env 1 makes its pending autoreset.
    assert [field[0] for field in state[:5]] == [13, 3, 0, 3, 5]
    assert reward.tolist() == [1.0, 0.0]
    assert state[4][1] == 0 and state[0][1] == 14


def test_vector_bad_actions_raise():
    env = gym.make_vec("DoorsJax-v0", 4)
    env.reset(seed=0)
    with pytest.raises(ValueError, match="shape"):
        env.step(np.zeros(3, dtype=np.int64))
    with pytest.raises(TypeError, match=r"0\.\.4"):
        env.step(np.zeros(4, dtype=np.float32))
    with pytest.raises(ValueError, match=r"0\.\.4"):
        env.step(np.array([0, 0, 0, 5]))
    with pytest.raises(ValueError, match=r"0\.\.4"):
        env.step(jnp.array([0, -1, 0, 0]))
    with pytest.raises(TypeError, match=r"0\.\.4"):
        env.step(jnp.zeros(4, dtype=jnp.float32))


def test_vector_truncates_every_env_at_limit():
    env = gym.make_vec("DoorsJax-v0", 4, max_episode_steps=13)
    env.reset(seed=0)
    for t in range(1, 14):
        _, _, terminated, truncated, _ = env.step(np.full(4, STAY))
        assert not np.asarray(terminated).any()
        assert np.asarray(truncated).tolist() == [t == 13] * 4, f"step {t}"
