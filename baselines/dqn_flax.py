"""DQN in Flax and optax against ``Doors-v0`` or ``DoorsJax-v0``: jitted acting and updates, host loop.

The arms ``flax-numpy`` and ``flax-jax``: ``doors-gym train --arm flax-jax`` or
``python -m baselines.dqn_flax``. The shared host loop (:mod:`.loop`) drives a
:class:`FlaxLearner`; follows ``dqn_torch.py`` section by section, so the two
diff cleanly. Its network, loss and model files are also the fully jitted arm's.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any, NamedTuple

import flax.linen as nn
import flax.serialization
import jax
import jax.numpy as jnp
import numpy as np
import optax

from doors_gym.core import AGENT, GOAL, NUM_ACTIONS

from . import loop
from .config import DQNConfig, first_line
from .devices import use_jax_compilation_cache
from .loop import Batch, save_model  # noqa: F401  (save_model: this file's arm interface)
from .metrics import TrainResult

MODEL_FORMAT = "doors-gym-dqn"


class QNetwork(nn.Module):
    """MLP from the agent and goal planes to one Q-value per action.

    The first layer is a Dense layer over the one-hot agent and goal planes
    (``2 * H * W`` inputs, :func:`~doors_gym_baselines.loop.encode`). A one-hot
    input selects one kernel row per plane, so it is computed as those two rows:
    the same function and parameters, without multiplying zeros.
    """

    hidden_sizes: tuple[int, ...]
    num_actions: int = NUM_ACTIONS

    @nn.compact
    def __call__(self, obs: jax.Array | tuple[jax.Array, jax.Array, jax.Array, int]) -> jax.Array:
        """``(batch, H * W)`` integer grid observations -> ``(batch, 5)`` Q-values.

        Also takes ``(agent_cell, goal_cell, goal_visible, num_cells)`` read off env states
        directly (see :func:`cells_of_states`): the same input, without building the grid.
        """
        if isinstance(obs, tuple):
            agent, goal, goal_visible, num_cells = obs
        else:
            agent, goal, goal_visible, num_cells = cells_of_observations(obs)
        kernel = self.param("planes_kernel", nn.initializers.lecun_normal(), (2 * num_cells, self.hidden_sizes[0]))
        bias = self.param("planes_bias", nn.initializers.zeros_init(), (self.hidden_sizes[0],))
        rows = jnp.take(kernel, agent, axis=0)  # jnp.take: params restored from a file are NumPy arrays
        goal_rows = jnp.take(kernel, num_cells + goal, axis=0)
        features = nn.relu(rows + jnp.where(goal_visible[:, None], goal_rows, 0.0) + bias)
        for hidden in self.hidden_sizes[1:]:
            features = nn.relu(nn.Dense(hidden)(features))
        return nn.Dense(self.num_actions)(features)


def cells_of_observations(obs: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array, int]:
    """``(agent_cell, goal_cell, goal_visible, num_cells)`` of a batch of observations.

    Exactly one agent cell and at most one goal cell: a sum of cell indices
    finds them (a plain reduction; XLA's argmax is a slow two-value reduction
    on CPUs). The goal is hidden once the agent stands on it.
    """
    num_cells = obs.shape[-1]
    cells = jnp.arange(num_cells, dtype=jnp.int32)
    is_goal = obs == GOAL
    agent = jnp.sum(jnp.where(obs == AGENT, cells, 0), axis=-1)
    return agent, jnp.sum(jnp.where(is_goal, cells, 0), axis=-1), jnp.any(is_goal, axis=-1), num_cells


def cells_of_states(state: Any, width: int, num_cells: int) -> tuple[jax.Array, jax.Array, jax.Array, int]:
    """What :func:`cells_of_observations` reads off ``observation(state)``, computed from the state."""
    agent = state.agent_row * width + state.agent_col
    goal = state.goal_row * width + state.goal_col
    return agent, goal, agent != goal, num_cells


class LearnerState(NamedTuple):
    """Online and target parameters and the optimizer state (an immutable pytree)."""

    params: Any
    target_params: Any
    opt_state: Any


def make_optimizer(config: DQNConfig) -> optax.GradientTransformation:
    """Adam or SGD at the config's learning rate, decayed linearly and after gradient clipping if asked.

    The decay reaches ``lr_end_fraction`` of the rate at the run's last update,
    as the torch arms' scheduler does; clipping bounds the gradients' global norm.
    """
    hyper = config.hyperparameters
    rate: Any = hyper.learning_rate
    if hyper.lr_end_fraction < 1.0:
        end = hyper.learning_rate * hyper.lr_end_fraction
        rate = optax.linear_schedule(hyper.learning_rate, end, max(1, config.num_updates - 1))
    optimizer = (optax.adam if hyper.optimizer == "adam" else optax.sgd)(rate)
    if hyper.max_grad_norm > 0:
        return optax.chain(optax.clip_by_global_norm(hyper.max_grad_norm), optimizer)
    return optimizer


def updated_target(params: Any, target_params: Any, tau: float) -> Any:
    """The target parameters after a target update: the online ones, or ``tau`` of the way towards them."""
    return params if tau >= 1.0 else optax.incremental_update(params, target_params, tau)


def make_loss(network: QNetwork, config: DQNConfig):
    """The TD loss ``loss(params, target_params, batch)``, shared with the fully jitted arm."""
    hyper = config.hyperparameters

    def loss_function(params: Any, target_params: Any, batch: tuple[Any, ...]) -> jax.Array:
        obs, actions, rewards, next_obs, terminated = batch
        next_q = network.apply(target_params, next_obs)
        if hyper.double_dqn:  # the online network picks the next action, the target network values it
            next_actions = network.apply(params, next_obs).argmax(axis=1)
            next_values = jnp.take_along_axis(next_q, next_actions[:, None], axis=1).squeeze(1)
        else:
            next_values = next_q.max(axis=1)
        # Bootstrap through truncation: only termination cuts the return.
        targets = jax.lax.stop_gradient(rewards + hyper.gamma * next_values * (1.0 - terminated))
        values = jnp.take_along_axis(network.apply(params, obs), actions[:, None], axis=1).squeeze(1)
        if hyper.loss == "huber":
            return optax.huber_loss(values, targets, delta=1.0).mean()
        return jnp.mean((values - targets) ** 2)

    return loss_function


def make_update(network: QNetwork, optimizer: optax.GradientTransformation, config: DQNConfig):
    """The jitted gradient step: ``update(state, batch) -> (state, loss)``."""
    loss_function = make_loss(network, config)

    @jax.jit
    def update(state: LearnerState, batch: tuple[jax.Array, ...]) -> tuple[LearnerState, jax.Array]:
        loss, grads = jax.value_and_grad(loss_function)(state.params, state.target_params, batch)
        changes, opt_state = optimizer.update(grads, state.opt_state, state.params)
        return state._replace(params=optax.apply_updates(state.params, changes), opt_state=opt_state), loss

    return update


def init_params(network: QNetwork, key: jax.Array, num_cells: int) -> Any:
    """Fresh network parameters for grids of ``num_cells`` cells."""
    return network.init(key, jnp.zeros((1, num_cells), dtype=jnp.int16))


@functools.lru_cache(maxsize=16)
def jitted_network(network: QNetwork) -> tuple[Callable, Callable]:
    """``(greedy actions, Q-values)`` of ``network`` as jitted functions of ``(params, obs)``, one pair per network.

    Policies of the same network (every seed of a run, every evaluation) share
    them, so each shape compiles once.
    """
    return jax.jit(lambda params, obs: network.apply(params, obs).argmax(axis=1)), jax.jit(network.apply)


class FlaxPolicy:
    """A network and its parameters: greedy actions for batches of observations (compiled once per network)."""

    def __init__(self, network: QNetwork, params: Any) -> None:
        self.network = network
        self.params = params
        self._apply, self._q_values = jitted_network(network)

    def act(self, obs: np.ndarray) -> np.ndarray:
        """Greedy actions for a batch of grid observations."""
        return np.array(self._apply(self.params, obs))

    def q_values(self, obs: np.ndarray) -> np.ndarray:
        """``(batch, 5)`` Q-values of a batch of grid observations."""
        return np.array(self._q_values(self.params, obs))

    def save(self, path: str, arm: str, config: DQNConfig) -> None:
        """The parameters and the config as one msgpack file (``flax.serialization``; no pickled code)."""
        payload = {
            "format": MODEL_FORMAT,
            "arm": arm,
            "config": config.to_dict(),
            "params": flax.serialization.to_state_dict(self.params),
        }
        with open(path, "wb") as handle:
            handle.write(flax.serialization.msgpack_serialize(payload))


class FlaxLearner(FlaxPolicy):
    """Online and target parameters, optax state and the jitted TD update: the Flax side of the host loop.

    Both jitted functions compile when the learner is built, on the shapes the
    loop uses (their first calls, whose results are dropped: they are pure),
    and ``compile_seconds`` says how long that took.
    """

    def __init__(self, config: DQNConfig) -> None:
        network = QNetwork(tuple(config.hyperparameters.hidden_sizes))
        params = init_params(network, jax.random.key(config.run.seed), config.params.num_cells)
        optimizer = make_optimizer(config)
        self.state = LearnerState(params, params, optimizer.init(params))
        self._update = make_update(network, optimizer, config)
        self.tau = config.hyperparameters.tau
        super().__init__(network, params)
        self.facts = {"jax_version": jax.__version__, "jax_devices": str(jax.devices())}
        self.facts["jax_cache"] = use_jax_compilation_cache(config.run.jax_cache)
        self.compile_seconds = self._compile(config)

    def _compile(self, config: DQNConfig) -> float:
        start = time.perf_counter()
        hyper, num_cells = config.hyperparameters, config.params.num_cells
        for size in sorted({hyper.num_envs, config.params.width**2}):
            self.act(np.zeros((size, num_cells), dtype=np.int16))
        size = hyper.batch_size
        obs = np.zeros((size, num_cells), dtype=np.int8)
        floats = np.zeros(size, dtype=np.float32)
        jax.block_until_ready(self._update(self.state, (obs, np.zeros(size, dtype=np.int64), floats, obs, floats)))
        return time.perf_counter() - start

    def update(self, batch: Batch) -> float:
        """One gradient step; bootstraps through truncation (only termination cuts the return)."""
        self.state, loss = self._update(self.state, batch)
        self.params = self.state.params
        return float(loss)

    def sync_target(self) -> None:
        """Updates the target: a copy of the online parameters, or ``tau`` of the way towards them (Polyak)."""
        self.state = self.state._replace(
            target_params=updated_target(self.state.params, self.state.target_params, self.tau)
        )


def train(config: DQNConfig, trial: Any = None) -> TrainResult:
    """Trains one seed; reports greedy evaluations to an Optuna ``trial`` if given.

    Returns a :class:`~doors_gym_baselines.metrics.TrainResult` whose ``model`` is the :class:`FlaxLearner`.
    """
    return loop.train(FlaxLearner, __spec__.name, config, trial)


def load_model(path: str) -> tuple[str, FlaxPolicy, DQNConfig]:
    """``(arm, policy, config)`` of a Flax model file (of this arm or the fully jitted one); nothing is unpickled."""
    with open(path, "rb") as handle:
        data = handle.read()
    try:
        payload = flax.serialization.msgpack_restore(data)
    except Exception as error:  # noqa: BLE001 - msgpack raises several types for foreign files
        raise ValueError(f"{path!r} is not a Flax DQN model written by doors-gym ({error})") from None
    if not isinstance(payload, dict) or payload.get("format") != MODEL_FORMAT:
        raise ValueError(f"{path!r} is not a Flax DQN model written by doors-gym (no {MODEL_FORMAT!r} format tag)")
    config = DQNConfig.from_dict(payload["config"])
    network = QNetwork(tuple(config.hyperparameters.hidden_sizes))
    template = init_params(network, jax.random.key(0), config.params.num_cells)
    try:
        params = jax.tree.map(jnp.asarray, flax.serialization.from_state_dict(template, payload["params"]))
    except (KeyError, TypeError, ValueError) as error:
        raise ValueError(f"{path!r} holds weights that do not fit its own config ({first_line(error)})") from None
    if jax.tree.map(jnp.shape, params) != jax.tree.map(jnp.shape, template):
        raise ValueError(f"{path!r} holds weights whose shapes do not fit its own config")
    return payload["arm"], FlaxPolicy(network, params), config


def main(argv: list[str] | None = None) -> int:
    """``python -m baselines.dqn_flax``: ``doors-gym train`` for this file's arms."""
    from .cli import train_main

    return train_main(__spec__.name, argv)


if __name__ == "__main__":
    raise SystemExit(main())
