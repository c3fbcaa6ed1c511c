"""DQN in Flax and optax against ``Doors-v0`` or ``DoorsJax-v0``: jitted acting and updates, host loop.

The arms ``flax-numpy`` and ``flax-jax``: ``doors-gym train --arm flax-jax``. In ``dqn_torch.py``'s order,
section by section, so the two diff cleanly: the network (:class:`QNetwork`), the optimizer, the TD loss
and the pure learning step (:func:`make_learning_step`), the :class:`FlaxLearner` whose ``update`` jits that step,
then ``train``, which hands the learner to the host loop shared by every host-loop arm
(:func:`doors_gym_baselines.harness.loop.train`). Its network, loss, learning step and model files are
also the fully jitted arm's (``dqn_flax_scan.py``) and its lanes' (:class:`Knobs` of one value per lane).
"""

from __future__ import annotations

import dataclasses
import functools
import operator
import time
from collections.abc import Callable
from typing import Any, NamedTuple

import flax.linen as nn
import flax.serialization
import jax
import jax.numpy as jnp
import numpy as np
import optax

from doors_gym.core import NUM_ACTIONS, DoorsParams

from .. import harness
from ..api import Arm, StudyFigures, arm_for_env
from ..config import ALGORITHMS, LAYER_NORM_EPSILON, DQNConfig, first_line, schedules
from ..harness import Batch, Reporter, save_model
from ..harness.evaluation import evaluation_episodes
from ..harness.metrics import TrainResult
from ..runtime import jax_compilation_cache
from .cells import CELLS_DTYPE, RelativeRows, encode, input_layout, input_width

MODEL_FORMAT = "doors-gym-dqn"


