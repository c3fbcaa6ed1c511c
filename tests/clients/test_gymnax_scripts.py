"""What the gymnax 0.0.x-era training scripts do with an env, on ``DoorsGymnax`` with only their env line changed.

They need gymnax 0.0.x (its five-value step, its wrappers), as they do for gymnax's own envs: the main venv has
gymnax 1.x and skips this file; ``.ci/run``'s gymnax 0.0.9 venv runs it (``tests/clients/test_gymnax1.py`` is
the 1.x counterpart).

Written here in the shape of PureJaxRL's ``ppo.py`` and ``dqn.py`` and purejaxql's ``pqn_gymnax.py``
(Flax linen networks, optax, gymnax's own ``FlattenObservationWrapper`` and ``LogWrapper``), on tiny
budgets. Where each script touches the env it does what the published one does: it reads
``env_params.max_steps_in_episode``, keeps ``info`` for every step of its trajectory, maps over ``info``
with one scalar per env in mind and copies it to the host in a debug callback.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np
import pytest
from stacks import needs

needs("gymnax", major=0)
jax = needs("jax")
nn = needs("flax.linen")
optax = needs("optax")
gymnax_wrappers = needs("gymnax.wrappers.purerl")
import jax.numpy as jnp  # noqa: E402

from doors_gym.jax import DoorsGymnax  # noqa: E402
from doors_gym.jax.gymnax_api import FINAL_OBSERVATION  # noqa: E402

# gymnax's Discrete.sample asks for int64, which JAX without x64 truncates with a warning.
pytestmark = pytest.mark.filterwarnings("ignore:Explicitly requested dtype int64")

PER_ENV_INFO = {"terminated", "truncated", "discount", "distance"}
LOG_WRAPPER_INFO = {"returned_episode_returns", "returned_episode_lengths", "returned_episode"}
PPO_DEFAULTS = {"NUM_ENVS": 4, "NUM_STEPS": 128, "TOTAL_TIMESTEPS": 5e5, "UPDATE_EPOCHS": 4, "NUM_MINIBATCHES": 4}
"""PureJaxRL ``ppo.py``'s default sizes."""


def make_env(**keywords: Any) -> tuple[Any, Any]:
    """The scripts' env line changed (``gymnax.make(ENV_NAME)``), then their wrappers from gymnax."""
    env = DoorsGymnax(**keywords)
    env_params = env.default_params
    return gymnax_wrappers.LogWrapper(gymnax_wrappers.FlattenObservationWrapper(env)), env_params


def tree_bytes(tree: Any) -> int:
    """Bytes of every array (or ``ShapeDtypeStruct``) in ``tree``."""
    return sum(math.prod(leaf.shape) * np.dtype(leaf.dtype).itemsize for leaf in jax.tree.leaves(tree))


class ActorCritic(nn.Module):
    """PureJaxRL's PPO network: separate tanh MLPs for the logits and the value."""

    action_dim: int

    @nn.compact
    def __call__(self, x: jax.Array) -> tuple[jax.Array, jax.Array]:
        x = x.astype(jnp.float32)
        logits = nn.Dense(self.action_dim)(nn.tanh(nn.Dense(64)(nn.tanh(nn.Dense(64)(x)))))
        value = nn.Dense(1)(nn.tanh(nn.Dense(64)(nn.tanh(nn.Dense(64)(x)))))
        return logits, jnp.squeeze(value, axis=-1)


class PPOTransition(NamedTuple):
    done: jax.Array
    action: jax.Array
    value: jax.Array
    reward: jax.Array
    log_prob: jax.Array
    obs: jax.Array
    info: Any


def calculate_gae(traj_batch: PPOTransition, last_value: jax.Array) -> tuple[jax.Array, jax.Array]:
    """PureJaxRL's ``_calculate_gae`` (gamma 0.99, lambda 0.95), backwards over the trajectory: the advantages
    and the value targets."""

    def gae_step(carry, transition):
        gae, next_value = carry
        not_done = 1.0 - transition.done
        delta = transition.reward + 0.99 * next_value * not_done - transition.value
        gae = delta + 0.99 * 0.95 * not_done * gae
        return (gae, transition.value), gae

    _, advantages = jax.lax.scan(gae_step, (jnp.zeros_like(last_value), last_value), traj_batch, reverse=True)
    return advantages, advantages + traj_batch.value


