"""Tabular Q-learning on Doors in pure JAX: many agents, one jitted ``lax.scan`` (PureJaxRL style).

An agent needs its cell and the goal's column (the goal is always on row 0), so its Q-table is
``(H * W, W, 5)`` float32, indexed ``[agent_cell, goal_col, action]`` with
``agent_cell = agent_row * W + agent_col``: 16,875 values (66 KiB) on the default grid.

``make_train(config, params)`` returns a pure ``train(key)``; ``jax.jit(jax.vmap(train))(keys)``
trains one agent per key in one compile:

>>> import jax
>>> from doors_gym_qtable import QConfig, make_train
>>> train = make_train(QConfig(total_steps=20_000, eval_every=10_000))
>>> output = jax.jit(jax.vmap(train))(jax.random.split(jax.random.key(0), 4))
>>> output.q_table.shape, output.metrics.reward_per_step.shape, output.evaluation.success_rate.shape
((4, 225, 15, 5), (4, 20000), (4, 2))

Choices, stated once:

- **Ties** between equal Q-values go to the lowest action index (``jnp.argmax``), in training and in
  evaluation. With an optimistic ``initial_value`` this is a systematic sweep: an untried action keeps
  its optimistic value until tried, so the agent tries ``stay``, ``right``, ... in turn.
- **Synchronous updates**: every env of an iteration acts on, and bootstraps from, the table as it was
  at the start of the iteration; then all of the iteration's updates are applied at once.
- **Several envs on one entry** in an iteration: Doors is deterministic, so transitions from the same
  ``(state, action)`` have the same reward and end state, hence (read from the same table) the same TD
  error. The update writes ``Q + learning_rate * error`` with a scatter-*set*: whichever duplicate lands, the
  entry moves once, exactly as one transition would move it, and a run repeats bit for bit. (A scatter-add
  of the errors would apply the update once per env: with two envs and a learning rate of 1, it would
  overshoot the target by a whole error.)
- **Terminated and truncated stay apart** up to the TD target: a terminated transition's target is its
  reward; a truncated one bootstraps from the state it ended in (``info["final_state"]``), not from the
  next episode's start that same-step autoreset returns.
- **Env steps** are :func:`doors_gym.jax.batch_step`'s own: ``vmap`` of
  :func:`~doors_gym.jax.step_from_draw`, with the reset draws made for a block of iterations at once
  (:data:`DRAW_BLOCK_STEPS`) rather than once per iteration.
- **Memory**: the metrics take 12 bytes per iteration per agent (a million steps of 1,024 agents with one
  env each: 12 GB); raise ``num_envs`` or train in pieces (:func:`make_parts`) for longer runs.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from doors_gym import core
from doors_gym.core import NUM_ACTIONS, DoorsParams, DoorsState
from doors_gym.jax import functional as F

Array = jax.Array
DEFAULT_PARAMS = DoorsParams()


def _is_real(value: Any) -> bool:
    return isinstance(value, (int, float, np.floating, np.integer)) and not isinstance(value, bool)


def _check_number(name: str, value: Any, low: float, high: float, closed: str = "[]") -> None:
    """``ValueError`` naming ``name`` unless ``value`` is a real number in the interval from ``low`` to ``high``.

    ``closed`` gives the interval's brackets: ``"[]"``, ``"(]"`` or ``"[)"``.
    """
    inside = (
        _is_real(value)
        and (value >= low if closed[0] == "[" else value > low)
        and (value <= high if closed[1] == "]" else value < high)
    )
    if not inside:
        raise ValueError(
            f"{name}={value!r} is out of range: expected a number in {closed[0]}{low:g}, {high:g}{closed[1]}"
        )


def _check_integer(name: str, value: Any, minimum: int) -> None:
    """``ValueError`` naming ``name`` unless ``value`` is an integer ``>= minimum``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name}={value!r} is out of range: expected an integer >= {minimum}")


