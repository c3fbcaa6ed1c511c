"""The pure JAX API: jit equals eager, vmap shapes and dtypes, autoreset, limits, checks, rollout."""

from __future__ import annotations

import math

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

from doors_gym import pixels  # noqa: E402
from doors_gym.core import AGENT, GOAL, STAY, UP, WALL, DoorsParams, DoorsState  # noqa: E402
from doors_gym.jax import functional as F  # noqa: E402

DEFAULT = DoorsParams()
WIDE = DoorsParams(grid_size=(9, 21), n_doors=4, max_episode_steps=100)
SMALL = DoorsParams(grid_size=(5, 5), max_episode_steps=15)


@pytest.fixture(scope="module")
def jitted():
    """Jitted functions shared by the module (each compiles once per layout and shape)."""
    return {
        "reset": jax.jit(F.reset, static_argnums=1),
        "step": jax.jit(F.step, static_argnums=3),
        "env_step": jax.jit(F.env_step, static_argnums=2),
    }


def make_state(agent_row, agent_col, goal_row, goal_col, time=0) -> DoorsState:
    return DoorsState(*(jnp.int32(v) for v in (agent_row, agent_col, goal_row, goal_col, time)))


def as_tuple(state: DoorsState) -> tuple[int, ...]:
    return tuple(int(v) for v in state[:5])


def assert_trees_equal(left, right):
    left_leaves, left_tree = jax.tree.flatten(left)
    right_leaves, right_tree = jax.tree.flatten(right)
    assert left_tree == right_tree
    for a, b in zip(left_leaves, right_leaves):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def cells_of(obs: np.ndarray, params: DoorsParams) -> tuple[tuple[int, int], tuple[int, int] | None]:
    """``(agent (row, col), goal (row, col) or None)`` read off an observation."""
    agent = divmod(int(np.argmax(obs == AGENT)), params.width)
    goal = divmod(int(np.argmax(obs == GOAL)), params.width) if (obs == GOAL).any() else None
    return agent, goal


def random_policy(key, obs):
    return jax.random.randint(key, (), 0, 5)


@pytest.mark.parametrize("params", [DEFAULT, WIDE], ids=["default", "9x21"])
def test_jit_equals_eager(jitted, params):
    """reset, step and env_step give the same pytrees eagerly and under jit."""
    for seed in range(3):
        key = jax.random.key(seed)
        reset_key, step_key = jax.random.split(key)
        assert_trees_equal(F.reset(reset_key, params), jitted["reset"](reset_key, params))
        _, state = F.reset(reset_key, params)
        for action in range(5):
            action = jnp.int32(action)
            assert_trees_equal(F.env_step(state, action, params), jitted["env_step"](state, action, params))
            assert_trees_equal(F.step(step_key, state, action, params), jitted["step"](step_key, state, action, params))
    # An ending transition (same-step autoreset) too.
    state = make_state(1, 0, 0, 0, time=3)
    assert_trees_equal(F.step(key, state, jnp.int32(UP), params), jitted["step"](key, state, jnp.int32(UP), params))


def test_vmap_shapes_and_dtypes():
    num_envs = 6
    keys = jax.random.split(jax.random.key(0), num_envs)
    obs, state = jax.vmap(F.reset, in_axes=(0, None))(keys, DEFAULT)
    assert obs.shape == (num_envs, DEFAULT.num_cells) and obs.dtype == jnp.int16
    for field in state[:5]:  # doors is None: fixed doors
        assert field.shape == (num_envs,) and field.dtype == jnp.int32

    actions = jnp.arange(num_envs, dtype=jnp.int32) % 5
    obs, state, reward, terminated, truncated, info = jax.vmap(F.step, in_axes=(0, 0, 0, None))(
        keys, state, actions, DEFAULT
    )
    assert obs.shape == (num_envs, 225) and obs.dtype == jnp.int16
    assert reward.shape == (num_envs,) and reward.dtype == jnp.float32
    assert terminated.shape == truncated.shape == (num_envs,)
    assert terminated.dtype == truncated.dtype == jnp.bool_
    assert info["distance"].shape == (num_envs,) and info["distance"].dtype == jnp.float32
    for field in (*state[:5], *info["final_state"][:5]):
        assert field.shape == (num_envs,) and field.dtype == jnp.int32

    obs, state, reward, terminated, truncated, info = jax.vmap(F.env_step, in_axes=(0, 0, None))(state, actions, WIDE)
    assert obs.shape == (num_envs, 189) and obs.dtype == jnp.int16
    assert reward.dtype == jnp.float32 and terminated.dtype == jnp.bool_ and truncated.dtype == jnp.bool_