def ppo_update(network: Any, tx: Any, config: dict[str, Any], runner: tuple, batch: tuple) -> tuple:
    """PureJaxRL's ``UPDATE_EPOCHS`` of ``_update_epoch`` on one update's ``batch``, ``(traj_batch, advantages,
    targets)``: each shuffles the whole batch, then takes an optimizer step on PPO's loss per minibatch.
    ``runner`` is ``(params, optimizer_state, key)``, returned updated."""
    batch_size = config["NUM_ENVS"] * config["NUM_STEPS"]

    def loss_fn(params, traj_batch, gae, targets):
        logits, value = network.apply(params, traj_batch.obs)
        log_prob = jnp.take_along_axis(jax.nn.log_softmax(logits), traj_batch.action[:, None], axis=-1)[:, 0]
        ratio = jnp.exp(log_prob - traj_batch.log_prob)
        gae = (gae - gae.mean()) / (gae.std() + 1e-8)
        actor_loss = -jnp.minimum(ratio * gae, jnp.clip(ratio, 0.8, 1.2) * gae).mean()
        entropy = -(jax.nn.softmax(logits) * jax.nn.log_softmax(logits)).sum(-1).mean()
        return actor_loss + 0.5 * jnp.square(value - targets).mean() - 0.01 * entropy

    def update_epoch(carry, _):
        params, optimizer_state, key = carry
        key, permutation_key = jax.random.split(key)
        permutation = jax.random.permutation(permutation_key, batch_size)
        minibatches = jax.tree.map(
            lambda x: x.reshape((batch_size, *x.shape[2:]))[permutation].reshape(
                (config["NUM_MINIBATCHES"], -1, *x.shape[2:])
            ),
            batch,
        )

        def update_minibatch(carry, minibatch):
            params, optimizer_state = carry
            grads = jax.grad(loss_fn)(params, *minibatch)
            updates, optimizer_state = tx.update(grads, optimizer_state)
            return (optax.apply_updates(params, updates), optimizer_state), None

        (params, optimizer_state), _ = jax.lax.scan(update_minibatch, (params, optimizer_state), minibatches)
        return (params, optimizer_state, key), None

    runner, _ = jax.lax.scan(update_epoch, runner, None, config["UPDATE_EPOCHS"])
    return runner