class QNetwork(nn.Module):
    """MLP from the agent's and the goal's cells to one Q-value per action.

    The first layer is a Dense layer over the one-hot agent and goal planes (``2 * H * W`` inputs, see
    :mod:`~doors_gym_baselines.learners.cells`), initialised as Flax initialises ``nn.Dense``. A one-hot plane
    selects one kernel row, so the layer adds the agent's row, the goal's row (none once the agent
    stands on the goal) and the bias. Where the input carries door columns (random doors), the kernel has
    ``num_inputs`` rows and the layer also adds, per door, the row ``door_offsets[k] + column``. With
    ``relative`` (:class:`~doors_gym_baselines.learners.cells.RelativeRows`, the hyperparameter ``relative_inputs``) it also
    adds the rows of the agent's row and column and of the goal's and each door's column relative to the agent's
    (``grid_width`` columns); without ``cell_planes`` (the hyperparameter) it adds those alone, not the agent's and
    the goal's cell rows.
    With ``layer_norm`` every hidden layer's sum goes through a LayerNorm of its own before its ReLU.
    """

    hidden_sizes: tuple[int, ...]
    num_cells: int
    num_actions: int = NUM_ACTIONS
    door_offsets: tuple[int, ...] = ()
    num_inputs: int | None = None
    relative: RelativeRows | None = None
    grid_width: int = 0
    dueling: bool = False
    layer_norm: bool = False
    cell_planes: bool = True

    @nn.compact
    def __call__(self, cells: jax.Array) -> jax.Array:
        """``(batch, 2 + doors)`` integer cells (agent, goal or -1, door columns) -> ``(batch, 5)`` Q-values."""
        width = self.hidden_sizes[0]
        inputs = self.num_inputs or 2 * self.num_cells
        kernel = self.param("planes_kernel", nn.initializers.lecun_normal(), (inputs, width))
        bias = self.param("planes_bias", nn.initializers.zeros_init(), (width,))
        agent, goal = cells[:, 0].astype(jnp.int32), cells[:, 1].astype(jnp.int32)
        parts = []  # jnp.take: params restored from a file are NumPy arrays
        if self.cell_planes:
            goal_rows = jnp.take(kernel, self.num_cells + jnp.maximum(goal, 0), axis=0)
            parts.append(jnp.take(kernel, agent, axis=0) + jnp.where((goal >= 0)[:, None], goal_rows, 0.0))
        if self.door_offsets:
            doors = cells[:, 2:].astype(jnp.int32) + jnp.asarray(self.door_offsets, jnp.int32)
            parts.append(jnp.take(kernel, doors, axis=0).sum(axis=1))
        if self.relative is not None:
            parts.append(self.relative_features(kernel, cells, agent, goal))
        features = functools.reduce(operator.add, parts)
        features = nn.relu(self.normalized(features + bias))
        for hidden in self.hidden_sizes[1:]:
            features = nn.relu(self.normalized(nn.Dense(hidden)(features)))
        if self.dueling:  # the heads are named: a plain network's parameters keep their names
            value = nn.Dense(1, name="value")(features)
            advantage = nn.Dense(self.num_actions, name="advantage")(features)
            return value + advantage - advantage.mean(axis=-1, keepdims=True)
        return nn.Dense(self.num_actions)(features)


    def normalized(self, features: jax.Array) -> jax.Array:
        """``features`` through a LayerNorm of their own with ``layer_norm`` (torch's epsilon), else unchanged."""
        return nn.LayerNorm(epsilon=LAYER_NORM_EPSILON)(features) if self.layer_norm else features

    def relative_features(self, kernel: jax.Array, cells: jax.Array, agent: jax.Array, goal: jax.Array) -> jax.Array:
        """The first layer's rows of the relative inputs (:class:`~doors_gym_baselines.learners.cells.RelativeRows`)."""
        rows, width = self.relative, self.grid_width
        column = agent % width
        features = jnp.take(kernel, rows.agent_row + agent // width, axis=0)
        features = features + jnp.take(kernel, rows.agent_col + column, axis=0)
        goal_rows = jnp.take(kernel, rows.goal + jnp.maximum(goal, 0) % width - column, axis=0)
        features = features + jnp.where((goal >= 0)[:, None], goal_rows, 0.0)
        if rows.doors:
            doors = cells[:, 2:].astype(jnp.int32) - column[:, None] + jnp.asarray(rows.doors, jnp.int32)
            features = features + jnp.take(kernel, doors, axis=0).sum(axis=1)
        return features


def epsilon_greedy(greedy: jax.Array, epsilon: jax.Array, explore_key: jax.Array, random_key: jax.Array) -> jax.Array:
    """``(num_envs,)`` int32 actions: each env's ``greedy`` action, or with probability ``epsilon`` a uniform one.

    The fully jitted arm's exploration, in the trace (the host loop explores with NumPy).
    """
    num_envs = greedy.shape[0]
    random_actions = jax.random.randint(random_key, (num_envs,), 0, NUM_ACTIONS)
    explore = jax.random.uniform(explore_key, (num_envs,)) < epsilon
    return jnp.where(explore, random_actions, greedy).astype(jnp.int32)


class LearnerState(NamedTuple):
    """Online and target parameters, the optimizer state and the updates so far (an immutable pytree)."""

    params: Any
    target_params: Any
    opt_state: Any
    updates: Any = 0


class Knobs(NamedTuple):
    """The hyperparameters a JAX program reads as values (every other one shapes the program: widths, batch, buffer,
    env count, train frequency, optimizer, loss). In a run of its own they are Python numbers (:meth:`of`), which XLA
    folds into the program; in a program of lanes (:mod:`.scan_lanes`) each is an array with one value per lane.
    ``decay_updates`` is the updates over which the learning rate decays (``DQNConfig.lr_decay_updates``)."""

    gamma: Any
    learning_rate: Any
    lr_end_fraction: Any
    max_grad_norm: Any
    tau: Any
    target_update: Any
    learning_starts: Any
    exploration_fraction: Any
    double_dqn: Any
    advantage_learning: Any
    restart_prob: Any
    restart_fraction: Any
    decay_updates: Any

    @classmethod
    def of(cls, config: DQNConfig) -> Knobs:
        """The knobs of ``config`` as Python numbers."""
        hyper = config.hyperparameters
        values = {name: getattr(hyper, name) for name in cls._fields if name != "decay_updates"}
        return cls(**values, decay_updates=config.lr_decay_updates)


def is_number(value: Any) -> bool:
    """Whether ``value`` is a run's own Python number (a knob's value the trace can branch on), not lanes' array."""
    return isinstance(value, (bool, int, float))


def select(flag: Any, on: Callable[[], jax.Array], off: Callable[[], jax.Array]) -> jax.Array:
    """``on()`` where ``flag`` holds, else ``off()``: a run's own bool traces only the branch it takes, lanes' array
    computes both and picks per lane."""
    if is_number(flag):
        return on() if flag else off()
    return jnp.where(flag, on(), off())


def make_optimizer(config: DQNConfig) -> optax.GradientTransformation:
    """The optimizer's stateful part: Adam's moments, or nothing for SGD (:func:`make_learning_step` clips before it
    and scales by the scheduled learning rate after it, as ``optax.chain(clip_by_global_norm, adam(schedule))``)."""
    return optax.scale_by_adam() if config.hyperparameters.optimizer == "adam" else optax.identity()


def clipped(grads: Any, max_norm: Any) -> Any:
    """``grads`` scaled to a global norm of at most ``max_norm`` (``optax.clip_by_global_norm``'s formula); unchanged
    where ``max_norm`` is 0."""
    if is_number(max_norm) and max_norm <= 0:
        return grads
    norm = optax.tree.norm(grads)
    keep = (norm < max_norm) | (max_norm <= 0)
    return jax.tree.map(lambda grad: jnp.where(keep, grad, (grad / norm.astype(grad.dtype)) * max_norm), grads)


def updated_target(params: Any, target_params: Any, tau: Any) -> Any:
    """The target parameters after a target update: the online ones, or ``tau`` of the way towards them."""
    if is_number(tau) and tau >= 1.0:
        return params
    return optax.incremental_update(params, target_params, tau)


def action_shortfall(q: jax.Array, actions: jax.Array) -> jax.Array:
    """``max_b q(s, b) - q(s, a)`` of each row of ``q`` ``(batch, actions)`` and its ``actions``: what advantage
    learning takes its share of off the TD target (the hyperparameter ``advantage_learning``)."""
    return q.max(axis=1) - jnp.take_along_axis(q, actions[:, None], axis=1).squeeze(1)


def make_loss(network: QNetwork, config: DQNConfig) -> Callable:
    """The TD loss ``loss(params, target_params, batch, knobs)`` of every JAX arm: Double DQN, multi-step returns
    and advantage learning as ``knobs`` say (:class:`Knobs`); advantage learning is traced where ``config``'s share
    is above 0 (a program of lanes: any lane's)."""
    loss = config.hyperparameters.loss
    advantage_learning = config.hyperparameters.advantage_learning > 0

    def loss_function(params: Any, target_params: Any, batch: tuple[Any, ...], knobs: Knobs) -> jax.Array:
        obs, actions, rewards, next_obs, terminated, *multi_step = batch
        next_q = network.apply(target_params, next_obs)

        def double_values() -> jax.Array:  # the online network picks the next action, the target network values it
            next_actions = network.apply(params, next_obs).argmax(axis=1)
            return jnp.take_along_axis(next_q, next_actions[:, None], axis=1).squeeze(1)

        next_values = select(knobs.double_dqn, double_values, lambda: next_q.max(axis=1))
        # Bootstrap through truncation: only termination cuts the return. A multi-step batch brings each
        # return's discount (gamma ** steps taken) after its summed rewards.
        discounts = multi_step[0] if multi_step else knobs.gamma
        targets = rewards + discounts * next_values * (1.0 - terminated)
        if advantage_learning:
            targets = targets - knobs.advantage_learning * action_shortfall(network.apply(target_params, obs), actions)
        targets = jax.lax.stop_gradient(targets)
        values = jnp.take_along_axis(network.apply(params, obs), actions[:, None], axis=1).squeeze(1)
        return td_loss(values, targets, loss)

    return loss_function


def td_loss(values: jax.Array, targets: jax.Array, loss: str) -> jax.Array:
    """The mean TD loss of ``values`` against ``targets`` (the hyperparameter ``loss``: Huber with delta 1, or the
    squared error)."""
    if loss == "huber":
        return optax.huber_loss(values, targets, delta=1.0).mean()
    return jnp.mean((values - targets) ** 2)


def optimizer_step(
    optimizer: optax.GradientTransformation, params: Any, opt_state: Any, updates: Any, grads: Any, knobs: Knobs
) -> tuple[Any, Any]:
    """``(params, opt_state)`` after one optimizer step of ``grads`` at update ``updates``: clipped to the knobs'
    global norm, through ``optimizer`` (:func:`make_optimizer`), scaled by the scheduled learning rate
    (:func:`~.schedules.learning_rate`)."""
    changes, opt_state = optimizer.update(clipped(grads, knobs.max_grad_norm), opt_state, params)
    rate = schedules.learning_rate(updates, knobs.learning_rate, knobs.lr_end_fraction, knobs.decay_updates, jnp)
    return optax.apply_updates(params, jax.tree.map(lambda change: -rate * change, changes)), opt_state


def make_learning_step(
    network: QNetwork, config: DQNConfig
) -> Callable[[LearnerState, tuple, Knobs], tuple[LearnerState, jax.Array]]:
    """The pure learning step of every JAX arm, ``(state, batch, knobs) -> (state, loss)``: the TD loss's gradient
    clipped, through the optimizer (:func:`make_optimizer`), scaled by the scheduled learning rate
    (:func:`~.schedules.learning_rate`), then the target's update every ``target_update`` updates. The host loop jits
    it with :meth:`Knobs.of`; the fully jitted arm calls it inside its scan, its lanes with their own knobs."""
    loss_function, optimizer = make_loss(network, config), make_optimizer(config)

    def step(state: LearnerState, batch: tuple, knobs: Knobs) -> tuple[LearnerState, jax.Array]:
        loss, grads = jax.value_and_grad(loss_function)(state.params, state.target_params, batch, knobs)
        params, opt_state = optimizer_step(optimizer, state.params, state.opt_state, state.updates, grads, knobs)
        updates = state.updates + 1
        target = updated_target(params, state.target_params, knobs.tau)
        target_params = optax.periodic_update(target, state.target_params, updates, knobs.target_update)
        return LearnerState(params, target_params, opt_state, updates), loss

    return step


def make_regression_step(
    network: QNetwork, config: DQNConfig
) -> Callable[[LearnerState, tuple, Knobs], tuple[LearnerState, jax.Array]]:
    """PQN's pure learning step, ``(state, (cells, actions, returns), knobs) -> (state, loss)``: ``Q(s, a)``
    regressed on the returns (the hyperparameter ``loss``), the gradient clipped, through the optimizer at the
    scheduled rate, as :func:`make_learning_step`'s, with no target network: ``target_params`` is left as it is.
    The Flax host loop jits it (:meth:`FlaxLearner.regress`), the fully jitted arm's PQN scans it."""
    optimizer, loss = make_optimizer(config), config.hyperparameters.loss

    def loss_function(params: Any, batch: tuple[jax.Array, ...]) -> jax.Array:
        cells, actions, returns = batch
        values = jnp.take_along_axis(network.apply(params, cells), actions[:, None], axis=1).squeeze(1)
        return td_loss(values, returns, loss)

    def step(state: LearnerState, batch: tuple, knobs: Knobs) -> tuple[LearnerState, jax.Array]:
        value, grads = jax.value_and_grad(loss_function)(state.params, batch)
        params, opt_state = optimizer_step(optimizer, state.params, state.opt_state, state.updates, grads, knobs)
        return state._replace(params=params, opt_state=opt_state, updates=state.updates + 1), value

    return step


def init_params(network: QNetwork, key: jax.Array) -> Any:
    """Fresh network parameters."""
    return network.init(key, jnp.zeros((1, 2 + len(network.door_offsets)), dtype=jnp.int16))


@functools.lru_cache(maxsize=16)
def jitted_network(network: QNetwork) -> tuple[Callable, Callable]:
    """``(greedy actions, Q-values)`` of ``network`` as jitted functions of ``(params, cells)``, one pair per network.

    Policies of the same network (every seed of a run, every evaluation) share them, so each shape
    compiles once.
    """
    return jax.jit(lambda params, cells: network.apply(params, cells).argmax(axis=1)), jax.jit(network.apply)


@functools.lru_cache(maxsize=16)
def jitted_greedy_of_many(network: QNetwork) -> Callable:
    """Greedy actions of many parameter sets of ``network`` at once, ``(params stacked, cells (sets, batch, ...))
    -> (sets, batch)``, jitted once per network (it compiles once per number of sets)."""
    return jax.jit(lambda params, cells: jax.vmap(network.apply)(params, cells).argmax(axis=-1))


class FlaxPolicy:
    """A network and its parameters: greedy actions for batches of observations (compiled once per network)."""

    def __init__(self, network: QNetwork, params: Any, layout: DoorsParams | None = None) -> None:
        self.network = network
        self.params = params
        self.layout = layout  # where the doors are random, encoding reads them off the grid
        self._apply, self._q_values = jitted_network(network)

    def greedy(self, cells: np.ndarray) -> np.ndarray:
        """Greedy actions for a batch of cells."""
        return np.asarray(self._apply(self.params, cells))

    def max_values(self, cells: np.ndarray) -> np.ndarray:
        """The best action's value of each of a batch of cells (PQN's bootstrap)."""
        return np.asarray(self._q_values(self.params, cells)).max(axis=1)

    def act(self, obs: np.ndarray) -> np.ndarray:
        """Greedy actions for a batch of grid observations."""
        return self.greedy(encode(obs, self.layout))

    def q_values(self, obs: np.ndarray) -> np.ndarray:
        """``(batch, 5)`` Q-values of a batch of grid observations."""
        return np.asarray(self._q_values(self.params, encode(obs, self.layout)))

    def save(self, path: str, arm: str, config: DQNConfig) -> None:
        """The parameters and the config as one msgpack file (``flax.serialization``; no pickled code)."""
        payload = {
            "format": MODEL_FORMAT,
            "arm": arm,
            "config": config.to_dict(),
            "params": flax.serialization.to_state_dict(jax.device_get(self.params)),
        }
        with open(path, "wb") as handle:
            handle.write(flax.serialization.msgpack_serialize(payload))


class FlaxLearner(FlaxPolicy):
    """Online and target parameters, optax state and the jitted learning step: the Flax side of the host loop.

    The step is jitted with its state donated (XLA updates the parameters and moments in place), takes
    the target update inside, and its loss is left on the device: the host waits for an update only
    where it reads the parameters (acting) or the losses (logging). Both jitted functions compile
    when the learner is built, on the shapes the loop uses, and ``compile_seconds`` says how long that took.
    """

    def __init__(self, config: DQNConfig) -> None:
        network = make_network(config)
        params = init_params(network, jax.random.key(config.run.seed))
        optimizer = make_optimizer(config)
        target = jax.tree.map(jnp.copy, params)  # its own buffers: the step donates both
        self.state = LearnerState(params, target, optimizer.init(params), jnp.int32(0))
        knobs = Knobs.of(config)
        if config.hyperparameters.algorithm == "pqn":  # PQN's minibatches regress on returns (see regress)
            step = make_regression_step(network, config)
        else:
            step = make_learning_step(network, config)
        self._update = jax.jit(lambda state, batch: step(state, batch, knobs), donate_argnums=0)
        super().__init__(network, params, config.params)
        self.facts = {"jax_version": jax.__version__, "jax_devices": str(jax.devices())}
        self.facts["jax_cache"] = jax.config.jax_compilation_cache_dir  # the run's (see train)
        self.compile_seconds = self._compile(config)

    def _compile(self, config: DQNConfig) -> float:
        start = time.perf_counter()
        hyper = config.hyperparameters
        width = input_width(config.params)
        for size in sorted({hyper.num_envs, evaluation_episodes(config.params)}):
            self.greedy(np.zeros((size, width), dtype=CELLS_DTYPE))
        size = config.update_batch_size
        cells = np.zeros((size, width), dtype=CELLS_DTYPE)
        floats = np.zeros(size, dtype=np.float32)
        batch = (cells, np.zeros(size, dtype=np.int64), floats, cells, floats)
        if hyper.algorithm == "pqn":  # a minibatch of returns
            batch = batch[:3]
        elif hyper.n_step > 1:  # a multi-step batch brings its discounts
            batch = (*batch, floats)
        self._update = self._update.lower(jax.tree.map(jnp.copy, self.state), batch).compile()
        return time.perf_counter() - start

    def update(self, batch: Batch) -> jax.Array:
        """One gradient step and the target's update when one is due (a PQN learner's step is :meth:`regress`'s,
        compiled in its place); returns the loss, not waited for.

        Bootstraps through truncation (only termination cuts the return).
        """
        self.state, loss = self._update(self.state, batch)
        self.params = self.state.params
        return loss

    def regress(self, batch: Batch) -> jax.Array:
        """One gradient step of ``Q(s, a)`` on the returns of a PQN minibatch ``(cells, actions, returns)``
        (:func:`make_regression_step`: no target network); returns the loss, not waited for."""
        return self.update(batch)

    def read_losses(self, losses: list[jax.Array]) -> np.ndarray:
        """The values of :meth:`update`'s losses (one copy to the host for all of them)."""
        return np.asarray(jnp.stack(losses), dtype=np.float64)


def make_network(config: DQNConfig) -> QNetwork:
    """The config's Q-network (with the relative inputs where ``relative_inputs``)."""
    params, hyper = config.params, config.hyperparameters
    relative, planes = hyper.relative_inputs, hyper.cell_planes
    return QNetwork(
        tuple(hyper.hidden_sizes),
        params.num_cells,
        **input_layout(params, relative, planes)._asdict(),
        dueling=hyper.dueling,
        layer_norm=hyper.layer_norm,
        cell_planes=planes,
    )


def train(config: DQNConfig, trial: Reporter | None = None, arm: Arm | None = None) -> TrainResult:
    """Trains one seed as ``arm`` (default: this file's arm for the config's env id); reports greedy
    evaluations to ``trial`` if given (see :class:`~doors_gym_baselines.harness.Reporter`).

    Returns a :class:`~doors_gym_baselines.harness.metrics.TrainResult` whose ``model`` is the :class:`FlaxLearner`.
    """
    arm = arm or arm_for_env(ARMS, config.run.env_id)
    with jax_compilation_cache(config.run.jax_cache):
        return harness.train(arm, FlaxLearner, config, trial)


def load_model(path: str) -> tuple[str, FlaxPolicy, DQNConfig]:
    """``(arm, policy, config)`` of a Flax model file (of this arm or the fully jitted one); nothing is unpickled.

    Raises:
        ValueError: the file is not a Flax model of doors-gym, or its weights do not fit its own config.
    """
    with open(path, "rb") as handle:
        data = handle.read()
    try:
        payload = flax.serialization.msgpack_restore(data)
    except Exception as error:  # noqa: BLE001 - msgpack raises several types for foreign files
        raise ValueError(f"{path!r} is not a Flax DQN model written by doors-gym ({error})") from None
    if not isinstance(payload, dict) or payload.get("format") != MODEL_FORMAT:
        raise ValueError(f"{path!r} is not a Flax DQN model written by doors-gym (no {MODEL_FORMAT!r} format tag)")
    config = DQNConfig.from_dict(payload["config"])
    network = make_network(config)
    template = init_params(network, jax.random.key(0))
    try:
        params = jax.tree.map(jnp.asarray, flax.serialization.from_state_dict(template, payload["params"]))
    except (KeyError, TypeError, ValueError) as error:
        raise ValueError(f"{path!r} holds weights that do not fit its own config ({first_line(error)})") from None
    if jax.tree.map(jnp.shape, params) != jax.tree.map(jnp.shape, template):
        raise ValueError(f"{path!r} holds weights whose shapes do not fit its own config")
    return payload["arm"], FlaxPolicy(network, params, config.params), config


FLAX_NUMPY = Arm("flax-numpy", "flax", "Doors-v0", "Flax x Doors-v0 (NumPy)", train, save_model,
                 algorithms=ALGORITHMS, study=StudyFigures("Flax + Gym (sync envs)", 0.64, 22.8 * 60))  # fmt: skip
FLAX_JAX = dataclasses.replace(FLAX_NUMPY, name="flax-jax", env_id="DoorsJax-v0", label="Flax x DoorsJax-v0",
                               study=StudyFigures("Flax + Gym + JAX-vectorised env", 0.71, 2.3 * 60))  # fmt: skip
ARMS = (FLAX_NUMPY, FLAX_JAX)
"""This file's arms: the same learner against the NumPy env and the JAX env."""