@dataclasses.dataclass(frozen=True)
class QHyperparameters:
    """The tabular agent's hyperparameters (what a preset sets and a study searches), validated on construction.

    Args:
        learning_rate: step size alpha, in ``(0, 1]``. Doors is deterministic, so 1 (the target replaces
            the old value) is sound, and the fastest.
        gamma: discount, in ``[0, 1)``.
        start_epsilon: exploration rate at the start, in ``[0, 1]``.
        end_epsilon: exploration rate once decayed, in ``[0, 1]``. With both at 0 (the default) the agent
            explores by optimism alone, and no exploration draws are made.
        exploration_fraction: share of ``total_steps`` over which epsilon decays linearly, in ``[0, 1]``.
        initial_value: every Q-value before training, a finite number. Above what staying put or going round
            in circles is worth (about 0), every untried action looks better than the tried ones, so the
            agent tries each in turn; below what a good path is worth (up to ``1 / (1 - gamma)``), it then
            keeps to the path it found.
        num_envs: envs each agent steps per iteration, ``>= 1``.

    Raises:
        ValueError: naming the field, the value and the allowed range.
    """

    learning_rate: float = 1.0
    gamma: float = 0.8
    start_epsilon: float = 0.0
    end_epsilon: float = 0.0
    exploration_fraction: float = 0.5
    initial_value: float = 2.0
    num_envs: int = 1

    def __post_init__(self) -> None:
        _check_number("learning_rate", self.learning_rate, 0.0, 1.0, "(]")
        _check_number("gamma", self.gamma, 0.0, 1.0, "[)")
        for name in ("start_epsilon", "end_epsilon", "exploration_fraction"):
            _check_number(name, getattr(self, name), 0.0, 1.0)
        if not _is_real(self.initial_value) or not math.isfinite(self.initial_value):
            raise ValueError(f"initial_value={self.initial_value!r} is out of range: expected a finite number")
        _check_integer("num_envs", self.num_envs, 1)

    @property
    def explores(self) -> bool:
        """Whether the agent ever acts at random (else it explores by optimism alone, with no draws made)."""
        return self.start_epsilon > 0 or self.end_epsilon > 0


@dataclasses.dataclass(frozen=True)
class QConfig(QHyperparameters):
    """Hyperparameters (:class:`QHyperparameters`) and budget of one tabular Q-learning agent, validated on
    construction.

    Args:
        total_steps: env steps per agent (summed over its envs), a multiple of ``num_envs``.
        eval_every: env steps between greedy evaluations over every start/goal pair, a multiple of
            ``num_envs`` that divides ``total_steps``; 0: one evaluation, at the end.

    The defaults solve the default layout (greedy success >= 99 % over all 225 pairs) in about 25,000 env steps
    (``benchmarks/time_to_solved.py``).

    Raises:
        ValueError: naming the field, the value and the allowed range.
    """

    total_steps: int = 50_000
    eval_every: int = 1_000

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_integer("total_steps", self.total_steps, 1)
        _check_integer("eval_every", self.eval_every, 0)
        if self.total_steps % self.num_envs:
            raise ValueError(
                f"total_steps={self.total_steps!r} is invalid: expected a multiple of num_envs={self.num_envs}"
            )
        if self.eval_every and (self.eval_every % self.num_envs or self.total_steps % self.eval_every):
            raise ValueError(
                f"eval_every={self.eval_every!r} is invalid: expected 0 or a multiple of num_envs={self.num_envs} "
                f"that divides total_steps={self.total_steps}"
            )

    @classmethod
    def of(cls, hyperparameters: QHyperparameters, total_steps: int, eval_every: int) -> QConfig:
        """``hyperparameters`` with a budget of ``total_steps`` env steps, evaluated every ``eval_every``."""
        return cls(**dataclasses.asdict(hyperparameters), total_steps=total_steps, eval_every=eval_every)

    @property
    def num_iterations(self) -> int:
        """Iterations of the scan: each steps every env once."""
        return self.total_steps // self.num_envs

    @property
    def num_evaluations(self) -> int:
        """Greedy evaluations of a run (the last one at ``total_steps``)."""
        return self.total_steps // self.eval_every if self.eval_every else 1

    @property
    def evaluation_steps(self) -> np.ndarray:
        """``(num_evaluations,)`` int64: the env steps (per agent) at which each evaluation is taken."""
        interval = self.eval_every or self.total_steps
        return interval * np.arange(1, self.num_evaluations + 1, dtype=np.int64)

    def epsilon(self, step: Any, xp: Any = np) -> Any:
        """The exploration rate after ``step`` env steps (NumPy's ``xp`` or ``jax.numpy`` in a trace)."""
        duration = max(1.0, self.exploration_fraction * self.total_steps)
        fraction = xp.minimum(1.0, step / duration)
        return self.start_epsilon + fraction * (self.end_epsilon - self.start_epsilon)