def make_ppo_train(config: dict[str, Any], env: Any, env_params: Any, on_update: Any = None):
    """PureJaxRL ``ppo.py``'s ``make_train``: every update's ``traj_batch.info`` is returned as its metric."""
    num_updates = int(config["TOTAL_TIMESTEPS"] // config["NUM_STEPS"] // config["NUM_ENVS"])
    network = ActorCritic(env.action_space(env_params).n)
    tx = optax.chain(optax.clip_by_global_norm(0.5), optax.adam(2.5e-4, eps=1e-5))

    def train(key: jax.Array) -> dict[str, Any]:
        init_key, reset_key, loop_key = jax.random.split(key, 3)
        params = network.init(init_key, jnp.zeros(env.observation_space(env_params).shape))
        optimizer_state = tx.init(params)
        obs, env_state = jax.vmap(env.reset, in_axes=(0, None))(
            jax.random.split(reset_key, config["NUM_ENVS"]), env_params
        )

        def update_step(runner_state, _):
            def env_step(runner_state, _):
                params, optimizer_state, env_state, last_obs, key = runner_state
                key, action_key, step_key = jax.random.split(key, 3)
                logits, value = network.apply(params, last_obs)
                action = jax.random.categorical(action_key, logits)
                log_prob = jnp.take_along_axis(jax.nn.log_softmax(logits), action[:, None], axis=-1)[:, 0]
                obs, env_state, reward, done, info = jax.vmap(env.step, in_axes=(0, 0, 0, None))(
                    jax.random.split(step_key, config["NUM_ENVS"]), env_state, action, env_params
                )
                transition = PPOTransition(done, action, value, reward, log_prob, last_obs, info)
                return (params, optimizer_state, env_state, obs, key), transition

            runner_state, traj_batch = jax.lax.scan(env_step, runner_state, None, config["NUM_STEPS"])
            params, optimizer_state, env_state, last_obs, key = runner_state
            _, last_value = network.apply(params, last_obs)
            advantages, targets = calculate_gae(traj_batch, last_value)
            params, optimizer_state, key = ppo_update(
                network, tx, config, (params, optimizer_state, key), (traj_batch, advantages, targets)
            )
            metric = traj_batch.info
            if on_update is not None:
                jax.debug.callback(on_update, metric)
            return (params, optimizer_state, env_state, last_obs, key), metric

        runner_state = (params, optimizer_state, env_state, obs, loop_key)
        runner_state, metric = jax.lax.scan(update_step, runner_state, None, num_updates)
        return {"runner_state": runner_state, "metrics": metric}

    return train


def test_purejaxrl_ppo_keeps_per_env_scalars_in_every_step_of_its_trajectory():
    env, env_params = make_env()
    config = {**PPO_DEFAULTS, "TOTAL_TIMESTEPS": 4 * 4 * 64}
    logged: list[np.ndarray] = []

    def on_update(info):
        # PureJaxRL's DEBUG callback: the returns of the episodes that ended in this update.
        logged.append(np.asarray(info["returned_episode_returns"][info["returned_episode"]]))

    out = jax.jit(make_ppo_train({**config, "NUM_STEPS": 64}, env, env_params, on_update))(jax.random.key(0))
    metrics = jax.device_get(out["metrics"])
    assert set(metrics) == PER_ENV_INFO | LOG_WRAPPER_INFO
    for name, leaf in metrics.items():
        assert leaf.shape == (4, 64, 4), name
    # 4 updates x 64 steps x 4 envs with a 60-step limit: episodes ended, each return at most the start distance.
    returns = np.concatenate(logged)
    assert len(logged) == 4 and returns.size == int(metrics["returned_episode"].sum()) > 0
    assert np.isfinite(returns).all() and (returns <= math.hypot(14, 14) + 1e-5).all()
    lengths = metrics["returned_episode_lengths"][metrics["returned_episode"]]
    assert (lengths >= 1).all() and (lengths <= env_params.max_steps_in_episode).all()


def test_the_stored_info_at_ppo_default_sizes_is_per_env_scalars_unless_asked_for():
    """``jax.eval_shape`` of the whole PPO at PureJaxRL's defaults (5e5 steps, 4 envs): the ``info`` it keeps."""
    key = jax.random.key(0)
    env, env_params = make_env()
    metrics = jax.eval_shape(make_ppo_train(dict(PPO_DEFAULTS), env, env_params), key)["metrics"]
    num_updates = int(PPO_DEFAULTS["TOTAL_TIMESTEPS"]) // 128 // 4
    stored_steps = num_updates * 128 * 4
    assert {name: leaf.shape for name, leaf in metrics.items()} == {
        name: (num_updates, 128, 4) for name in PER_ENV_INFO | LOG_WRAPPER_INFO
    }
    # At most 4 bytes per entry per env and step: 14 MB here, against 225 MB more for the final observations.
    assert tree_bytes(metrics) <= stored_steps * 4 * len(metrics)

    env_opted_in, _ = make_env(final_observation=True)
    opted_in = jax.eval_shape(make_ppo_train(dict(PPO_DEFAULTS), env_opted_in, env_params), key)["metrics"]
    observation_bytes = env_params.num_cells * np.dtype(opted_in[FINAL_OBSERVATION].dtype).itemsize
    assert tree_bytes(opted_in) - tree_bytes(metrics) == stored_steps * observation_bytes


class QNetwork(nn.Module):
    """purejaxql's Q-network: Dense, LayerNorm, ReLU, twice; PureJaxRL's DQN drops the norm."""

    action_dim: int
    layer_norm: bool = True

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        x = x.astype(jnp.float32)
        for _ in range(2):
            x = nn.Dense(64)(x)
            x = nn.relu(nn.LayerNorm()(x) if self.layer_norm else x)
        return nn.Dense(self.action_dim)(x)


def eps_greedy(key: jax.Array, q_values: jax.Array, epsilon: jax.Array) -> jax.Array:
    """Both scripts' exploration: a uniform action with probability ``epsilon``, else the greedy one."""
    random_key, pick_key = jax.random.split(key)
    greedy = jnp.argmax(q_values, axis=-1)
    random = jax.random.randint(random_key, greedy.shape, 0, q_values.shape[-1])
    return jnp.where(jax.random.uniform(pick_key, greedy.shape) < epsilon, random, greedy)


def q_lambda_targets(
    config: dict[str, Any], rewards: jax.Array, dones: jax.Array, q_values: jax.Array, last_q: jax.Array
) -> jax.Array:
    """purejaxql's Q(lambda) targets, backwards over the rollout from the bootstrap ``last_q`` after its last step."""

    def lambda_target(carry, step):
        lambda_return, next_q = carry
        reward, done, q_values = step
        bootstrap = reward + config["GAMMA"] * (1 - done) * next_q
        lambda_return = bootstrap + config["GAMMA"] * config["LAMBDA"] * (lambda_return - next_q)
        lambda_return = (1 - done) * lambda_return + done * reward
        return (lambda_return, jnp.max(q_values, axis=-1)), lambda_return

    last_return = rewards[-1] + config["GAMMA"] * last_q
    _, targets = jax.lax.scan(
        lambda_target,
        (last_return, last_q),
        (rewards[:-1], dones[:-1], q_values[:-1]),
        reverse=True,
    )
    return jnp.concatenate([targets, last_return[None]])


def pqn_learn(network: Any, tx: Any, config: dict[str, Any], runner: tuple, key: jax.Array, batch: tuple) -> tuple:
    """purejaxql's learning phase: one shuffle of the rollout's ``(observations, actions, targets)``, then an
    optimizer step per minibatch on the squared error of the chosen Q-values. ``runner`` is ``(params,
    optimizer_state)``; returns it updated, and the minibatches' losses."""

    def loss_fn(params, minibatch):
        observations, actions, targets = minibatch
        chosen = jnp.take_along_axis(network.apply(params, observations), actions[:, None], axis=-1)[:, 0]
        return 0.5 * jnp.square(chosen - targets).mean()

    def update_minibatch(carry, minibatch):
        params, optimizer_state = carry
        loss, grads = jax.value_and_grad(loss_fn)(params, minibatch)
        updates, optimizer_state = tx.update(grads, optimizer_state, params)
        return (optax.apply_updates(params, updates), optimizer_state), loss

    permutation = jax.random.permutation(key, config["NUM_STEPS"] * config["NUM_ENVS"])
    minibatches = jax.tree.map(
        lambda x: x.reshape((-1, *x.shape[2:]))[permutation].reshape((config["NUM_MINIBATCHES"], -1, *x.shape[2:])),
        batch,
    )
    return jax.lax.scan(update_minibatch, runner, minibatches)


def pqn_test_metrics(
    network: Any, config: dict[str, Any], vmap_reset: Any, vmap_step: Any, params: Any, key: jax.Array
) -> dict[str, jax.Array]:
    """purejaxql's ``get_test_metrics``: a greedy rollout of ``TEST_NUM_STEPS`` in ``TEST_NUM_ENVS`` fresh envs,
    each entry of its ``info`` averaged over the steps that ended an episode."""

    def env_step(carry, _):
        env_state, last_obs, key = carry
        key, action_key, step_key = jax.random.split(key, 3)
        action = eps_greedy(action_key, network.apply(params, last_obs), jnp.float32(0.0))
        obs, env_state, _, _, info = vmap_step(config["TEST_NUM_ENVS"], step_key, env_state, action)
        return (env_state, obs, key), info

    reset_key, loop_key = jax.random.split(key)
    obs, env_state = vmap_reset(config["TEST_NUM_ENVS"], reset_key)
    _, infos = jax.lax.scan(env_step, (env_state, obs, loop_key), None, config["TEST_NUM_STEPS"])
    # purejaxql's "mean of done infos": one scalar per env and step in every entry of info.
    return jax.tree.map(lambda x: jnp.nanmean(jnp.where(infos["returned_episode"], x, jnp.nan)), infos)


def make_pqn_train(config: dict[str, Any], env: Any, env_params: Any):
    """purejaxql ``pqn_gymnax.py``: Q(lambda) over vmapped envs, with its greedy test rollout of
    ``TEST_NUM_STEPS`` (by default ``env_params.max_steps_in_episode``) and its per-env ``info`` maps."""
    config = dict(config)
    config["TEST_NUM_STEPS"] = config.get("TEST_NUM_STEPS", env_params.max_steps_in_episode)
    num_updates = config["TOTAL_TIMESTEPS"] // config["NUM_STEPS"] // config["NUM_ENVS"]
    network = QNetwork(env.action_space(env_params).n)
    tx = optax.chain(optax.clip_by_global_norm(10.0), optax.radam(config["LR"]))

    def vmap_reset(num_envs, key):
        return jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(key, num_envs), env_params)

    def vmap_step(num_envs, key, env_state, action):
        keys = jax.random.split(key, num_envs)
        return jax.vmap(env.step, in_axes=(0, 0, 0, None))(keys, env_state, action, env_params)

    def train(key: jax.Array) -> dict[str, Any]:
        init_key, reset_key, loop_key = jax.random.split(key, 3)
        params = network.init(init_key, jnp.zeros((1, *env.observation_space(env_params).shape)))
        optimizer_state = tx.init(params)

        def update_step(runner_state, _):
            params, optimizer_state, (last_obs, env_state), key = runner_state

            def env_step(carry, _):
                last_obs, env_state, key = carry
                key, action_key, step_key = jax.random.split(key, 3)
                q_values = network.apply(params, last_obs)
                action = eps_greedy(action_key, q_values, jnp.float32(config["EPSILON"]))
                obs, env_state, reward, done, info = vmap_step(config["NUM_ENVS"], step_key, env_state, action)
                transition = (last_obs, action, reward, done, q_values)
                return (obs, env_state, key), (transition, info)

            key, rollout_key, shuffle_key, test_key = jax.random.split(key, 4)
            (obs, env_state, _), (transitions, infos) = jax.lax.scan(
                env_step, (last_obs, env_state, rollout_key), None, config["NUM_STEPS"]
            )
            observations, actions, rewards, dones, q_values = transitions
            last_q = jnp.max(network.apply(params, obs), axis=-1) * (1 - dones[-1])
            targets = q_lambda_targets(config, rewards, dones, q_values, last_q)
            (params, optimizer_state), losses = pqn_learn(
                network, tx, config, (params, optimizer_state), shuffle_key, (observations, actions, targets)
            )
            test_metrics = pqn_test_metrics(network, config, vmap_reset, vmap_step, params, test_key)
            metrics = {"td_loss": losses.mean()}
            metrics.update({name: value.mean() for name, value in infos.items()})
            metrics.update({f"test_{name}": value for name, value in test_metrics.items()})
            return (params, optimizer_state, (obs, env_state), key), metrics

        runner_state = (params, optimizer_state, vmap_reset(config["NUM_ENVS"], reset_key), loop_key)
        runner_state, metrics = jax.lax.scan(update_step, runner_state, None, num_updates)
        return {"runner_state": runner_state, "metrics": metrics}

    return train


