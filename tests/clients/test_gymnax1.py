"""gymnax 1.x, what ``pip install gymnax`` gives today, around ``DoorsGymnax()`` with only the env line changed.

gymnax 1.0 steps six values, ``(obs, state, reward, terminated, truncated, info)``, and puts the observation an
episode ended on in ``info["final_observation"]``, which its ``FlattenObservationWrapper`` reads; its examples
call ``env.observe(key, state, action, params)`` and leave ``params`` out. ``DoorsGymnax()`` follows the
installed gymnax, so these run as gymnax 1.x's README and its Anakin notebook (``examples/01_anakin.ipynb``,
written here with Flax in place of Haiku and rlax) do. The 0.0.x-era scripts are in ``test_gymnax_scripts.py``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from stacks import needs

needs("gymnax", major=1)
jax = needs("jax")
nn = needs("flax.linen")
optax = needs("optax")
wrappers = needs("gymnax.wrappers")
import jax.numpy as jnp  # noqa: E402

from doors_gym.jax import DoorsGymnax  # noqa: E402

NUM_ENVS, NUM_STEPS = 8, 200


def test_gymnax_readme_usage():
    """gymnax 1.x's "Basic API usage", ``gymnax.make("Pendulum-v1")`` changed to ``DoorsGymnax()``."""
    key = jax.random.key(0)
    key, key_reset, key_act, key_step = jax.random.split(key, 4)
    env = DoorsGymnax(max_episode_steps=1)
    env_params = env.default_params
    obs, state = env.reset(key_reset, env_params)
    action = env.action_space(env_params).sample(key_act)
    n_obs, n_state, reward, terminated, truncated, info = env.step(key_step, state, action, env_params)
    bootstrap_obs = info["final_observation"]
    bootstrap_mask = 1.0 - info["terminated"].astype(jnp.float32)
    # One step is the whole episode: the returned obs starts the next one, the final one shows where it ended.
    assert bool(truncated) and not bool(terminated) and float(bootstrap_mask) == 1.0
    assert bootstrap_obs.shape == n_obs.shape == obs.shape and bootstrap_obs.dtype == obs.dtype
    np.testing.assert_array_equal(env.observe(key, n_state, None, env_params), n_obs)
    assert reward.dtype == jnp.float32


def scan_rollout(env: Any, params: Any, key: jax.Array) -> tuple[Any, ...]:
    """Random actions over vmapped envs in one ``lax.scan``, the six-value step, ``done = terminated | truncated``."""
    reset_key, loop_key = jax.random.split(key)
    obs, state = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(reset_key, NUM_ENVS), params)

    def body(carry, _):
        obs, state, key = carry
        key, action_key, step_key = jax.random.split(key, 3)
        action = jax.random.randint(action_key, (NUM_ENVS,), 0, env.num_actions)
        obs, state, reward, terminated, truncated, info = jax.vmap(env.step, in_axes=(0, 0, 0, None))(
            jax.random.split(step_key, NUM_ENVS), state, action, params
        )
        return (obs, state, key), (obs, reward, terminated, truncated, info)

    return jax.lax.scan(body, (obs, state, loop_key), None, length=NUM_STEPS)[1]


@pytest.mark.parametrize(
    "keywords",
    [{"obs_mode": "onehot"}, {"obs_mode": "flat", "n_doors": 3, "doors": "random"}],
    ids=["onehot", "flat-random-doors"],
)
def test_gymnax1_log_and_flatten_wrappers(keywords):
    env = wrappers.LogWrapper(wrappers.FlattenObservationWrapper(DoorsGymnax(max_episode_steps=20, **keywords)))
    params = env.default_params
    assert env.observation_space(params).shape == (900,)
    obs, rewards, terminated, truncated, info = jax.jit(scan_rollout, static_argnums=(0, 1))(
        env, params, jax.random.key(3)
    )
    assert obs.shape == info["final_observation"].shape == (NUM_STEPS, NUM_ENVS, 900)
    rewards, done = np.asarray(rewards), np.asarray(terminated | truncated)
    assert np.asarray(truncated).any()
    np.testing.assert_array_equal(np.asarray(info["returned_episode"]), done)
    returned = np.asarray(info["returned_episode_returns"])
    lengths = np.asarray(info["returned_episode_lengths"])
    for env_index in range(NUM_ENVS):
        start = 0
        for t in np.flatnonzero(done[:, env_index]):
            assert returned[t, env_index] == pytest.approx(rewards[start : t + 1, env_index].sum(), abs=1e-4)
            assert lengths[t, env_index] == t + 1 - start <= 20
            start = t + 1
    # An episode's final observation (one-hot planes, flattened) still shows the agent; the valid flag holds
    # from the first finished episode on.
    final = np.asarray(info["final_observation"])[done].reshape(-1, 15 * 15, 4)
    assert (final[:, :, 1].sum(axis=-1) == 1).all()
    first_done = done.argmax(axis=0)
    valid = np.asarray(info["returned_episode_valid"])
    assert all(valid[first_done[i] :, i].all() and not valid[: first_done[i], i].any() for i in range(NUM_ENVS))