class Metrics(NamedTuple):
    """Training figures, one value per iteration (a leading agent axis under ``vmap``)."""

    reward_per_step: Array
    """float32: the mean reward of the iteration's transitions."""
    episodes: Array
    """int32: episodes that ended in the iteration (terminated or truncated)."""
    successes: Array
    """int32: episodes that ended on the goal in the iteration."""


class Evaluation(NamedTuple):
    """Greedy figures over every start/goal pair (float32 scalars, or one value per evaluation)."""

    success_rate: Array
    """Share of pairs whose episode reaches the goal within the time limit."""
    mean_step_reward: Array
    """Total reward over total steps of all pairs (the study's per-step reward; 0.776 is optimal by default)."""
    normalised_return: Array
    """Mean over pairs of return / start distance (1.0 on every pair that reaches the goal)."""


class TrainOutput(NamedTuple):
    """What ``train(key)`` returns; under ``vmap`` every field gains a leading agent axis."""

    q_table: Array
    """``(H * W, W, 5)`` float32, indexed ``[agent_cell, goal_col, action]``."""
    metrics: Metrics
    """Each ``(num_iterations,)``."""
    evaluation: Evaluation
    """Each ``(num_evaluations,)``, taken at :attr:`QConfig.evaluation_steps`."""


class Runner(NamedTuple):
    """What one agent carries through the scan."""

    q_table: Array
    """``(H * W * W, 5)`` float32: the table with its first two axes merged (row ``agent_cell * W + goal_col``)."""
    env_state: DoorsState
    """Each field ``(num_envs,)`` int32."""
    key: Array
    """The loop's key, split at every block of iterations."""


class TrainParts(NamedTuple):
    """A run in pieces, for a host loop that looks at each evaluation (e.g. to stop once solved).

    ``train(key)`` is ``init`` then ``num_segments`` calls of ``run_segment``, scanned; each piece is a pure
    function of one agent (``vmap`` them over agents).
    """

    init: Callable[[Array], Runner]
    """``init(key) -> runner``: the initial table (every value ``initial_value``) and env starts."""
    run_segment: Callable[[Runner, Array], tuple[Runner, tuple[Metrics, Evaluation]]]
    """``run_segment(runner, segment_index) -> (runner, (metrics, evaluation))``: ``eval_every / num_envs``
    iterations (each metric of that length), then one greedy evaluation (scalars)."""
    num_segments: int
    """Segments of a run (:attr:`QConfig.num_evaluations`)."""


def table_rows(state: DoorsState, params: DoorsParams = DEFAULT_PARAMS) -> Array:
    """The row of the merged ``(H * W * W, 5)`` table that holds ``state``'s Q-values: int32, ``state``'s shape."""
    return (state.agent_row * params.width + state.agent_col) * params.width + state.goal_col


def td_update(
    q_rows: Array,
    rows: Array,
    actions: Array,
    rewards: Array,
    final_rows: Array,
    terminated: Array,
    learning_rate: float,
    gamma: float,
) -> Array:
    """One synchronous Q-learning update of a batch of transitions.

    ``Q[s, a] <- Q[s, a] + learning_rate * (r + gamma * (1 - terminated) * max_b Q[s', b] - Q[s, a])``, every term
    read from the table as given, where ``s'`` is the state the transition ended in: a truncated transition
    bootstraps from it, a terminated one does not. Several transitions from the same ``(s, a)`` write that entry
    once, with one of their updates (unspecified which): on Doors, a deterministic env, they are all equal.

    Args:
        q_rows: ``(num_states, 5)`` float32 table.
        rows: ``(batch,)`` int32 rows of the states acted in.
        actions: ``(batch,)`` int32 actions.
        rewards: ``(batch,)`` float32 rewards.
        final_rows: ``(batch,)`` int32 rows of the states the transitions ended in.
        terminated: ``(batch,)`` bool, True where the transition reached the goal.
        learning_rate: step size alpha.
        gamma: discount.

    Returns:
        The updated ``(num_states, 5)`` float32 table.
    """
    bootstrap = jnp.where(terminated, 0.0, gamma * q_rows[final_rows].max(axis=-1))
    old_values = q_rows[rows, actions]
    return q_rows.at[rows, actions].set(old_values + learning_rate * (rewards + bootstrap - old_values))