def test_purejaxql_pqn_reads_max_steps_in_episode_and_maps_over_info_per_env():
    env, env_params = make_env()
    assert env_params.max_steps_in_episode == 60
    config = {
        "NUM_ENVS": 16,
        "NUM_STEPS": 32,
        "TOTAL_TIMESTEPS": 16 * 32 * 3,
        "NUM_MINIBATCHES": 4,
        "LR": 1e-3,
        "EPSILON": 0.3,
        "GAMMA": 0.9,
        "LAMBDA": 0.65,
        "TEST_NUM_ENVS": 32,
    }
    # jit(vmap(train)) over seeds, as purejaxql runs it.
    out = jax.jit(jax.vmap(make_pqn_train(config, env, env_params)))(jax.random.split(jax.random.key(1), 2))
    metrics = jax.device_get(out["metrics"])
    assert set(metrics) == {"td_loss"} | PER_ENV_INFO | LOG_WRAPPER_INFO | {
        f"test_{name}" for name in PER_ENV_INFO | LOG_WRAPPER_INFO
    }
    for name, value in metrics.items():
        assert value.shape == (2, 3), name
    # A greedy test rollout of max_steps_in_episode steps from fresh starts ends one episode in every env at the
    # latest at the limit, so every entry is the mean over ended episodes: a number, not NaN.
    lengths = metrics["test_returned_episode_lengths"]
    assert np.isfinite(lengths).all() and ((lengths >= 1) & (lengths <= 60)).all()
    # Every ended episode was terminated, truncated or both (the goal reached on the last step).
    assert (metrics["test_terminated"] + metrics["test_truncated"] >= 1 - 1e-6).all()
    assert np.isfinite(metrics["td_loss"]).all()


