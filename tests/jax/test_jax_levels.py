"""The levels in JAX: doors in the state pytree, one layout per vmapped env, new doors at every autoreset."""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

from doors_gym import core  # noqa: E402
from doors_gym.jax import DoorsGymnax  # noqa: E402
from doors_gym.jax import functional as F  # noqa: E402
from doors_gym.levels import LEVELS, get_level  # noqa: E402

RANDOM = get_level("3Walls").params()


def test_vmapped_envs_each_draw_their_own_layout():
    keys = jax.random.split(jax.random.key(0), 64)
    obs, state = jax.vmap(F.reset, in_axes=(0, None))(keys, RANDOM)
    assert state.doors.shape == (64, 3, 1) and state.doors.dtype == jnp.int32
    assert len({bytes(np.asarray(doors)) for doors in state.doors}) > 10
    walls = np.asarray(obs).reshape(64, 15, 15) == core.WALL
    np.testing.assert_array_equal(walls, np.asarray(core.wall_mask(RANDOM, state.doors, jnp)))


def test_jit_equals_eager_with_random_doors():
    key = jax.random.key(4)
    eager_obs, eager_state = F.reset(key, RANDOM)
    jit_obs, jit_state = jax.jit(F.reset, static_argnums=1)(key, RANDOM)
    np.testing.assert_array_equal(eager_obs, jit_obs)
    np.testing.assert_array_equal(eager_state.doors, jit_state.doors)
    step = jax.jit(F.step, static_argnums=3)
    for index, action in enumerate([4, 4, 1, 3, 4, 2]):
        step_key = jax.random.fold_in(key, index)
        eager = F.step(step_key, eager_state, action, RANDOM)
        jitted = step(step_key, jit_state, action, RANDOM)
        for a, b in zip(jax.tree.leaves(eager[:5]), jax.tree.leaves(jitted[:5])):
            np.testing.assert_array_equal(a, b)
        eager_state, jit_state = eager[1], jitted[1]


def test_autoreset_draws_new_doors_and_a_step_keeps_them():
    params = get_level("Random").params(max_episode_steps=3)
    _, state = F.batch_reset(jax.random.key(1), 256, params)
    step = jax.jit(F.batch_step, static_argnums=3)
    actions = jnp.zeros(256, dtype=jnp.int32)
    _, kept, *_ = step(jax.random.key(2), state, actions, params)
    np.testing.assert_array_equal(kept.doors, state.doors)
    _, later, *_ = step(jax.random.key(3), kept, actions, params)
    _, restarted, _, _, truncated, _ = step(jax.random.key(4), later, actions, params)
    assert bool(truncated.all()) and int(restarted.time.max()) == 0
    changed = (np.asarray(restarted.doors) != np.asarray(state.doors)).any(axis=(1, 2))
    assert changed.mean() > 0.9  # C(15, 3) = 455 door sets: a redraw rarely repeats one


def test_steps_never_recompile_across_layouts():
    step = jax.jit(F.batch_step, static_argnums=3)
    _, state = F.batch_reset(jax.random.key(0), 8, RANDOM)
    actions = jnp.full(8, 4, dtype=jnp.int32)
    for index in range(2):  # the first outputs may differ from the eager reset's arrays in placement, not in type
        _, state, *_ = step(jax.random.key(index), state, actions, RANDOM)
    compiled = step._cache_size()
    for index in range(2, 8):
        _, state, *_ = step(jax.random.key(index), state, actions, RANDOM)
    assert step._cache_size() == compiled


@pytest.mark.parametrize("level", LEVELS, ids=lambda level: level.name)
def test_gymnax_api_at_every_level(level):
    env = DoorsGymnax(**level.keywords)
    params = env.default_params
    assert params.max_steps_in_episode == level.max_episode_steps
    obs, state = env.reset(jax.random.key(0), params)
    assert obs.shape == env.observation_space(params).shape == (params.num_cells,)
    obs, state, reward, done, info = env.step(jax.random.key(1), state, 4, params)
    assert obs.dtype == jnp.int16 and reward.dtype == jnp.float32 and done.dtype == jnp.bool_
    if params.random_doors:
        assert state.doors.shape == (level.n_walls, level.n_doors)
    else:
        assert state.doors is None


def test_gymnax_flat_observation_is_a_float_box():
    env = DoorsGymnax(**get_level("31x31").keywords, obs_mode="flat")
    obs, _ = env.reset(jax.random.key(0))
    space = env.observation_space(env.default_params)
    assert obs.shape == space.shape == (31 * 31 * 4,) and obs.dtype == space.dtype == jnp.float32
    assert float(obs.sum()) == 31 * 31


def test_func_env_takes_the_level_keywords():
    func_env = F.DoorsFuncEnv(get_level("63x63").keywords)
    state = func_env.initial(jax.random.key(0))
    assert state.doors.shape == (3, 3)
    next_state = func_env.transition(state, jnp.int32(4), jax.random.key(1))
    np.testing.assert_array_equal(next_state.doors, state.doors)