def test_params_as_jit_argument():
    """DoorsParams is a static pytree: a jit argument; equal params reuse the compile, new ones recompile."""

    def reset_with(key, params):  # a fresh function: its own jit cache
        return F.reset(key, params)

    reset = jax.jit(reset_with)
    key = jax.random.key(1)
    obs_default, _ = reset(key, DEFAULT)
    obs_wide, state_wide = reset(key, WIDE)
    assert obs_default.shape == (225,)
    assert obs_wide.shape == (189,)
    assert int(state_wide.agent_row) == 8 and 0 <= int(state_wide.agent_col) < 21
    assert reset._cache_size() == 2
    reset(key, DoorsParams(grid_size=(15, 15), door_cols=(10, 0, 5)))  # equal to DEFAULT
    assert reset._cache_size() == 2
    assert jax.tree.leaves(DEFAULT) == []


def test_step_autoresets_in_the_same_step(jitted):
    params = DEFAULT
    state = make_state(1, 4, 0, 4, time=5)
    obs, new_state, reward, terminated, truncated, info = jitted["step"](
        jax.random.key(2), state, jnp.int32(UP), params
    )
    assert bool(terminated) and not bool(truncated)
    assert float(reward) == 1.0  # |(1, 0)| - |(0, 0)|
    assert as_tuple(info["final_state"]) == (0, 4, 0, 4, 6)
    assert float(info["distance"]) == 0.0
    assert int(new_state.time) == 0
    assert int(new_state.agent_row) == params.height - 1 and int(new_state.goal_row) == 0
    np.testing.assert_array_equal(np.asarray(obs), np.asarray(F.observation(new_state, params)))
    final_obs = np.asarray(F.observation(info["final_state"], params))
    assert final_obs[4] == AGENT and not (final_obs == GOAL).any()

    # Without an ending, the returned state is the final state and the clock advances.
    state = make_state(14, 3, 0, 9, time=2)
    _, new_state, reward, terminated, truncated, info = jitted["step"](jax.random.key(2), state, jnp.int32(UP), params)
    assert not bool(terminated) and not bool(truncated)
    assert as_tuple(new_state) == as_tuple(info["final_state"]) == (13, 3, 0, 9, 3)
    assert float(reward) == pytest.approx(math.hypot(14, 6) - math.hypot(13, 6), abs=1e-5)


def test_truncation_at_max_episode_steps(jitted):
    params = DoorsParams(max_episode_steps=5)
    _, state = F.reset(jax.random.key(0), params)
    for t in range(1, 6):
        _, state, _, terminated, truncated, info = jitted["step"](jax.random.key(t), state, jnp.int32(STAY), params)
        assert not bool(terminated)
        assert bool(truncated) == (t == 5)
    assert int(state.time) == 0  # autoreset after the truncation
    assert int(info["final_state"].time) == 5


def test_no_truncation_without_limit():
    params = DoorsParams(max_episode_steps=None)

    @jax.jit
    def run(state):
        def body(state, action):
            _, state, _, terminated, truncated, _ = F.env_step(state, action, params)
            return state, (terminated, truncated)

        return jax.lax.scan(body, state, jnp.zeros(500, dtype=jnp.int32))

    _, state = F.reset(jax.random.key(0), params)
    state, (terminated, truncated) = run(state)
    assert int(state.time) == 500
    assert not bool(truncated.any()) and not bool(terminated.any())
    assert not bool(F.DoorsFuncEnv({"max_episode_steps": None}).truncated(state._replace(time=jnp.int32(10**6))))


@pytest.mark.parametrize("action", [7, -1, 100])
def test_out_of_range_action_under_jit_stays(jitted, action):
    """Documented: under jit an action outside 0..4 leaves the agent in place (reward 0, clock advances)."""
    state = make_state(14, 3, 0, 9, time=4)
    obs, next_state, reward, terminated, truncated, _ = jitted["env_step"](state, jnp.int32(action), DEFAULT)
    assert as_tuple(next_state) == (14, 3, 0, 9, 5)
    assert float(reward) == 0.0 and not bool(terminated) and not bool(truncated)
    np.testing.assert_array_equal(np.asarray(obs), np.asarray(F.observation(state, DEFAULT)))


