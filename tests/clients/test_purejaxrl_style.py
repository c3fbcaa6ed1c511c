"""The gymnax-style env in a PureJaxRL-style client written here: their ``LogWrapper`` pattern and a jitted
``lax.scan`` over ``vmap``-ed envs; then the installed gymnax's own wrappers around the same env, and the
step protocol (``step_api``) that follows the installed gymnax."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import pytest
from stacks import needs

jax = needs("jax")
import jax.numpy as jnp  # noqa: E402

from doors_gym.core import DoorsParams  # noqa: E402
from doors_gym.jax import DoorsGymnax  # noqa: E402
from doors_gym.jax import functional as F  # noqa: E402
from doors_gym.jax.gymnax_api import installed_step_api  # noqa: E402

NUM_ENVS, NUM_STEPS = 16, 300


class LogEnvState(NamedTuple):
    env_state: Any
    episode_returns: jax.Array
    episode_lengths: jax.Array
    returned_episode_returns: jax.Array
    returned_episode_lengths: jax.Array


class LogWrapper:
    """PureJaxRL's LogWrapper: running and last finished episode return and length, in the state."""

    def __init__(self, env: Any) -> None:
        self._env = env

    def __getattr__(self, name: str) -> Any:
        return getattr(self._env, name)

    def reset(self, key: jax.Array, params: Any = None) -> tuple[jax.Array, LogEnvState]:
        obs, env_state = self._env.reset(key, params)
        zero = jnp.float32(0.0)
        return obs, LogEnvState(env_state, zero, jnp.int32(0), zero, jnp.int32(0))

    def step(self, key: jax.Array, state: LogEnvState, action: Any, params: Any = None):
        obs, env_state, reward, done, info = self._env.step(key, state.env_state, action, params)
        new_return = state.episode_returns + reward
        new_length = state.episode_lengths + 1
        state = LogEnvState(
            env_state=env_state,
            episode_returns=new_return * (1 - done),
            episode_lengths=new_length * (1 - done),
            returned_episode_returns=jnp.where(done, new_return, state.returned_episode_returns),
            returned_episode_lengths=jnp.where(done, new_length, state.returned_episode_lengths),
        )
        info = {**info, "returned_episode": done, "returned_episode_returns": state.returned_episode_returns}
        info["returned_episode_lengths"] = state.returned_episode_lengths
        return obs, state, reward, done, info


def make_rollout(env: Any, params: Any):
    """PureJaxRL's shape: reset a vmapped batch, then one ``lax.scan`` of vmapped steps, all under ``jit``."""

    def rollout(key: jax.Array):
        reset_key, loop_key = jax.random.split(key)
        obs, state = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(reset_key, NUM_ENVS), params)

        def body(carry, _):
            obs, state, key = carry
            key, action_key, step_key = jax.random.split(key, 3)
            action = jax.random.randint(action_key, (NUM_ENVS,), 0, env.num_actions)
            obs, state, reward, *flags, info = jax.vmap(env.step, in_axes=(0, 0, 0, None))(
                jax.random.split(step_key, NUM_ENVS), state, action, params
            )
            done = flags[0] if len(flags) == 1 else flags[0] | flags[1]  # gymnax 0.0.x: done; 1.x: the two
            return (obs, state, key), (obs, reward, done, info)

        _, trajectory = jax.lax.scan(body, (obs, state, loop_key), None, length=NUM_STEPS)
        return trajectory

    return jax.jit(rollout)


@pytest.mark.filterwarnings("ignore:Explicitly requested dtype int64")  # gymnax's Discrete.sample, when installed
@pytest.mark.parametrize("step_api", ["0.0", "1.0"])
def test_the_gymnax_api(step_api):
    env = DoorsGymnax(grid_size=(9, 21), n_doors=4, step_api=step_api)
    params = env.default_params
    assert params == DoorsParams(grid_size=(9, 21), n_doors=4, max_episode_steps=60)
    assert env.num_actions == 5 and env.action_space(params).n == 5
    assert env.observation_space(params).shape == (189,)
    key = jax.random.key(0)
    obs, state = env.reset(key, params)
    assert obs.shape == (189,) and obs.dtype == jnp.int16
    assert bool(env.observation_space(params).contains(obs))
    np.testing.assert_array_equal(env.observe(key, state, None, params), obs)
    action = env.action_space(params).sample(key)
    assert bool(env.action_space(params).contains(action))
    # The same transition as the pure step function: no second copy of the rules.
    expected = F.step(jax.random.key(1), state, 4, params)
    outputs = env.step(jax.random.key(1), state, 4, params)
    obs, new_state, reward, info = outputs[0], outputs[1], outputs[2], outputs[-1]
    np.testing.assert_array_equal(obs, expected[0])
    assert float(reward) == float(expected[2])
    if step_api == "0.0":
        assert len(outputs) == 5 and bool(outputs[3]) == bool(expected[3] | expected[4])
    else:
        assert len(outputs) == 6 and (bool(outputs[3]), bool(outputs[4])) == (bool(expected[3]), bool(expected[4]))
    # One scalar per env, as gymnax's envs put in info; the final observation by default with gymnax 1.x's
    # protocol (its FlattenObservationWrapper reads it), only when asked for with 0.0.x's.
    final = {"final_observation": (189,)} if step_api == "1.0" else {}
    assert {name: value.shape for name, value in info.items()} == {
        "terminated": (),
        "truncated": (),
        "discount": (),
        "distance": (),
        **final,
    }
    assert params.max_steps_in_episode == params.max_episode_steps == 60
    for mode, shape in (("onehot", (15, 15, 4)), ("rgb", (30, 30, 3)), ("coords", (4,))):
        variant = DoorsGymnax(obs_mode=mode, cell_pixels=2)
        obs, _ = variant.reset(key)
        assert obs.shape == shape == variant.observation_space(variant.default_params).shape


