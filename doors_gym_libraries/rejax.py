"""The ``rejax-dqn`` and ``rejax-pqn`` arms: rejax's DQN and PQN (one jitted program each) on the JAX env, run by
doors-gym's protocol. ``pip install "doors-gym[rejax]"``.

rejax takes ``DoorsGymnax()`` as its env object (gymnax's five-value step, ``step_api="0.0"``), wrapped here in
:class:`EpisodeTotals`, which adds up the reward, steps, count and successes of the episodes that end (rejax
keeps no training figures). A run is rejax's own ``train`` cut into segments: ``init_state``, then one
compiled program of ``ceil(eval_every / env steps per iteration)`` calls of the algorithm's ``train_iteration``
(what rejax's ``train`` runs between two of its evaluations), so the host evaluates greedily over every
start/goal pair after each and stops once solved and held. Time to solved includes the compile. The phases
rejax lets one see are the compile, the segments (acting, env steps, replay and updates in one program) and
the evaluation.

rejax 0.1.3 builds its Q-network with fixed widths ``(64, 64)``; the arm puts its own ``hidden_layer_sizes``
in with the record's ``replace`` (the same module class, rejax's activation for PQN).
"""

from __future__ import annotations

import dataclasses
import io
import math
import time
import zipfile
from importlib.metadata import version
from typing import Any, NamedTuple

import numpy as np

from doors_gym.extras import require
from doors_gym.wrappers import agent_goal_planes
from doors_gym_baselines.api import (
    ONE_MINUS,
    POWER_OF_TWO,
    Config,
    Range,
    TrainResult,
    field,
    jax_compilation_cache,
)

from .common import (
    GreedyModel,
    LibraryArm,
    SegmentWindow,
    check_choice,
    check_network,
    check_positive,
    check_unit,
    env_keywords,
    greedy_schedule,
    presets,
    read_archive,
    write_archive,
)

PARAMS_ENTRY = "params.msgpack"
"""The archive entry of the Q-network's parameters (``flax.serialization.to_bytes``)."""
ACTIVATIONS = ("swish", "relu", "tanh", "gelu")
"""rejax's DQN activations by their ``flax.linen`` name (PQN's is its own: ReLU after LayerNorm)."""
OBSERVATION_HELP = (
    "the env's observation: the grid's cell codes, its one-hot flat form, or cells: the agent's and the goal's "
    "planes, as this package's arms read them"
)


@dataclasses.dataclass(frozen=True)
class RejaxHyperparameters:
    """The settings rejax's DQN and PQN share, rejax's defaults: its ``Algorithm``'s (learning rate, discount,
    clipping), ``VectorizedEnvMixin``'s and ``EpsilonGreedyMixin``'s, and the arm's Q-network and observation."""

    learning_rate: float = field(3e-4, "Adam's step size (constant)")
    gamma: float = field(0.99, "discount factor")
    max_grad_norm: float = field(math.inf, "clip each gradient element to this (rejax's optax.clip; inf: none)")
    num_envs: int = field(1, "vmapped envs")
    eps_start: float = field(1.0, "epsilon at the start")
    eps_end: float = field(0.05, "epsilon after the decay")
    exploration_fraction: float = field(0.1, "share of the budget over which epsilon decays")
    hidden_layer_sizes: tuple[int, ...] = field((64, 64), "widths of the Q-network's hidden layers")
    observation: str = field("grid", OBSERVATION_HELP)

    def __post_init__(self) -> None:
        check_positive(self, "num_envs")
        check_unit(self, "gamma", "eps_start", "eps_end", "exploration_fraction")
        check_network(self, "hidden_layer_sizes")
        norm = self.max_grad_norm
        if isinstance(norm, bool) or not isinstance(norm, (int, float)) or not norm > 0:
            raise ValueError(f"max_grad_norm={norm!r} is out of range: expected a number > 0 (inf: no clipping)")


@dataclasses.dataclass(frozen=True)
class RejaxDQNHyperparameters(RejaxHyperparameters):
    """rejax DQN's settings (``rejax.DQN.create``), rejax's defaults: the shared ones and its replay's and target's."""

    buffer_size: int = field(131_072, "replay buffer capacity, in transitions")
    fill_buffer: int = field(2_048, "env steps of uniform actions before the first update")
    batch_size: int = field(256, "transitions per gradient step")
    num_epochs: int = field(1, "gradient steps per vector step")
    target_update_freq: int = field(1, "env steps between target updates")
    polyak: float = field(0.99, "target <- polyak * target + (1 - polyak) * online at each target update")
    ddqn: bool = field(True, "Double DQN targets")
    activation: str = field("swish", "hidden activation (flax.linen)", choices=ACTIVATIONS)

    def __post_init__(self) -> None:
        super().__post_init__()
        check_positive(self, "num_epochs", "buffer_size", "batch_size", "target_update_freq")
        check_positive(self, "fill_buffer", minimum=0)
        check_unit(self, "polyak")
        check_choice(self, "activation", ACTIVATIONS)
        check_choice(self, "ddqn", (True, False))