class DQNTimeStep(NamedTuple):
    obs: jax.Array
    action: jax.Array
    reward: jax.Array
    done: jax.Array


def unbatched_timestep(env: Any, env_params: Any, key: jax.Array) -> DQNTimeStep:
    """The script sizes its buffer from one unbatched step, with an action from the space without params."""
    dummy_action = env.action_space().sample(key)
    _, dummy_state = env.reset(key, env_params)
    dummy_obs, _, dummy_reward, dummy_done, _ = env.step(key, dummy_state, dummy_action, env_params)
    return DQNTimeStep(dummy_obs, dummy_action, dummy_reward, dummy_done)


def buffer_init(timestep: DQNTimeStep, capacity: int, num_envs: int) -> DQNTimeStep:
    """flashbax's flat buffer's ``init``, written as a ring: ``capacity`` rows of ``num_envs`` zeroed timesteps
    shaped like ``timestep``."""
    return jax.tree.map(lambda x: jnp.zeros((capacity, num_envs, *jnp.shape(x)), jnp.asarray(x).dtype), timestep)


def buffer_add(buffer: DQNTimeStep, row: jax.Array, timestep: DQNTimeStep) -> DQNTimeStep:
    """The vmapped envs' ``timestep`` written over the ring's ``row``."""
    return jax.tree.map(lambda store, x: store.at[row].set(x), buffer, timestep)