def test_the_step_protocol_follows_the_installed_gymnax():
    from importlib import metadata

    try:
        expected = "0.0" if metadata.version("gymnax").startswith("0.") else "1.0"
    except metadata.PackageNotFoundError:
        expected = "1.0"
    assert installed_step_api() == expected
    env = DoorsGymnax()
    assert env.step_api == expected and env.final_observation == (expected == "1.0")
    _, state = env.reset(jax.random.key(0))
    assert len(env.step(jax.random.key(1), state, 0)) == {"0.0": 5, "1.0": 6}[expected]
    assert DoorsGymnax(step_api="1.0", final_observation=False).final_observation is False


@pytest.mark.parametrize("value", ["1", "1.x", 1.0, "legacy"])
def test_step_api_takes_a_known_protocol_only(value):
    with pytest.raises(ValueError, match=r"step_api=.* is invalid: expected one of \['0.0', '1.0'\] or None"):
        DoorsGymnax(step_api=value)


def test_purejaxrl_style_scan_over_vmapped_envs():
    env = LogWrapper(DoorsGymnax(final_observation=True, step_api="0.0", max_episode_steps=20))
    obs, rewards, dones, info = make_rollout(env, env.default_params)(jax.random.key(7))
    assert obs.shape == (NUM_STEPS, NUM_ENVS, 225) and rewards.shape == dones.shape == (NUM_STEPS, NUM_ENVS)
    rewards, dones = np.asarray(rewards), np.asarray(dones)
    terminated, truncated = np.asarray(info["terminated"]), np.asarray(info["truncated"])
    np.testing.assert_array_equal(dones, terminated | truncated)
    np.testing.assert_array_equal(np.asarray(info["discount"]), 1.0 - terminated)
    assert truncated.sum() > 0 and terminated.sum() >= 0
    # Every finished episode's logged return is the sum of its rewards, and at most 20 steps long.
    returned = np.asarray(info["returned_episode_returns"])
    lengths = np.asarray(info["returned_episode_lengths"])
    for env_index in range(NUM_ENVS):
        start = 0
        for t in np.flatnonzero(dones[:, env_index]):
            assert returned[t, env_index] == pytest.approx(rewards[start : t + 1, env_index].sum(), abs=1e-4)
            assert lengths[t, env_index] == t + 1 - start <= 20
            start = t + 1
    # A time-limited episode ends at 20 steps and its final observation still shows the agent.
    final = np.asarray(info["final_observation"])[truncated]
    assert ((final == 1).sum(axis=-1) == 1).all()


def test_gymnax_wrappers_around_doors():
    gymnax_wrappers = needs("gymnax.wrappers.purerl")
    env = DoorsGymnax(obs_mode="onehot", max_episode_steps=20)
    wrapped = gymnax_wrappers.LogWrapper(gymnax_wrappers.FlattenObservationWrapper(env))
    params = env.default_params
    assert wrapped.observation_space(params).shape == (900,)
    ours = make_rollout(LogWrapper(DoorsGymnax(obs_mode="onehot", max_episode_steps=20, step_api="0.0")), params)(
        jax.random.key(3)
    )
    theirs = make_rollout(wrapped, params)(jax.random.key(3))
    np.testing.assert_array_equal(np.asarray(theirs[0]).reshape(ours[0].shape), np.asarray(ours[0]))
    np.testing.assert_array_equal(np.asarray(theirs[1]), np.asarray(ours[1]))
    np.testing.assert_array_equal(np.asarray(theirs[2]), np.asarray(ours[2]))
    ended = np.asarray(ours[2])
    np.testing.assert_allclose(
        np.asarray(theirs[3]["returned_episode_returns"])[ended],
        np.asarray(ours[3]["returned_episode_returns"])[ended],
        rtol=1e-6,
    )


@pytest.mark.parametrize("value", [1, "yes"])
def test_final_observation_takes_a_bool_or_none_only(value):
    with pytest.raises(ValueError, match=rf"final_observation={value!r} is invalid: expected True, False or None"):
        DoorsGymnax(final_observation=value)


def test_max_steps_in_episode_is_the_time_limit():
    assert DoorsGymnax(max_episode_steps=25).default_params.max_steps_in_episode == 25
    assert DoorsGymnax(max_episode_steps=-1).default_params.max_steps_in_episode is None