def greedy_evaluation(q_table: Array, params: DoorsParams = DEFAULT_PARAMS) -> Evaluation:
    """Greedy episodes from every start/goal pair (``W * W`` of them) up to the time limit.

    Actions are ``argmax`` of the table (ties: lowest index). The time limit is ``params.max_episode_steps``
    (60 by default; :data:`doors_gym.core.DEFAULT_MAX_EPISODE_STEPS` when it is None). Pure and jittable:
    ``vmap`` over the pairs, ``lax.scan`` over the steps.

    Args:
        q_table: ``(H * W, W, 5)`` float32, indexed ``[agent_cell, goal_col, action]``.
        params: the layout.

    Returns:
        :class:`Evaluation` of float32 scalars.
    """
    width = params.width
    q_rows = q_table.reshape(params.num_cells * width, NUM_ACTIONS)
    limit = params.max_episode_steps or core.DEFAULT_MAX_EPISODE_STEPS

    def episode(pair: Array) -> tuple[Array, Array, Array, Array]:
        start = F.initial_from_draw(pair, params)

        def step(carry: tuple, _: None) -> tuple[tuple, None]:
            state, ended, reward_sum, length, reached = carry
            action = jnp.argmax(q_rows[table_rows(state, params)]).astype(jnp.int32)
            next_state, reward, terminated, truncated, _ = F.transition_parts(state, action, params)
            running = ~ended
            carry = (
                F.where_state(running, next_state, state),
                ended | terminated | truncated,
                reward_sum + jnp.where(running, reward, 0.0),
                length + running.astype(jnp.int32),
                reached | (running & terminated),
            )
            return carry, None

        initial = (start, jnp.bool_(False), jnp.float32(0.0), jnp.int32(0), jnp.bool_(False))
        (_, _, reward_sum, length, reached), _ = jax.lax.scan(step, initial, None, length=limit)
        return reward_sum, length, reached, core.state_distance(start, jnp)

    returns, lengths, reached, start_distances = jax.vmap(episode)(jnp.arange(width * width, dtype=jnp.int32))
    return Evaluation(
        success_rate=reached.mean(dtype=jnp.float32),
        mean_step_reward=returns.sum() / lengths.sum().astype(jnp.float32),
        normalised_return=(returns / start_distances).mean(),
    )


DRAW_BLOCK_STEPS = 1024
"""Env steps whose random draws are made at once (at least one iteration's).

On a CPU, JAX lowers each threefry call to a loop of its rounds: a few dozen small kernels whatever the
batch, several times the cost of the Q-learning step itself. Drawing a block's exploration coins, random
actions and env starts in one call moves that cost out of the iteration.
"""


class Draws(NamedTuple):
    """One iteration's random draws, ``(num_envs,)`` each (a leading iteration axis per block)."""

    explore_bits: Array | None
    """uint32: the exploration coin (its high 24 bits); None when epsilon is 0 throughout."""
    action_bits: Array | None
    """uint32: the random action (modulo 5, a bias of 5 / 2**32); None when epsilon is 0 throughout."""
    starts: Array
    """int32: the start a finishing episode resets to (:func:`doors_gym.jax.functional.draw_starts`)."""


Iteration = Callable[[Runner, tuple[Array, Draws]], tuple[Runner, Metrics]]
"""One iteration of the scan: ``(runner, (iteration index, draws)) -> (runner, metrics)``."""


def make_iteration(config: QConfig, params: DoorsParams) -> Iteration:
    """One iteration of the scan (:data:`Iteration`): every env acts
    (greedily, or at random with probability epsilon), steps, and the table takes the iteration's TD updates
    at once (the module's choices: ties, synchronous updates, terminated apart from truncated)."""
    num_envs, explores = config.num_envs, config.explores

    def iteration(runner: Runner, inputs: tuple[Array, Draws]) -> tuple[Runner, Metrics]:
        iteration_index, draws = inputs
        rows = table_rows(runner.env_state, params)
        actions = jnp.argmax(runner.q_table[rows], axis=-1).astype(jnp.int32)
        if explores:
            coin = (draws.explore_bits >> 8).astype(jnp.float32) * jnp.float32(2.0**-24)
            epsilon = config.epsilon(iteration_index * num_envs, jnp)
            actions = jnp.where(coin < epsilon, (draws.action_bits % NUM_ACTIONS).astype(jnp.int32), actions)
        _, env_state, reward, terminated, truncated, info = jax.vmap(F.step_from_draw, in_axes=(0, 0, 0, None))(
            draws.starts, runner.env_state, actions, params
        )
        final_rows = table_rows(info["final_state"], params)
        q_rows = td_update(
            runner.q_table, rows, actions, reward, final_rows, terminated, config.learning_rate, config.gamma
        )
        metrics = Metrics(
            reward_per_step=reward.mean(),
            episodes=(terminated | truncated).sum(dtype=jnp.int32),
            successes=terminated.sum(dtype=jnp.int32),
        )
        return runner._replace(q_table=q_rows, env_state=env_state), metrics

    return iteration


