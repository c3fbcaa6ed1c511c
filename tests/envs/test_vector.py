"""The native vector env of ``Doors-v0`` against Gymnasium's ``SyncVectorEnv`` (and ``AsyncVectorEnv``)."""

import math

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.error import ResetNeeded
from gymnasium.vector import AutoresetMode

from doors_gym import core
from doors_gym.core import AGENT, GOAL, DoorsState
from doors_gym.envs.doors import DoorsEnv
from doors_gym.envs.vector import DoorsVectorEnv
from doors_gym.oracle import OraclePolicy


def _assert_same_step(native_result, sync_result):
    native_obs, native_rewards, native_terminated, native_truncated, native_info = native_result
    sync_obs, sync_rewards, sync_terminated, sync_truncated, sync_info = sync_result
    np.testing.assert_array_equal(native_obs, sync_obs)
    np.testing.assert_array_equal(native_rewards, sync_rewards)
    np.testing.assert_array_equal(native_terminated, sync_terminated)
    np.testing.assert_array_equal(native_truncated, sync_truncated)
    np.testing.assert_array_equal(native_info["distance"], sync_info["distance"])
    np.testing.assert_array_equal(native_info["_distance"], sync_info["_distance"])
    # Identical results include dtypes: int16 observations, float64 rewards and distances, bool flags.
    assert native_obs.dtype == sync_obs.dtype == np.int16
    assert native_rewards.dtype == sync_rewards.dtype == np.float64
    assert native_info["distance"].dtype == sync_info["distance"].dtype == np.float64
    assert native_terminated.dtype == native_truncated.dtype == sync_terminated.dtype == np.bool_


def _compare_with_sync(
    num_envs: int, num_steps: int, seed: int, mode: str = "sync", vector_kwargs: dict | None = None, **kwargs
) -> tuple[int, int]:
    """Steps the native and a Gymnasium vector env side by side; returns (terminations, truncations)."""
    native = gym.make_vec("Doors-v0", num_envs, **kwargs)
    other = gym.make_vec("Doors-v0", num_envs, vectorization_mode=mode, vector_kwargs=vector_kwargs, **kwargs)
    assert isinstance(native, DoorsVectorEnv)
    try:
        native_obs, native_info = native.reset(seed=seed)
        other_obs, other_info = other.reset(seed=seed)
        np.testing.assert_array_equal(native_obs, other_obs)
        np.testing.assert_array_equal(native_info["distance"], other_info["distance"])
        policy = OraclePolicy(native.params)
        rng = np.random.default_rng(seed)
        oracle_envs = np.arange(num_envs) % 2 == 0
        terminations = truncations = 0
        for _ in range(num_steps):
            actions = np.where(oracle_envs, policy(native_obs), rng.integers(0, 5, size=num_envs))
            native_result = native.step(actions)
            other_result = other.step(actions)
            _assert_same_step(native_result, other_result)
            native_obs = native_result[0]
            terminations += int(native_result[2].sum())
            truncations += int(native_result[3].sum())
        return terminations, truncations
    finally:
        native.close()
        other.close()


def test_native_matches_sync_on_the_default_layout():
    terminations, truncations = _compare_with_sync(num_envs=6, num_steps=400, seed=11)
    assert terminations > 0 and truncations > 0