def buffer_sample(
    buffer: DQNTimeStep, row_key: jax.Array, env_key: jax.Array, step: jax.Array, batch_size: int
) -> tuple[DQNTimeStep, jax.Array]:
    """flashbax's ``sample``: ``batch_size`` timesteps of random envs at random rows below ``min(step,
    capacity - 1)``, and the observations one row on (its ``second.obs``)."""
    capacity, num_envs = buffer.done.shape[:2]
    rows = jax.random.randint(row_key, (batch_size,), 0, jnp.minimum(step, capacity - 1))
    envs = jax.random.randint(env_key, (batch_size,), 0, num_envs)
    first = jax.tree.map(lambda store: store[rows, envs], buffer)
    return first, buffer.obs[(rows + 1) % capacity, envs]


def make_dqn_train(config: dict[str, Any], env: Any, env_params: Any):
    """PureJaxRL ``dqn.py``: one vmapped env step per update, a flat replay buffer of ``(obs, action,
    reward, done)`` rows (flashbax's, written here as a ring), a target network and the scalar metrics."""
    num_updates = config["TOTAL_TIMESTEPS"] // config["NUM_ENVS"]
    network = QNetwork(env.action_space(env_params).n, layer_norm=False)
    tx = optax.adam(config["LR"])
    capacity = config["BUFFER_SIZE"] // config["NUM_ENVS"]

    def train(key: jax.Array) -> dict[str, Any]:
        init_key, reset_key, dummy_key, loop_key = jax.random.split(key, 4)
        obs, env_state = jax.vmap(env.reset, in_axes=(0, None))(
            jax.random.split(reset_key, config["NUM_ENVS"]), env_params
        )
        buffer = buffer_init(unbatched_timestep(env, env_params, dummy_key), capacity, config["NUM_ENVS"])
        params = network.init(init_key, jnp.zeros(env.observation_space(env_params).shape))
        optimizer_state = tx.init(params)

        def update_step(runner_state, step):
            params, target_params, optimizer_state, buffer, env_state, last_obs, key = runner_state
            key, action_key, step_key, row_key, env_key = jax.random.split(key, 5)
            timesteps = (step + 1) * config["NUM_ENVS"]
            epsilon = jnp.maximum(1.0 - timesteps / config["EPSILON_ANNEAL_TIME"], config["EPSILON_FINISH"])
            action = eps_greedy(action_key, network.apply(params, last_obs), epsilon)
            obs, env_state, reward, done, info = jax.vmap(env.step, in_axes=(0, 0, 0, None))(
                jax.random.split(step_key, config["NUM_ENVS"]), env_state, action, env_params
            )
            buffer = buffer_add(buffer, step % capacity, DQNTimeStep(last_obs, action, reward, done))

            def learn(params, optimizer_state):
                first, second_obs = buffer_sample(buffer, row_key, env_key, step, config["BATCH_SIZE"])
                next_q = jnp.max(network.apply(target_params, second_obs), axis=-1)
                target = first.reward + (1 - first.done) * config["GAMMA"] * next_q

                def loss_fn(params):
                    q_values = network.apply(params, first.obs)
                    chosen = jnp.take_along_axis(q_values, first.action[:, None], axis=-1)[:, 0]
                    return jnp.mean((chosen - target) ** 2)

                loss, grads = jax.value_and_grad(loss_fn)(params)
                updates, optimizer_state = tx.update(grads, optimizer_state)
                return optax.apply_updates(params, updates), optimizer_state, loss

            params, optimizer_state, loss = jax.lax.cond(
                timesteps > config["LEARNING_STARTS"],
                learn,
                lambda params, optimizer_state: (params, optimizer_state, jnp.float32(0.0)),
                params,
                optimizer_state,
            )
            target_params = jax.lax.cond(
                timesteps % config["TARGET_UPDATE_INTERVAL"] == 0, lambda: params, lambda: target_params
            )
            metrics = {"timesteps": timesteps, "loss": loss, "returns": info["returned_episode_returns"].mean()}
            return (params, target_params, optimizer_state, buffer, env_state, obs, key), metrics

        runner_state = (params, params, optimizer_state, buffer, env_state, obs, loop_key)
        runner_state, metrics = jax.lax.scan(update_step, runner_state, jnp.arange(num_updates))
        return {"runner_state": runner_state, "metrics": metrics}

    return train


def test_purejaxrl_dqn_runs_with_the_env_line_changed():
    env, env_params = make_env(max_episode_steps=20)
    config = {
        "NUM_ENVS": 8,
        "BUFFER_SIZE": 2048,
        "BATCH_SIZE": 64,
        "TOTAL_TIMESTEPS": 8 * 400,
        "EPSILON_FINISH": 0.05,
        "EPSILON_ANNEAL_TIME": 1600,
        "TARGET_UPDATE_INTERVAL": 80,
        "LR": 1e-3,
        "LEARNING_STARTS": 400,
        "GAMMA": 0.9,
    }
    metrics = jax.device_get(jax.jit(make_dqn_train(config, env, env_params))(jax.random.key(2))["metrics"])
    assert metrics["timesteps"][-1] == 8 * 400
    learning = metrics["timesteps"] > 400
    assert (metrics["loss"][~learning] == 0).all() and (metrics["loss"][learning] > 0).all()
    # With a 20-step limit every env has finished episodes after 400 steps; a return never beats the start distance.
    assert (metrics["returns"][-1] != 0) and np.isfinite(metrics["returns"]).all()
    assert (np.abs(metrics["returns"]) <= math.hypot(14, 14) + 1e-5).all()