def make_parts(config: QConfig, params: DoorsParams = DEFAULT_PARAMS) -> TrainParts:
    """The pieces of :func:`make_train`'s ``train``: ``init`` and ``run_segment`` (see :class:`TrainParts`); a
    segment scans blocks of :func:`make_iteration`'s iterations, their random draws made once per block."""
    num_envs, explores = config.num_envs, config.explores
    iterations_per_segment = config.num_iterations // config.num_evaluations
    iterations_per_block = min(iterations_per_segment, max(1, DRAW_BLOCK_STEPS // num_envs))
    full_blocks, last_block = divmod(iterations_per_segment, iterations_per_block)
    num_rows = params.num_cells * params.width
    iteration = make_iteration(config, params)

    def init(key: Array) -> Runner:
        reset_key, loop_key = jax.random.split(key)
        _, env_state = F.batch_reset(reset_key, num_envs, params)
        q_rows = jnp.full((num_rows, NUM_ACTIONS), config.initial_value, jnp.float32)
        return Runner(q_rows, env_state, loop_key)

    def run_block(runner: Runner, first_index: Array, length: int) -> tuple[Runner, Metrics]:
        key, explore_key, start_key = jax.random.split(runner.key, 3)
        explore_bits = action_bits = None
        if explores:
            explore_bits, action_bits = jax.random.bits(explore_key, (2, length, num_envs), jnp.uint32)
        draws = Draws(explore_bits, action_bits, F.draw_starts(start_key, (length, num_envs), params))
        runner, metrics = jax.lax.scan(iteration, runner, (first_index + jnp.arange(length), draws))
        return runner._replace(key=key), metrics

    def run_segment(runner: Runner, segment_index: Array) -> tuple[Runner, tuple[Metrics, Evaluation]]:
        first = segment_index * iterations_per_segment

        def full_block(runner: Runner, block_index: Array) -> tuple[Runner, Metrics]:
            return run_block(runner, first + block_index * iterations_per_block, iterations_per_block)

        runner, metrics = jax.lax.scan(full_block, runner, jnp.arange(full_blocks))
        metrics = jax.tree.map(lambda values: values.reshape(-1), metrics)
        if last_block:
            runner, last_metrics = run_block(runner, first + full_blocks * iterations_per_block, last_block)
            metrics = jax.tree.map(lambda *parts: jnp.concatenate(parts), metrics, last_metrics)
        evaluation = greedy_evaluation(runner.q_table.reshape(params.num_cells, params.width, NUM_ACTIONS), params)
        return runner, (metrics, evaluation)

    return TrainParts(init, run_segment, config.num_evaluations)


def make_train(config: QConfig, params: DoorsParams = DEFAULT_PARAMS) -> Callable[[Array], TrainOutput]:
    """A pure ``train(key) -> TrainOutput`` for one agent, its whole run one ``lax.scan``.

    The scan runs over evaluation periods (``eval_every`` env steps, each ending in :func:`greedy_evaluation`),
    each a scan over blocks of :data:`DRAW_BLOCK_STEPS` env steps (one random draw each), each a scan over
    iterations (every env steps once, then one Q-update per transition). ``key`` is split once into the env
    starts and the loop's key; each block splits the loop's key into the next one, its exploration draws and
    its env starts. ``jax.jit(jax.vmap(train))(keys)`` with ``keys = jax.random.split(jax.random.key(seed),
    num_agents)`` trains ``num_agents`` agents in one compile.

    Args:
        config: hyperparameters and budget (static: closed over).
        params: the layout (static).

    Returns:
        ``train(key)``; see :class:`TrainOutput` for shapes and dtypes.
    """
    parts = make_parts(config, params)

    def train(key: Array) -> TrainOutput:
        runner, (metrics, evaluation) = jax.lax.scan(parts.run_segment, parts.init(key), jnp.arange(parts.num_segments))
        metrics = jax.tree.map(lambda values: values.reshape(-1), metrics)
        q_table = runner.q_table.reshape(params.num_cells, params.width, NUM_ACTIONS)
        return TrainOutput(q_table, metrics, evaluation)

    return train