@dataclasses.dataclass(frozen=True)
class RejaxPQNHyperparameters(RejaxHyperparameters):
    """rejax PQN's settings (``rejax.PQN.create``), rejax's defaults: the shared ones (64 envs) and its rollout's."""

    num_envs: int = field(64, "vmapped envs")
    num_steps: int = field(64, "steps of each env per iteration")
    num_minibatches: int = field(16, "minibatches per epoch of an iteration's steps")
    num_epochs: int = field(1, "passes over an iteration's steps")
    td_lambda: float = field(0.9, "lambda of the Q(lambda) targets")

    def __post_init__(self) -> None:
        super().__post_init__()
        check_positive(self, "num_epochs", "num_steps", "num_minibatches")
        check_unit(self, "td_lambda")
        if (self.num_envs * self.num_steps) % self.num_minibatches:
            raise ValueError(
                f"num_minibatches={self.num_minibatches} does not divide num_envs * num_steps = "
                f"{self.num_envs * self.num_steps}: expected a divisor"
            )


class Totals(NamedTuple):
    """Per env: the running episode's return and length, and the totals of the episodes ended so far."""

    episode_return: Any
    episode_length: Any
    reward: Any
    steps: Any
    episodes: Any
    successes: Any


class TotalsState(NamedTuple):
    """The wrapped env's state and its :class:`Totals`."""

    env: Any
    totals: Totals


class EpisodeTotals:
    """A gymnax-style env (five-value step) that adds up the episodes ending in it (:class:`Totals`), its
    observations made into the agent's and the goal's planes where ``cells`` (the ``cells`` observation)."""

    def __init__(self, env: Any, cells: bool = False) -> None:
        self.env = env
        self.cells = cells

    def _observed(self, obs: Any) -> Any:
        import jax.numpy as jnp

        return agent_goal_planes(obs, jnp) if self.cells else obs

    @property
    def default_params(self) -> Any:
        return self.env.default_params

    def action_space(self, params: Any = None) -> Any:
        return self.env.action_space(params)

    def observation_space(self, params: Any = None) -> Any:
        space = self.env.observation_space(params)
        if not self.cells:
            return space
        import jax.numpy as jnp

        return type(space)(0.0, 1.0, (2 * space.shape[-1],), jnp.float32)

    def reset(self, key: Any, params: Any = None) -> tuple[Any, TotalsState]:
        import jax.numpy as jnp

        obs, state = self.env.reset(key, params)
        zero = jnp.zeros((), jnp.float32)
        return self._observed(obs), TotalsState(state, Totals(*([zero] * 6)))

    def step(self, key: Any, state: TotalsState, action: Any, params: Any = None) -> tuple[Any, ...]:
        import jax.numpy as jnp

        obs, inner, reward, done, info = self.env.step(key, state.env, action, params)
        old = state.totals
        episode_return, episode_length = old.episode_return + reward, old.episode_length + 1.0
        ended = done.astype(jnp.float32)
        totals = Totals(
            episode_return * (1.0 - ended),
            episode_length * (1.0 - ended),
            old.reward + ended * episode_return,
            old.steps + ended * episode_length,
            old.episodes + ended,
            old.successes + ended * info["terminated"].astype(jnp.float32),
        )
        return self._observed(obs), TotalsState(inner, totals), reward, done, info


def make_algorithm(config: Config, arm: LibraryArm) -> Any:
    """rejax's algorithm of ``arm`` for ``config``, on :class:`EpisodeTotals` of ``DoorsGymnax``."""
    rejax = require("rejax", f"the {arm.name} arm")
    from flax import linen as nn

    from doors_gym.jax import DoorsGymnax

    run, hyper = config.run, config.hyperparameters
    env = EpisodeTotals(DoorsGymnax(step_api="0.0", **env_keywords(config)), hyper.observation == "cells")
    settings = {name: getattr(hyper, name) for name in _settings_of(hyper)}
    algorithm = getattr(rejax, arm.module().ALGORITHMS[arm.name]).create(
        env=env,
        env_params=env.default_params,
        total_timesteps=run.total_steps,
        eval_freq=run.eval_every or run.total_steps,
        skip_initial_evaluation=True,
        **settings,
    )
    agent = algorithm.agent
    activation = getattr(nn, hyper.activation) if hasattr(hyper, "activation") else agent.activation
    network = type(agent)(hidden_layer_sizes=tuple(hyper.hidden_layer_sizes), action_dim=5, activation=activation)
    return algorithm.replace(agent=network)