def test_native_matches_sync_with_a_short_time_limit():
    native = gym.make_vec("Doors-v0", 2, max_episode_steps=13)
    assert native.params.max_episode_steps == 13
    terminations, truncations = _compare_with_sync(num_envs=5, num_steps=200, seed=3, max_episode_steps=13)
    # The goal is 14 rows above the start: no episode can end on it within 13 steps.
    assert terminations == 0
    assert truncations == 5 * (200 // 14)


def test_native_matches_sync_on_a_wide_layout():
    terminations, truncations = _compare_with_sync(num_envs=4, num_steps=300, seed=5, grid_size=(9, 21), n_doors=4)
    assert terminations > 0 and truncations > 0


def test_native_matches_sync_on_a_big_grid_without_lookup_table():
    native = gym.make_vec("Doors-v0", 2, grid_size=(50, 50))
    assert native.params.num_cells > 2048
    assert native._distance_table is None  # the arithmetic distance path is the one under test
    terminations, truncations = _compare_with_sync(
        num_envs=4, num_steps=320, seed=8, grid_size=(50, 50), max_episode_steps=150
    )
    assert terminations > 0 and truncations > 0


def test_async_matches_sync():
    # forkserver: other tests may have loaded JAX, whose threads make a plain fork unsafe.
    terminations, truncations = _compare_with_sync(
        num_envs=2, num_steps=70, seed=4, mode="async", vector_kwargs={"context": "forkserver"}
    )
    assert terminations + truncations > 0


def test_autoreset_mode_is_next_step():
    env = gym.make_vec("Doors-v0", 2)
    assert env.metadata["autoreset_mode"] is AutoresetMode.NEXT_STEP


def test_step_after_an_ended_episode_resets_that_env():
    env = gym.make_vec("Doors-v0", 3)
    policy = OraclePolicy(env.params)
    obs, _ = env.reset(seed=0)
    for _ in range(60):
        obs, rewards, terminated, truncated, _ = env.step(policy(obs))
        if terminated.any():
            break
    assert terminated.any(), "the oracle reaches every goal within 28 steps"
    ended = terminated | truncated
    obs, rewards, terminated, truncated, info = env.step(policy(obs))
    for index in np.flatnonzero(ended):
        assert rewards[index] == 0.0
        assert not terminated[index] and not truncated[index]
        grid = obs[index].reshape(15, 15)
        agent = np.argwhere(grid == AGENT)
        goal = np.argwhere(grid == GOAL)
        assert len(agent) == 1 and len(goal) == 1
        assert agent[0][0] == 14 and goal[0][0] == 0
        assert info["distance"][index] == np.float32(math.hypot(14, agent[0][1] - goal[0][1]))
        assert env.state.time[index] == 0


def test_oracle_episodes_end_together_when_paths_are_equal():
    """Three envs started with the same seed are the same episode: they terminate on the same step."""
    env = gym.make_vec("Doors-v0", 3)
    policy = OraclePolicy(env.params)
    obs, _ = env.reset(seed=[7, 7, 7])
    np.testing.assert_array_equal(obs[0], obs[1])
    np.testing.assert_array_equal(obs[0], obs[2])
    for _ in range(40):
        obs, _, terminated, _, _ = env.step(policy(obs))
        assert terminated.all() or not terminated.any()
        if terminated.any():
            break
    assert terminated.all()


def test_reset_mask_resets_only_the_masked_envs():
    mask = np.array([True, False, True, False])
    native = gym.make_vec("Doors-v0", 4)
    sync = gym.make_vec("Doors-v0", 4, vectorization_mode="sync")
    native.reset(seed=21)
    sync.reset(seed=21)
    actions = np.array([4, 4, 1, 3])
    for _ in range(5):
        before, *_ = native.step(actions)
        sync.step(actions)
    native_obs, native_info = native.reset(options={"reset_mask": mask})
    sync_obs, sync_info = sync.reset(options={"reset_mask": mask})
    np.testing.assert_array_equal(native_obs, sync_obs)
    np.testing.assert_array_equal(native_obs[~mask], before[~mask])
    np.testing.assert_array_equal(native_info["distance"][mask], sync_info["distance"][mask])
    np.testing.assert_array_equal(native.state.time, np.where(mask, 0, 5))
    for index in np.flatnonzero(mask):
        grid = native_obs[index].reshape(15, 15)
        assert np.argwhere(grid == AGENT)[0][0] == 14
        assert np.argwhere(grid == GOAL)[0][0] == 0
    _assert_same_step(native.step(actions), sync.step(actions))


def test_reset_mask_is_validated():
    env = gym.make_vec("Doors-v0", 3)
    with pytest.raises(ResetNeeded):
        env.reset(options={"reset_mask": np.array([True, False, True])})
    env.reset(seed=0)
    with pytest.raises(ValueError, match="reset_mask"):
        env.reset(options={"reset_mask": np.array([1, 0, 1])})
    with pytest.raises(ValueError, match="reset_mask"):
        env.reset(options={"reset_mask": np.array([True, False])})
    with pytest.raises(ValueError, match="unknown"):
        env.reset(options={"agent_pos": (14, 0)})


def test_stepping_before_reset_raises_reset_needed():
    env = gym.make_vec("Doors-v0", 2)
    with pytest.raises(ResetNeeded):
        env.step(np.zeros(2, dtype=np.int64))


@pytest.mark.parametrize(
    ("actions", "error", "message"),
    [
        (np.zeros(4, dtype=np.int64), ValueError, r"shape \(4,\).*\(3,\)"),
        (np.zeros((3, 1), dtype=np.int64), ValueError, "shape"),
        (np.int64(1), ValueError, "shape"),
        (np.zeros(3, dtype=np.float32), TypeError, "float32"),
        (np.array([True, False, True]), TypeError, "bool"),
        (np.array([0, 5, 1]), ValueError, r"\[5\] are out of range.*0\.\.4"),
        (np.array([-1, 0, 1]), ValueError, r"\[-1\] are out of range.*0\.\.4"),
        (np.array([-1, 0, 255], dtype=np.int16), ValueError, r"\[-1, 255\]"),
        (np.array([0, 200, 1], dtype=np.uint8), ValueError, r"\[200\]"),
        (["up", "down", "left"], TypeError, "not integer actions"),
    ],
    ids=["too-many", "2-d", "scalar", "float", "bool", "too-large", "negative", "int16", "uint8", "strings"],
)
def test_bad_actions_raise_clear_errors(actions, error, message):
    env = gym.make_vec("Doors-v0", 3)
    obs, _ = env.reset(seed=0)
    with pytest.raises(error, match=message):
        env.step(actions)
    # The rejected batch changed nothing.
    np.testing.assert_array_equal(env.step(np.zeros(3, dtype=np.int64))[0], obs)


def test_actions_of_any_integer_dtype_and_lists_are_accepted():
    reference = gym.make_vec("Doors-v0", 3)
    reference.reset(seed=2)
    expected = reference.step(np.array([1, 4, 3]))
    for actions in ([1, 4, 3], np.array([1, 4, 3], dtype=np.uint8), np.array([1, 4, 3], dtype=np.int16)):
        env = gym.make_vec("Doors-v0", 3)
        env.reset(seed=2)
        result = env.step(actions)
        for value, expected_value in zip(result[:4], expected[:4]):
            np.testing.assert_array_equal(value, expected_value)


def test_render_returns_one_frame_per_env():
    native = gym.make_vec("Doors-v0", 3, render_mode="rgb_array", cell_pixels=4)
    sync = gym.make_vec("Doors-v0", 3, vectorization_mode="sync", render_mode="rgb_array", cell_pixels=4)
    obs, _ = native.reset(seed=9)
    sync.reset(seed=9)
    frames = native.render()
    assert isinstance(frames, tuple) and len(frames) == 3
    for index, frame in enumerate(frames):
        assert frame.shape == (60, 60, 3) and frame.dtype == np.uint8
        row, col = np.argwhere(obs[index].reshape(15, 15) == AGENT)[0]
        color = frame[row * 4, col * 4]
        assert color[2] > color[0] and color[2] > color[1]
    for native_frame, sync_frame in zip(frames, sync.render()):
        np.testing.assert_array_equal(native_frame, sync_frame)


def test_render_ansi_returns_one_text_per_env():
    env = gym.make_vec("Doors-v0", 2, render_mode="ansi")
    env.reset(seed=0)
    texts = env.render()
    assert len(texts) == 2
    for text in texts:
        assert text.count("A") == 1 and text.count("G") == 1 and len(text.split("\n")) == 15


def test_vector_render_mode_is_validated():
    with pytest.raises(ValueError, match="render_mode"):
        DoorsVectorEnv(2, render_mode="human")


@pytest.mark.parametrize("num_envs", [0, -1, 2.0, True])
def test_bad_num_envs_raise_value_error(num_envs):
    with pytest.raises(ValueError, match="num_envs"):
        DoorsVectorEnv(num_envs)


def test_state_and_set_state_round_trip():
    env = gym.make_vec("Doors-v0", 4)
    env.reset(seed=1)
    rng = np.random.default_rng(1)
    for _ in range(5):
        env.step(rng.integers(0, 5, size=4))
    state = env.unwrapped.state
    assert all(field.shape == (4,) and field.dtype == np.int32 for field in state[:5]) and state.doors is None
    stay = np.zeros(4, dtype=np.int64)
    obs_at_state = env.step(stay)[0]
    for _ in range(3):
        env.step(rng.integers(0, 5, size=4))
    restored = env.unwrapped.set_state(state)
    np.testing.assert_array_equal(restored, obs_at_state)
    for restored_field, field in zip(env.unwrapped.state, state):
        np.testing.assert_array_equal(restored_field, field)

    other = gym.make_vec("Doors-v0", 4)
    other_obs = other.set_state(state)
    np.testing.assert_array_equal(other_obs, obs_at_state)
    np.testing.assert_array_equal(other.step(stay)[0], env.step(stay)[0])


def test_an_agent_set_on_its_goal_leaves_it_drawn_as_the_single_env_does():
    """``set_state`` may put the agent on its goal; the step off it shows the goal again, in both envs."""
    on_goal = DoorsState(*(np.int32(value) for value in (0, 3, 0, 3, 5)))  # agent and goal at (0, 3)
    vector, single = DoorsVectorEnv(1), DoorsEnv()
    vector.reset(seed=0)
    single.reset(seed=0)
    batch = DoorsState(*(np.array([field]) for field in on_goal[:5]))
    np.testing.assert_array_equal(vector.set_state(batch)[0], single.set_state(on_goal))
    vector_obs, _, vector_terminated, _, _ = vector.step(np.array([core.DOWN]))
    single_obs, _, single_terminated, _, _ = single.step(core.DOWN)
    np.testing.assert_array_equal(vector_obs[0], single_obs)
    assert not vector_terminated[0] and not single_terminated
    stepped_off = on_goal._replace(agent_row=np.int32(1), time=np.int32(6))
    np.testing.assert_array_equal(single_obs, core.grid_observation(single.params, stepped_off))
    assert single_obs[3] == GOAL and single_obs[15 + 3] == AGENT


def test_set_state_with_mask_and_bad_states():
    env = gym.make_vec("Doors-v0", 3)
    env.reset(seed=0)
    before = env.state
    target = before._replace(agent_row=np.array([9, 9, 9]), agent_col=np.array([2, 2, 2]))
    env.set_state(target, mask=np.array([False, True, False]))
    after = env.state
    np.testing.assert_array_equal(after.agent_row, [before.agent_row[0], 9, before.agent_row[2]])
    np.testing.assert_array_equal(after.agent_col, [before.agent_col[0], 2, before.agent_col[2]])
    with pytest.raises(ValueError, match="wall"):
        env.set_state(before._replace(agent_row=np.array([7, 7, 7]), agent_col=np.array([3, 3, 3])))


def test_observations_and_results_are_fresh_arrays():
    env = gym.make_vec("Doors-v0", 3)
    obs, info = env.reset(seed=0)
    reset_copy = obs.copy()
    obs[:] = 3
    info["distance"][:] = -1
    stay = np.zeros(3, dtype=np.int64)
    first = env.step(stay)
    np.testing.assert_array_equal(first[0], reset_copy)
    assert np.all(first[4]["distance"] > 0)
    second = env.step(stay)
    for first_value, second_value in zip(first[:4], second[:4]):
        assert first_value is not second_value
        assert not np.shares_memory(first_value, second_value)
    first[0][:] = 0
    first[1][:] = 5
    third = env.step(stay)
    np.testing.assert_array_equal(third[0], reset_copy)
    np.testing.assert_array_equal(third[1], np.zeros(3))


def test_seeds_follow_sync_vector_env_conventions():
    native = gym.make_vec("Doors-v0", 3)
    singles = [gym.make("Doors-v0") for _ in range(3)]
    obs, _ = native.reset(seed=100)
    for index, single in enumerate(singles):
        np.testing.assert_array_equal(obs[index], single.reset(seed=100 + index)[0])
    obs, _ = native.reset(seed=[5, None, 6])
    np.testing.assert_array_equal(obs[0], singles[0].reset(seed=5)[0])
    np.testing.assert_array_equal(obs[2], singles[2].reset(seed=6)[0])
    with pytest.raises(ValueError, match="seed"):
        native.reset(seed=[1, 2])


@pytest.mark.parametrize("env_id", ["Doors-v0", "Doors-63x63-v0"])
def test_copy_false_returns_the_buffer_with_the_same_observations(env_id):
    fresh, shared = gym.make_vec(env_id, 8), gym.make_vec(env_id, 8, copy=False)
    actions = np.random.default_rng(0).integers(0, 5, (50, 8))
    fresh_obs, _ = fresh.reset(seed=3)
    shared_obs, _ = shared.reset(seed=3)
    buffer = shared_obs
    for step_actions in actions:
        np.testing.assert_array_equal(shared_obs, fresh_obs)
        kept = fresh_obs
        fresh_obs, *_ = fresh.step(step_actions)
        shared_obs, *_ = shared.step(step_actions)
        assert shared_obs is buffer and fresh_obs is not kept
    np.testing.assert_array_equal(shared_obs, fresh_obs)


def test_copy_must_be_a_bool():
    with pytest.raises(ValueError, match=r"copy='no' is invalid: expected True .* or False"):
        gym.make_vec("Doors-v0", 2, copy="no")