def test_gymnax1_legacy_wrapper_gives_the_five_value_step():
    legacy = wrappers.LegacyStepAPIWrapper(DoorsGymnax())
    old = DoorsGymnax(step_api="0.0", final_observation=True)
    _, state = legacy.reset(jax.random.key(0))
    theirs = legacy.step(jax.random.key(1), state, 4, legacy.default_params)
    ours = old.step(jax.random.key(1), state, 4, old.default_params)
    assert len(theirs) == len(ours) == 5
    for mine, their in zip(jax.tree.leaves(ours), jax.tree.leaves(theirs)):
        np.testing.assert_array_equal(np.asarray(mine), np.asarray(their))


class QNetwork(nn.Module):
    """The Anakin notebook's network: flatten, two 256-unit ReLU layers, one output per action."""

    num_actions: int

    @nn.compact
    def __call__(self, obs: jax.Array) -> jax.Array:
        x = obs.reshape((obs.shape[0], -1)).astype(jnp.float32)
        x = nn.relu(nn.Dense(256)(nn.relu(nn.Dense(256)(x))))
        return nn.Dense(self.num_actions)(x)


def td_lambda(values, rewards, discounts, bootstrap, lambda_):
    """rlax's ``td_lambda`` errors over one trajectory (what the notebook calls it with)."""

    def backwards(carry, inputs):
        reward, discount, value = inputs
        carry = reward + discount * ((1 - lambda_) * value + lambda_ * carry)
        return carry, carry

    _, returns = jax.lax.scan(backwards, bootstrap[-1], (rewards, discounts, bootstrap), reverse=True)
    return returns - values


def make_learner(env, network, optimizer, rollout_len: int, iterations: int):
    """The notebook's ``get_learner_fn``: greedy rollouts with ``env.observe`` and ``env.step`` (no params)."""

    def loss_fn(params, outer_key, env_state):
        def step_fn(env_state, key):
            obs = env.observe(key, env_state, None, env.default_params)
            q_values = network.apply(params, obs[None,])[0]
            action = jnp.argmax(q_values)
            obs, env_state, reward, terminated, truncated, info = env.step(key, env_state, action)
            terminal = terminated | truncated
            return env_state, (q_values, action, 1.0 - terminal, reward)

        env_state, (q_values, actions, discounts, rewards) = jax.lax.scan(
            step_fn, env_state, jax.random.split(outer_key, rollout_len)
        )
        chosen = jnp.take_along_axis(q_values[:-1], actions[:-1, None], axis=-1)[:, 0]
        bootstrap = jax.lax.stop_gradient(q_values[1:].max(axis=-1))
        errors = td_lambda(chosen, rewards[1:], discounts[1:], bootstrap, 0.99)
        return jnp.mean(errors**2), env_state

    def update_fn(params, opt_state, key, env_state):
        key, loss_key = jax.random.split(key)
        (loss, env_state), grads = jax.value_and_grad(loss_fn, has_aux=True)(params, loss_key, env_state)
        updates, opt_state = optimizer.update(grads, opt_state)
        return optax.apply_updates(params, updates), opt_state, key, env_state, loss

    def learner_fn(params, opt_state, keys, env_states):
        def iterate_fn(carry, _):
            params, opt_state, keys, env_states = carry
            params, opt_state, keys, env_states, losses = jax.vmap(update_fn)(params, opt_state, keys, env_states)
            return (params, opt_state, keys, env_states), losses

        return jax.lax.scan(iterate_fn, (params, opt_state, keys, env_states), None, length=iterations)

    return learner_fn


def test_gymnax1_anakin_notebook_runs_to_its_end():
    env = DoorsGymnax()
    env_params = env.default_params
    network, optimizer = QNetwork(env.num_actions), optax.adam(3e-4)
    batch_size, rollout_len, iterations = 8, 16, 50
    key, key_e, key_p = jax.random.split(jax.random.key(42), num=3)
    obs, state = env.reset(key_e)
    params = network.init(key_p, obs[None,])
    opt_state = optimizer.init(params)
    learn = jax.jit(make_learner(env, network, optimizer, rollout_len, iterations))
    broadcast = lambda x: jnp.broadcast_to(x, (batch_size, *x.shape))  # noqa: E731
    params, opt_state = jax.tree.map(broadcast, (params, opt_state))
    env_keys, step_keys = jax.random.split(key, (2, batch_size))
    _, env_states = jax.vmap(env.reset)(env_keys)
    (params, _, _, _), losses = learn(params, opt_state, step_keys, env_states)
    assert losses.shape == (iterations, batch_size) and np.isfinite(np.asarray(losses)).all()

    # The notebook's last cell: one greedy episode, stepped from Python, up to max_steps_in_episode.
    params = jax.tree.map(lambda x: x[0], params)
    key = jax.random.key(0)
    obs, state = env.reset(key)
    steps = 0
    for _ in range(env_params.max_steps_in_episode):
        key, key_step = jax.random.split(key)
        action = jnp.argmax(network.apply(params, obs[None,]))
        obs, state, reward, terminated, truncated, _ = env.step(key_step, state, action, env_params)
        steps += 1
        if terminated | truncated:
            break
    assert bool(terminated | truncated) and steps <= env_params.max_steps_in_episode