def _settings_of(hyper: Any) -> tuple[str, ...]:
    """The hyperparameters rejax's ``create`` takes by their own name."""
    return tuple(
        spec.name
        for spec in dataclasses.fields(hyper)
        if spec.name not in ("hidden_layer_sizes", "activation", "observation")
    )


def steps_per_iteration(hyper: Any) -> int:
    """Env steps of one ``train_iteration``: one vector step (DQN), ``num_steps`` of them (PQN)."""
    return hyper.num_envs * getattr(hyper, "num_steps", 1)


def updates_of(hyper: Any, step: int) -> int:
    """Gradient updates in ``step`` env steps: ``num_epochs`` per vector step past ``fill_buffer`` (DQN),
    ``num_epochs * num_minibatches`` per iteration (PQN)."""
    if hasattr(hyper, "num_minibatches"):
        return step // steps_per_iteration(hyper) * hyper.num_epochs * hyper.num_minibatches
    return max(0, step - hyper.fill_buffer) // hyper.num_envs * hyper.num_epochs


class RejaxModel(GreedyModel):
    """A trained rejax Q-network on grid observations ``(batch, H * W)``: ``q_values`` and ``act``."""

    def __init__(self, agent: Any, params: Any, config: Config) -> None:
        import jax

        self.agent, self.params, self.config = agent, params, config
        self._apply = jax.jit(agent.apply)

    def q_values(self, obs: np.ndarray) -> np.ndarray:
        """``(batch, 5)`` float32 Q-values (the network's input made as in training)."""
        return np.asarray(self._apply(self.params, self.inputs(obs)), dtype=np.float32)


def compiled(config: Config, arm: LibraryArm) -> tuple[Any, Any, Any, int]:
    """``(algorithm, first train state, the compiled segment, segments)`` of a run."""
    import jax

    algorithm = make_algorithm(config, arm)
    hyper, run = config.hyperparameters, config.run
    iterations = math.ceil((run.eval_every or run.total_steps) / steps_per_iteration(hyper))
    state = jax.jit(algorithm.init_state)(jax.random.key(run.seed))

    def segment(state: Any) -> Any:
        return jax.lax.fori_loop(0, iterations, lambda _, inner: algorithm.train_iteration(inner), state)

    program = jax.jit(segment).lower(state).compile()
    segments = math.ceil(run.total_steps / (iterations * steps_per_iteration(hyper)))
    return algorithm, state, program, segments


def train(config: Config, trial: Any, arm: LibraryArm) -> TrainResult:
    """Trains one seed in compiled segments; evaluates after each and stops when solved and held."""
    import jax

    run = config.run
    with jax_compilation_cache(run.jax_cache):
        start = time.perf_counter()
        algorithm, state, program, segments = compiled(config, arm)
        compile_seconds = time.perf_counter() - start
        window, seen = SegmentWindow(run.rolling_episodes), np.zeros(4)
        model = RejaxModel(algorithm.agent, state.q_ts.params, config)
        epsilon = algorithm.epsilon_schedule
        schedule = greedy_schedule(model, config, trial, start, window, lambda step: float(epsilon(step)))
        training, step = 0.0, 0
        for index in range(segments):
            began = time.perf_counter()
            state = program(state)
            totals = state.env_state.totals
            now = np.array([float(np.sum(jax.device_get(value))) for value in totals[2:]], np.float64)
            training += time.perf_counter() - began
            window.add(*(now - seen))
            seen, step = now, int(state.global_step)
            model.params = state.q_ts.params
            if schedule.should_stop(step, index + 1 < segments):
                break
        phases = {"compile": compile_seconds, "update": training}
        method = "rejax's train_iteration in compiled segments: acting, env steps, replay and updates in one program"
        figures = {"env_steps": step, "updates": updates_of(config.hyperparameters, step), "model": model}
        facts = {"rejax": version("rejax"), "jax": jax.__version__, "backend": jax.default_backend()}
        return schedule.finish(arm, start, step, phases, method, facts=facts, **figures)


