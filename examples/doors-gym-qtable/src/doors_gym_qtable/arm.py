"""The ``qtable`` arm: tabular Q-learning (:mod:`doors_gym_qtable.qlearning`) as doors-gym runs an arm.

doors-gym finds it through this package's entry point ``qtable = "doors_gym_qtable.arm:ARM"`` (group
``doors_gym.arms``). Everything it needs from doors-gym comes from one module, :mod:`doors_gym_baselines.api`.
:data:`ARM` is an :class:`~doors_gym_baselines.api.Arm`: it names :func:`train`, :func:`save_model` and
:func:`load_model`, its own hyperparameters (:class:`~doors_gym_qtable.qlearning.QHyperparameters`: a preset
or a trial sets these, and nothing else), its presets (``presets/tuned.yml``, ``presets/quick.yml``) and its
search space over them (:data:`SEARCH_SPACE`). The run settings (budget, evaluation, seeds) are doors-gym's,
shared by every arm.

A run trains ``config.run.num_seeds`` agents at once, one per seed, under ``vmap``: ``init`` once, then one
compiled segment per evaluation (``eval_every`` env steps and a greedy evaluation over every start/goal
pair, all inside the segment), so the host sees each evaluation and stops once solved as every arm does
(:class:`doors_gym_baselines.api.EvaluationSchedule`).
"""

from __future__ import annotations

import io
import json
import math
import pathlib
import time
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from doors_gym.core import NUM_ACTIONS, DoorsParams
from doors_gym_baselines.api import (
    HIDDEN,
    ONE_MINUS,
    POWER_OF_TWO,
    Arm,
    Config,
    Evaluation,
    EvaluationSchedule,
    Range,
    TrainingFigures,
    TrainResult,
    encode,
    history_row,
)

from .qlearning import QConfig, QHyperparameters, make_parts


SEARCH_SPACE = (
    Range("learning_rate", 0.05, 1.0, log=True),
    Range("one_minus_gamma", 0.05, 0.5, log=True, hyperparameter="gamma", scale=ONE_MINUS),
    Range("log2_num_envs", 0, 6, integer=True, hyperparameter="num_envs", scale=POWER_OF_TWO),
    Range("start_epsilon", 0.0, 0.5),
    Range("exploration_fraction", 0.05, 0.5),
)
"""The tuning coordinates, over :class:`QHyperparameters` (``end_epsilon`` and ``initial_value`` stay at the
preset's)."""
MAGIC = b"DOORSQT1"
"""How this arm's model files begin (then a NumPy ``.npz``: the table and the config)."""
PRESETS = pathlib.Path(__file__).with_name("presets")


class QTableModel:
    """Greedy policies of trained tables on grid observations ``(batch, H * W)``: ``act`` and ``q_values``, what
    doors-gym asks of a model (its MLflow model returns both).

    ``tables`` is ``(agents, H * W, W, 5)`` float32; ``act`` plays agent ``index``'s.
    """

    def __init__(self, tables: np.ndarray, params: DoorsParams, index: int = 0) -> None:
        self.tables = np.asarray(tables, dtype=np.float32)
        self.params = params
        self.index = index

    def q_values(self, obs: np.ndarray) -> np.ndarray:
        """The table's ``(batch, 5)`` float32 Q-values of grid observations ``(batch, H * W)``."""
        agent, goal = encode(np.asarray(obs).reshape(-1, self.params.num_cells)).astype(np.intp).T
        goal_col = np.where(goal == HIDDEN, agent, goal) % self.params.width  # on the goal: the agent's column
        return self.tables[self.index][agent, goal_col]

    def act(self, obs: np.ndarray) -> np.ndarray:
        """Greedy actions ``(batch,)`` int64 (ties: the lowest action, as in training)."""
        return np.argmax(self.q_values(obs), axis=-1).astype(np.int64)


class RollingWindow:
    """The training figures of each agent's last ``episodes`` episodes, from per-iteration metrics.

    The window is the fewest trailing iterations that hold ``episodes`` finished episodes (all of them
    before that many have ended): its reward over its steps is the rolling reward.
    """

    def __init__(self, agents: int, episodes: int) -> None:
        self.episodes = episodes
        self.rewards = np.zeros((agents, 0), np.float64)
        self.ended = np.zeros((agents, 0), np.int64)
        self.successes = np.zeros((agents, 0), np.int64)

    def add(self, metrics: Any) -> None:
        """Appends a segment's metrics (each ``(agents, iterations)``)."""
        self.rewards = np.concatenate([self.rewards, np.asarray(metrics.reward_per_step, np.float64)], axis=1)
        self.ended = np.concatenate([self.ended, np.asarray(metrics.episodes, np.int64)], axis=1)
        self.successes = np.concatenate([self.successes, np.asarray(metrics.successes, np.int64)], axis=1)

    def figures(self, agent: int) -> TrainingFigures:
        """Agent ``agent``'s rolling reward and training success rate (NaN before its first episode ends)."""
        ended = self.ended[agent]
        from_end = np.cumsum(ended[::-1])
        if from_end.size == 0 or from_end[-1] == 0:
            return TrainingFigures()
        trailing = int(np.searchsorted(from_end, self.episodes)) + 1  # iterations holding the last episodes
        start = max(0, len(ended) - trailing)
        return TrainingFigures(
            rolling_reward=float(self.rewards[agent, start:].mean()),
            train_success_rate=float(self.successes[agent, start:].sum() / ended[start:].sum()),
        )