def test_float_action_raises_type_error_at_trace_time():
    state = make_state(14, 3, 0, 9)
    for function in (F.env_step, jax.jit(F.env_step, static_argnums=2)):
        with pytest.raises(TypeError, match=r"0\.\.4"):
            function(state, jnp.float32(1.0), DEFAULT)
    with pytest.raises(TypeError, match=r"0\.\.4"):
        jax.jit(F.step, static_argnums=3)(jax.random.key(0), state, 1.0, DEFAULT)


def test_checked_step():
    checked = jax.jit(F.checked_step)
    key = jax.random.key(0)
    _, state = F.reset(jax.random.key(1), DEFAULT)
    err, _ = checked(key, state, jnp.int32(7), DEFAULT)
    assert err.get() is not None
    with pytest.raises(Exception, match=r"0\.\.4") as raised:
        err.throw()
    assert "7" in str(raised.value)

    err, out = checked(key, state, jnp.int32(2), DEFAULT)
    assert err.get() is None
    err.throw()  # no error: does not raise
    assert_trees_equal(out, F.step(key, state, jnp.int32(2), DEFAULT))


def test_rollout_shapes_and_telescoping_returns(reference):
    rollout = jax.jit(F.rollout, static_argnames=("policy", "num_envs", "num_steps"))
    params = SMALL
    num_envs, num_steps = 8, 100
    final_state, trajectory = rollout(jax.random.key(0), random_policy, num_envs, num_steps, params)
    for field in final_state[:5]:
        assert field.shape == (num_envs,) and field.dtype == jnp.int32
    assert trajectory["obs"].shape == (num_steps, num_envs, params.num_cells)
    assert trajectory["obs"].dtype == jnp.int16
    assert trajectory["action"].shape == (num_steps, num_envs)
    assert trajectory["reward"].shape == (num_steps, num_envs) and trajectory["reward"].dtype == jnp.float32
    for flag in ("terminated", "truncated"):
        assert trajectory[flag].shape == (num_steps, num_envs) and trajectory[flag].dtype == jnp.bool_

    obs, actions, rewards = (np.asarray(trajectory[k]) for k in ("obs", "action", "reward"))
    ended = np.asarray(trajectory["terminated"]) | np.asarray(trajectory["truncated"])
    assert (obs[0, :, :] == AGENT).sum() == num_envs
    num_episodes = {"terminated": 0, "truncated": 0}
    for env in range(num_envs):
        start = 0
        for t in np.flatnonzero(ended[:, env]):
            (start_row, start_col), (goal_row, goal_col) = cells_of(obs[start, env], params)
            assert start_row == params.height - 1 and goal_row == 0
            end_row, end_col = reference.move(params, *cells_of(obs[t, env], params)[0], int(actions[t, env]))
            start_distance = math.hypot(goal_row - start_row, goal_col - start_col)
            end_distance = math.hypot(goal_row - end_row, goal_col - end_col)
            assert float(rewards[start : t + 1, env].sum()) == pytest.approx(start_distance - end_distance, abs=1e-4)
            if trajectory["terminated"][t, env]:
                assert (end_row, end_col) == (goal_row, goal_col)
                num_episodes["terminated"] += 1
            else:
                assert t + 1 - start == params.max_episode_steps
                num_episodes["truncated"] += 1
            start = t + 1
    assert num_episodes["terminated"] > 0 and num_episodes["truncated"] > 0