def save_model(result: TrainResult, path: str, seed_index: int = 0) -> None:
    """Writes a zip of the Q-network's parameters (Flax msgpack; rejax has no model format) and the config."""
    from flax import serialization

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as handle:
        handle.writestr(PARAMS_ENTRY, serialization.to_bytes(result.model.params))
    write_archive(path, buffer.getvalue(), result.arm, result.config)


def load_with(arm: LibraryArm, path: str) -> tuple[str, RejaxModel, Config]:
    """``(arm name, model, config)`` of a file :func:`save_model` wrote for ``arm``."""
    import jax
    from flax import serialization

    name, archive, config = read_archive(path, arm.hyperparameters)
    algorithm = make_algorithm(config, arm)
    template = algorithm.agent.init(jax.random.key(0), np.zeros((1, *algorithm.obs_space.shape), np.float32))
    with zipfile.ZipFile(io.BytesIO(archive)) as handle:
        params = serialization.from_bytes(template, handle.read(PARAMS_ENTRY))
    return name, RejaxModel(algorithm.agent, params, config), config


def train_dqn(config: Config, trial: Any = None, arm: Any = None) -> TrainResult:
    """Trains rejax's DQN (see :func:`train`)."""
    return train(config, trial, arm or DQN_ARM)


def train_pqn(config: Config, trial: Any = None, arm: Any = None) -> TrainResult:
    """Trains rejax's PQN (see :func:`train`)."""
    return train(config, trial, arm or PQN_ARM)


def load_dqn(path: str) -> tuple[str, RejaxModel, Config]:
    """A ``rejax-dqn`` model file."""
    return load_with(DQN_ARM, path)


def load_pqn(path: str) -> tuple[str, RejaxModel, Config]:
    """A ``rejax-pqn`` model file."""
    return load_with(PQN_ARM, path)


ALGORITHMS = {"rejax-dqn": "DQN", "rejax-pqn": "PQN"}
"""Each arm's rejax class."""
COMMON_SPACE = (
    Range("learning_rate", 1e-4, 1e-2, log=True),
    Range("one_minus_gamma", 0.05, 0.2, log=True, hyperparameter="gamma", scale=ONE_MINUS),
    Range("log2_num_envs", 2, 6, integer=True, hyperparameter="num_envs", scale=POWER_OF_TWO),
    Range("exploration_fraction", 0.05, 0.5),
)
DQN_SPACE = (
    *COMMON_SPACE,
    Range("log2_batch_size", 5, 8, integer=True, hyperparameter="batch_size", scale=POWER_OF_TWO),
    Range("target_update_freq", 100, 5000, log=True, integer=True),
    Range("fill_buffer", 500, 10_000, log=True, integer=True),
)
PQN_SPACE = (
    *COMMON_SPACE,
    Range("log2_num_steps", 3, 7, integer=True, hyperparameter="num_steps", scale=POWER_OF_TWO),
    Range("td_lambda", 0.5, 1.0),
    # The gradient steps per iteration (epochs x minibatches): rejax's default, one epoch of 16, gives 64 envs of
    # 64 steps 16 updates, so 200k env steps about 800 updates, a fifth of the DQN arms'.
    Range("log2_num_minibatches", 0, 5, integer=True, hyperparameter="num_minibatches", scale=POWER_OF_TWO),
    Range("num_epochs", 1, 8, integer=True),
)
DQN_ARM = LibraryArm(
    "rejax-dqn",
    "jax",
    "DoorsJax-v0",
    "rejax DQN, one jitted program",
    train_dqn,
    save_model,
    loader=load_dqn,
    hyperparameters=RejaxDQNHyperparameters,
    steps_pure_functions=True,
    presets=presets("rejax-dqn", ("defaults", "shared", "shared-onehot", "tuned")),
    search_space=DQN_SPACE,
    requirements=("rejax", "jax", "flax"),
)
"""The ``rejax-dqn`` arm's record."""
PQN_ARM = dataclasses.replace(
    DQN_ARM,
    name="rejax-pqn",
    label="rejax PQN, one jitted program",
    trainer=train_pqn,
    loader=load_pqn,
    hyperparameters=RejaxPQNHyperparameters,
    presets=presets("rejax-pqn", ("defaults", "shared", "shared-onehot", "tuned")),
    search_space=PQN_SPACE,
)
"""The ``rejax-pqn`` arm's record."""