def train(config: Config, trial: Any = None, arm: Arm | None = None) -> TrainResult:
    """Trains ``config.run.num_seeds`` agents (seeds ``seed, seed + 1, ...``) together; figures per seed.

    Reports every greedy evaluation to ``trial`` (Optuna prunes through it) and stops once every agent is
    solved through the hold-out window when ``config.run.stop_when_solved``.
    """
    arm = arm or ARM
    run, params = config.run, config.params
    settings = QConfig.of(config.hyperparameters, run.total_steps, run.eval_every or run.total_steps)
    seeds = list(range(run.seed, run.seed + run.num_seeds))
    keys = jnp.stack([jax.random.key(seed) for seed in seeds])  # each agent computes what it computes alone
    parts = make_parts(settings, params)
    start = time.perf_counter()
    runner = jax.jit(jax.vmap(parts.init))(keys)
    segment = jax.jit(jax.vmap(parts.run_segment, in_axes=(0, None))).lower(runner, jnp.int32(0)).compile()
    compile_seconds = time.perf_counter() - start
    window = RollingWindow(len(seeds), run.rolling_episodes)
    history: list = []
    latest: dict[str, Any] = {}

    def evaluate(step: int) -> tuple[Evaluation, Any]:
        evaluations = [
            Evaluation(
                success_rate=float(latest["evaluation"].success_rate[agent]),
                mean_step_reward=float(latest["evaluation"].mean_step_reward[agent]),
                normalised_return=float(latest["evaluation"].normalised_return[agent]),
                mean_return=math.nan,
                episodes=params.width * params.width,
            )
            for agent in range(len(seeds))
        ]
        epsilon = float(settings.epsilon(step))
        figures = [window.figures(agent) for agent in range(len(seeds))]
        return Evaluation.mean(evaluations), history_row(step, start, epsilon, [], evaluations, figures, seeds)

    schedule = EvaluationSchedule(evaluate, history, trial, config)
    step, training = 0, 0.0
    for index in range(parts.num_segments):
        began = time.perf_counter()
        runner, (metrics, latest["evaluation"]) = segment(runner, jnp.int32(index))
        window.add(jax.device_get(metrics))
        training += time.perf_counter() - began
        step += settings.eval_every or settings.total_steps
        if schedule.should_stop(step, index + 1 < parts.num_segments):
            break
    tables = np.asarray(runner.q_table).reshape(len(seeds), params.num_cells, params.width, NUM_ACTIONS)
    phases = {"compile": compile_seconds, "update": training}
    method = "one compiled segment per evaluation: acting, env steps, Q-updates and the greedy evaluation"
    figures = {"env_steps": step * len(seeds), "updates": step * len(seeds), "model": QTableModel(tables, params)}
    facts = {"jax": jax.__version__, "agents": len(seeds), "backend": jax.default_backend()}
    return schedule.finish(arm, start, step, phases, method, facts=facts, **figures)


def save_model(result: TrainResult, path: str, seed_index: int = 0) -> None:
    """Writes seed ``seed_index``'s table: :data:`MAGIC`, then an ``.npz`` of the table, the arm and the config."""
    buffer = io.BytesIO()
    values = {"arm": result.arm, "config": result.config.to_dict()}
    np.savez(buffer, q_table=result.model.tables[seed_index], meta=np.array(json.dumps(values)))
    pathlib.Path(path).write_bytes(MAGIC + buffer.getvalue())


def load_model(path: str) -> tuple[str, QTableModel, Config]:
    """``(arm name, model, config)`` of a file :func:`save_model` wrote; ``ValueError`` naming a file it did not."""
    data = pathlib.Path(path).read_bytes()
    if not data.startswith(MAGIC):
        raise ValueError(f"{path!r} is not a qtable model file: it does not begin with {MAGIC!r}")
    try:
        with np.load(io.BytesIO(data[len(MAGIC) :])) as archive:
            table, values = archive["q_table"], json.loads(str(archive["meta"]))
    except (OSError, ValueError, KeyError) as error:
        raise ValueError(f"{path!r} is a damaged qtable model file: {error}") from None
    config = Config.from_dict(values["config"], QHyperparameters)
    return values["arm"], QTableModel(table[None], config.params), config


ARM = Arm(
    "qtable",
    "jax",
    "DoorsJax-v0",
    "Q-table + JAX env, one jitted scan",
    train,
    save_model,
    loader=load_model,
    hyperparameters=QHyperparameters,
    seeds_in_one_run=True,
    steps_pure_functions=True,
    presets={name: str(PRESETS / f"{name}.yml") for name in ("tuned", "quick")},
    search_space=SEARCH_SPACE,
    requirements=("doors-gym-qtable", "jax"),
    magic=MAGIC,
)
"""The arm's record: doors-gym's entry point for this package names it."""