def test_func_env_methods_agree_with_pure_functions():
    env = F.DoorsFuncEnv()
    assert env.default_params == DEFAULT
    assert env.observation_space.shape == (225,)
    key = jax.random.key(5)
    state = env.initial(key)
    assert_trees_equal(state, F.initial(key, DEFAULT))
    assert_trees_equal(env.observation(state, key), F.observation(state, DEFAULT))
    for action in range(5):
        action = jnp.int32(action)
        obs, next_state, reward, terminated, truncated, info = F.env_step(state, action, DEFAULT)
        assert_trees_equal(env.transition(state, action, key), next_state)
        assert_trees_equal(env.observation(next_state, key), obs)
        assert_trees_equal(env.reward(state, action, next_state, key), reward)
        assert_trees_equal(env.terminal(next_state, key), terminated)
        assert_trees_equal(env.truncated(next_state), truncated)
        assert_trees_equal(env.transition_info(state, action, next_state), info)
    info = env.state_info(state)
    expected = math.hypot(int(state.agent_row) - int(state.goal_row), int(state.agent_col) - int(state.goal_col))
    assert float(info["distance"]) == pytest.approx(expected, abs=1e-5)
    assert bool(env.terminal(make_state(0, 3, 0, 3), key))
    assert bool(env.truncated(make_state(14, 3, 0, 4, time=60)))
    assert not bool(env.truncated(make_state(14, 3, 0, 4, time=59)))

    render_state = env.render_init(cell_pixels=3)
    render_state, frame = env.render_image(make_state(14, 3, 0, 4), render_state)
    assert frame.shape == (45, 45, 3) and frame.dtype == np.uint8
    palette = pixels.make_palette()
    np.testing.assert_array_equal(frame[14 * 3, 3 * 3], palette[AGENT])
    np.testing.assert_array_equal(frame[0, 4 * 3], palette[GOAL])
    np.testing.assert_array_equal(frame[7 * 3, 1 * 3], palette[WALL])
    np.testing.assert_array_equal(frame[7 * 3, 5 * 3], palette[0])
    assert env.render_close(render_state) is None


def test_func_env_options_make_params():
    env = F.DoorsFuncEnv({"grid_size": (9, 21), "n_doors": 4, "max_episode_steps": 100})
    assert env.default_params == WIDE
    assert env.observation_space.shape == (189,)
    key = jax.random.key(0)
    assert env.observation(env.initial(key), key).shape == (189,)
    # Explicit params win over the defaults.
    assert env.observation(env.initial(key, DEFAULT), key, DEFAULT).shape == (225,)


def test_func_env_rejects_unknown_options():
    with pytest.raises(ValueError, match="bogus"):
        F.DoorsFuncEnv(options={"bogus": 1})
    with pytest.raises(ValueError, match="n_doors"):
        F.DoorsFuncEnv(options={"n_doors": 0})


def test_determinism_per_key(jitted):
    for seed in (0, 17):
        assert_trees_equal(
            jitted["reset"](jax.random.key(seed), DEFAULT), jitted["reset"](jax.random.key(seed), DEFAULT)
        )
    state = make_state(1, 2, 0, 2, time=3)
    first = jitted["step"](jax.random.key(9), state, jnp.int32(UP), DEFAULT)
    second = jitted["step"](jax.random.key(9), state, jnp.int32(UP), DEFAULT)
    assert_trees_equal(first, second)


def test_different_keys_give_different_starts():
    keys = jax.random.split(jax.random.key(0), 64)
    _, states = jax.vmap(F.reset, in_axes=(0, None))(keys, DEFAULT)
    starts = set(zip(np.asarray(states.agent_col).tolist(), np.asarray(states.goal_col).tolist()))
    assert len(starts) > 32
    assert len(set(np.asarray(states.agent_col).tolist())) > 8
    assert len(set(np.asarray(states.goal_col).tolist())) > 8


def test_batch_step_matches_vmapped_step_from_draw_with_the_same_draws():
    num_envs = 64
    obs, state = jax.jit(F.batch_reset, static_argnums=(1, 2))(jax.random.key(3), num_envs, SMALL)
    assert obs.shape == (num_envs, SMALL.num_cells) and obs.dtype == jnp.int16
    assert np.all(np.asarray(state.agent_row) == SMALL.height - 1) and np.all(np.asarray(state.goal_row) == 0)
    assert len(set(zip(np.asarray(state.agent_col).tolist(), np.asarray(state.goal_col).tolist()))) > 5
    batch_step = jax.jit(F.batch_step, static_argnums=3)
    vmapped = jax.jit(jax.vmap(F.step_from_draw, in_axes=(0, 0, 0, None)), static_argnums=3)
    resets = 0
    for index in range(40):
        key = jax.random.key(100 + index)
        actions = jax.random.randint(jax.random.key(index), (num_envs,), 0, 5)
        expected = vmapped(F.draw_starts(key, (num_envs,), SMALL), state, actions, SMALL)
        result = batch_step(key, state, actions, SMALL)
        for got, want in zip(jax.tree.leaves(result), jax.tree.leaves(expected)):
            np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
        resets += int(np.sum(np.asarray(result[3]) | np.asarray(result[4])))
        state = result[1]
    assert resets > 0, "the stream must cross episode ends for autoreset to be compared"
