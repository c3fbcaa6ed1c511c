"""What every DQN arm shares: the config, metrics, greedy evaluation, replay buffer and the CLI.

Framework-free (NumPy only), so the torch and Flax arms import it without
pulling in each other's stack.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import json
import math
import time
import typing
from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np

import doors_gym  # noqa: F401  (registers the ids)
from doors_gym import core
from doors_gym.core import AGENT, GOAL, DoorsParams, DoorsState
from doors_gym.envs.vector import DoorsVectorEnv

ENV_IDS = ("Doors-v0", "DoorsJax-v0")
PURE_FUNCTIONS = "DoorsJax pure functions"
"""What the fully jitted arm steps instead of a registered env (its ``env_id`` tag and table entry)."""


@dataclasses.dataclass(frozen=True)
class Arm:
    """One stack of the comparison: a DQN implementation (module) and the env it trains against."""

    name: str
    module: str
    """Module of ``doors_gym_baselines`` with ``train(config, trial=None)``."""
    env_id: str
    label: str

    @property
    def seeds_in_one_run(self) -> bool:
        """Whether the arm trains all its seeds together under one ``vmap`` (else one seed per run)."""
        return self.module == "dqn_flax_scan"

    @property
    def env_label(self) -> str:
        """What the arm steps: the registered env id, or the pure functions for the fully jitted arm."""
        return PURE_FUNCTIONS if self.seeds_in_one_run else self.env_id


ARMS = {
    arm.name: arm
    for arm in (
        Arm("torch-numpy", "dqn_torch", "Doors-v0", "torch x Doors-v0 (NumPy)"),
        Arm("torch-jax", "dqn_torch", "DoorsJax-v0", "torch x DoorsJax-v0"),
        Arm("flax-numpy", "dqn_flax", "Doors-v0", "Flax x Doors-v0 (NumPy)"),
        Arm("flax-jax", "dqn_flax", "DoorsJax-v0", "Flax x DoorsJax-v0"),
        Arm("flax-scan", "dqn_flax_scan", "DoorsJax-v0", "Flax + JAX env, one jitted scan"),
    )
}
"""The arms ``doors-gym tune`` and ``compare`` know, by name."""


def get_arm(name: str) -> Arm:
    """The arm called ``name``; ``ValueError`` listing the known arms otherwise."""
    check_choice("arm", name, tuple(ARMS))
    return ARMS[name]


def load_arm_module(arm: Arm) -> Any:
    """The arm's training module (imports its framework)."""
    import importlib

    return importlib.import_module(f"{__package__}.{arm.module}")


OPTIMIZERS = ("adam", "sgd")
LOSSES = ("huber", "mse")
VECTORIZATIONS = ("native", "sync", "async")
SOLVED_SUCCESS = 0.99
SOLVED_ROLLING_REWARD = 0.75


@dataclasses.dataclass(frozen=True)
class DQNConfig:
    """Hyperparameters and run settings of every DQN arm (the study's search space as fields).

    Steps are environment steps summed over the vector envs. Every field is
    validated on construction; a bad value raises ``ValueError`` naming the
    field, the value and the allowed range.
    """

    env_id: str = "Doors-v0"
    """``Doors-v0`` or ``DoorsJax-v0`` (ignored by the fully jitted arm, which uses the JAX rules)."""
    grid_size: tuple[int, int] = core.DEFAULT_GRID_SIZE
    n_doors: int = core.DEFAULT_N_DOORS
    max_episode_steps: int = core.DEFAULT_MAX_EPISODE_STEPS
    num_envs: int = 16
    """Parallel envs; actions for all of them come from one batched forward pass."""
    vectorization: str = "native"
    """For ``Doors-v0``: ``native`` (the NumPy vector env), ``sync`` or ``async`` Gymnasium vectors."""
    total_steps: int = 300_000
    learning_rate: float = 1e-3
    optimizer: str = "adam"
    buffer_size: int = 50_000
    batch_size: int = 128
    gamma: float = 0.95
    train_frequency: int = 1
    """Vector steps between gradient updates."""
    target_update: int = 250
    """Gradient updates between copies of the online network into the target network."""
    learning_starts: int = 5_000
    start_epsilon: float = 1.0
    end_epsilon: float = 0.01
    exploration_fraction: float = 0.3
    """Share of ``total_steps`` over which epsilon decays linearly."""
    hidden_sizes: tuple[int, ...] = (128, 128)
    loss: str = "huber"
    seed: int = 1
    num_seeds: int = 1
    """Seeds trained together under ``vmap`` (fully jitted arm only)."""
    eval_every: int = 50_000
    """Env steps between greedy evaluations (0: only at the end)."""
    rolling_episodes: int = 2000
    stop_when_solved: bool = False
    """End training at the first evaluation where greedy success >= 99 % and rolling reward >= 0.75."""
    device: str = "cpu"
    quiet: bool = False

    def __post_init__(self) -> None:
        check_choice("env_id", self.env_id, ENV_IDS)
        check_choice("optimizer", self.optimizer, OPTIMIZERS)
        check_choice("loss", self.loss, LOSSES)
        check_choice("vectorization", self.vectorization, VECTORIZATIONS)
        for name in ("num_envs", "total_steps", "buffer_size", "batch_size", "train_frequency", "target_update"):
            check_at_least(name, getattr(self, name), 1)
        for name in ("n_doors", "max_episode_steps", "num_seeds", "rolling_episodes"):
            check_at_least(name, getattr(self, name), 1)
        check_at_least("learning_starts", self.learning_starts, 0)
        check_at_least("eval_every", self.eval_every, 0)
        if not (
            isinstance(self.learning_rate, (int, float))
            and math.isfinite(self.learning_rate)
            and self.learning_rate > 0
        ):
            raise ValueError(f"learning_rate={self.learning_rate!r} is out of range: expected a finite number > 0")
        if self.batch_size > self.buffer_size:
            raise ValueError(
                f"batch_size={self.batch_size} is larger than buffer_size={self.buffer_size}: "
                "expected batch_size <= buffer_size"
            )
        for name in ("gamma", "start_epsilon", "end_epsilon", "exploration_fraction"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and 0.0 <= value <= 1.0):
                raise ValueError(f"{name}={value!r} is out of range: expected a number in [0, 1]")
        if not self.hidden_sizes or any(not isinstance(width, int) or width < 1 for width in self.hidden_sizes):
            raise ValueError(f"hidden_sizes={self.hidden_sizes!r} is invalid: expected one or more integers >= 1")
        if self.num_envs > self.total_steps:
            raise ValueError(
                f"num_envs={self.num_envs} exceeds total_steps={self.total_steps}: expected num_envs <= total_steps"
            )
        self.params  # validates the layout keywords

    @property
    def params(self) -> DoorsParams:
        """The env layout and time limit."""
        return DoorsParams(
            grid_size=tuple(self.grid_size), n_doors=self.n_doors, max_episode_steps=self.max_episode_steps
        )

    @property
    def num_iterations(self) -> int:
        """Vector steps in the run."""
        return self.total_steps // self.num_envs

    def epsilon(self, step: int) -> float:
        """Linearly decayed exploration rate at env step ``step``."""
        duration = max(1.0, self.exploration_fraction * self.total_steps)
        fraction = min(1.0, step / duration)
        return self.start_epsilon + fraction * (self.end_epsilon - self.start_epsilon)

    def to_dict(self) -> dict[str, Any]:
        """Plain types only (for MLflow params, JSON and ``torch.load(weights_only=True)``)."""
        return {
            key: list(value) if isinstance(value, tuple) else value for key, value in dataclasses.asdict(self).items()
        }

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> DQNConfig:
        """Inverse of :meth:`to_dict`; unknown keys are an error."""
        known = {field.name for field in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"config keys {unknown} are unknown: expected keys among {sorted(known)}")
        return cls(**{key: tuple(value) if isinstance(value, list) else value for key, value in values.items()})


def check_choice(name: str, value: Any, allowed: Sequence[str]) -> None:
    """``ValueError`` naming ``name`` and the allowed values unless ``value`` is one of them."""
    if value not in allowed:
        raise ValueError(f"{name}={value!r} is not supported: expected one of {list(allowed)}")


def check_at_least(name: str, value: Any, minimum: int) -> None:
    """``ValueError`` naming ``name`` and the range unless ``value`` is an integer ``>= minimum``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name}={value!r} is out of range: expected an integer >= {minimum}")


def encode(obs: np.ndarray) -> np.ndarray:
    """Network input: one-hot planes of the agent and of the goal, float32 ``(..., 2 * H * W)``.

    The wall plane is left out: it is the same in every observation of a layout.
    The torch and Flax networks apply a linear layer to these planes, computed
    as the two weight rows the one-hot planes select.
    """
    return np.concatenate([obs == AGENT, obs == GOAL], axis=-1).astype(np.float32)


def make_envs(config: DQNConfig, seed_offset: int = 0) -> gym.vector.VectorEnv:
    """The training vector env of a host-loop arm (numpy arrays out, for either env id)."""
    kwargs: dict[str, Any] = {
        "grid_size": tuple(config.grid_size),
        "n_doors": config.n_doors,
        "max_episode_steps": config.max_episode_steps,
    }
    if config.env_id == "DoorsJax-v0":
        return gym.make_vec("DoorsJax-v0", config.num_envs, array_type="numpy", **kwargs)
    if config.vectorization == "native":
        return gym.make_vec("Doors-v0", config.num_envs, **kwargs)
    return gym.make_vec("Doors-v0", config.num_envs, vectorization_mode=config.vectorization, **kwargs)


class ReplayBuffer:
    """A circular buffer of transitions with int8 observations, sampled uniformly."""

    def __init__(self, capacity: int, num_cells: int, seed: int) -> None:
        self.capacity = capacity
        self.obs = np.zeros((capacity, num_cells), dtype=core.OBS_DTYPE)
        self.next_obs = np.zeros((capacity, num_cells), dtype=core.OBS_DTYPE)
        self.actions = np.zeros(capacity, dtype=np.int64)
        self.rewards = np.zeros(capacity, dtype=np.float32)
        self.terminated = np.zeros(capacity, dtype=np.float32)
        self.size = 0
        self._cursor = 0
        self._rng = np.random.default_rng(seed)

    def add(
        self, obs: np.ndarray, actions: np.ndarray, rewards: np.ndarray, next_obs: np.ndarray, terminated: np.ndarray
    ) -> None:
        """Stores a batch of transitions (overwriting the oldest when full)."""
        count = len(actions)
        index = (self._cursor + np.arange(count)) % self.capacity
        self.obs[index] = obs
        self.next_obs[index] = next_obs
        self.actions[index] = actions
        self.rewards[index] = rewards
        self.terminated[index] = terminated
        self._cursor = int((self._cursor + count) % self.capacity)
        self.size = min(self.capacity, self.size + count)

    def sample(self, batch_size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(obs, actions, rewards, next_obs, terminated)`` of ``batch_size`` random transitions."""
        index = self._rng.integers(0, self.size, batch_size)
        return self.obs[index], self.actions[index], self.rewards[index], self.next_obs[index], self.terminated[index]


TRAINING_FIGURES = (
    "rolling_reward",
    "train_success_rate",
    "train_normalised_return",
    "train_episode_return",
    "train_episode_length",
)
"""The rolling figures of training episodes that every arm reports."""


class EpisodeTracker:
    """Per-episode figures of a vector env with next-step autoreset, and the study's rolling reward.

    ``start(mask, distance)`` marks envs whose episode begins (reset or
    autoreset step), ``record(...)`` adds one step for the envs in ``active``.
    """

    def __init__(self, num_envs: int, rolling_episodes: int) -> None:
        self.returns = np.zeros(num_envs)
        self.lengths = np.zeros(num_envs, dtype=np.int64)
        self.start_distance = np.ones(num_envs)
        self.window: collections.deque[tuple[float, int, bool, float]] = collections.deque(maxlen=rolling_episodes)
        self.episodes = 0

    def start(self, mask: np.ndarray, distance: np.ndarray) -> None:
        self.returns[mask] = 0.0
        self.lengths[mask] = 0
        self.start_distance[mask] = distance[mask]

    def record(
        self, rewards: np.ndarray, terminated: np.ndarray, truncated: np.ndarray, active: np.ndarray
    ) -> list[float]:
        """Adds a step; returns the returns of the episodes that ended on it."""
        self.returns[active] += rewards[active]
        self.lengths[active] += 1
        ended = active & (terminated | truncated)
        finished = []
        for index in np.flatnonzero(ended):
            episode = (float(self.returns[index]), int(self.lengths[index]), bool(terminated[index]))
            self.window.append((*episode, episode[0] / max(float(self.start_distance[index]), 1e-6)))
            finished.append(episode[0])
        self.episodes += len(finished)
        return finished

    def summary(self) -> dict[str, float]:
        """Rolling figures over the last ``rolling_episodes`` episodes (NaN before the first one)."""
        if not self.window:
            return {key: math.nan for key in TRAINING_FIGURES}
        returns, lengths, success, normalised = (np.array(column) for column in zip(*self.window))
        return {
            "rolling_reward": float(returns.sum() / lengths.sum()),
            "train_success_rate": float(success.mean()),
            "train_normalised_return": float(normalised.mean()),
            "train_episode_return": float(returns.mean()),
            "train_episode_length": float(lengths.mean()),
        }


@dataclasses.dataclass(frozen=True)
class Evaluation:
    """Greedy play from every start/goal pair of the layout."""

    success_rate: float
    mean_step_reward: float
    normalised_return: float
    mean_return: float
    episodes: int

    @property
    def solved(self) -> bool:
        """Greedy success of at least 99 % (the rolling-reward half of "solved" is a training figure)."""
        return self.success_rate >= SOLVED_SUCCESS


def all_start_states(params: DoorsParams) -> DoorsState:
    """Every start of the layout as a batch: agent on the bottom row, goal on the top row."""
    agent_col, goal_col = np.divmod(np.arange(params.width * params.width), params.width)
    return core.initial_state(params, agent_col, goal_col)


def evaluate_greedy(act: Callable[[np.ndarray], np.ndarray], params: DoorsParams) -> Evaluation:
    """Plays ``act`` (a batch of int8 observations -> greedy actions) from all ``W * W`` starts.

    Uses the native vector env, one env per start pair; deterministic, so one
    pass is exact. These episodes are never used for training.
    """
    limit = params.max_episode_steps or core.DEFAULT_MAX_EPISODE_STEPS
    starts = all_start_states(params)
    envs = DoorsVectorEnv(len(starts.agent_col), params.grid_size, door_cols=params.door_cols, max_episode_steps=limit)
    envs.reset(seed=0)
    obs = envs.set_state(starts)
    start_distance = np.asarray(core.state_distance(starts), dtype=np.float64)
    returns = np.zeros(envs.num_envs)
    lengths = np.zeros(envs.num_envs, dtype=np.int64)
    success = np.zeros(envs.num_envs, dtype=bool)
    running = np.ones(envs.num_envs, dtype=bool)
    while running.any():
        obs, rewards, terminated, truncated, _ = envs.step(np.asarray(act(obs), dtype=np.int64))
        returns[running] += rewards[running]
        lengths[running] += 1
        success |= running & terminated
        running &= ~(terminated | truncated)
    return Evaluation(
        success_rate=float(success.mean()),
        mean_step_reward=float(returns.sum() / lengths.sum()),
        normalised_return=float(np.mean(returns / start_distance)),
        mean_return=float(returns.mean()),
        episodes=int(envs.num_envs),
    )


@dataclasses.dataclass
class TrainResult:
    """What ``train`` returns: final figures, the history, and the trained parameters."""

    arm: str
    config: DQNConfig
    evaluation: Evaluation
    rolling_reward: float
    wall_seconds: float
    env_steps: int
    updates: int
    history: list[dict[str, float]]
    model: Any = None
    losses: list[float] = dataclasses.field(default_factory=list)

    @property
    def solved(self) -> bool:
        """Greedy success >= 99 % and rolling reward >= 0.75."""
        return self.evaluation.solved and self.rolling_reward >= SOLVED_ROLLING_REWARD

    def summary(self) -> dict[str, Any]:
        """Flat figures for tables and logs, with the oracle's per-step reward beside the greedy one."""
        from doors_gym.oracle import evaluate_oracle

        return {
            "arm": self.arm,
            "env_id": PURE_FUNCTIONS if self.arm == "flax-scan" else self.config.env_id,
            "wall_seconds": round(self.wall_seconds, 2),
            "env_steps": self.env_steps,
            "updates": self.updates,
            "rolling_reward": round(self.rolling_reward, 4),
            "greedy_success_rate": round(self.evaluation.success_rate, 4),
            "greedy_step_reward": round(self.evaluation.mean_step_reward, 4),
            "greedy_normalised_return": round(self.evaluation.normalised_return, 4),
            "oracle_step_reward": round(evaluate_oracle(self.config.params).mean_step_reward, 4),
            "solved": self.solved,
        }


def history_row(
    evaluation: Evaluation, tracker: EpisodeTracker, step: int, start: float, losses: Sequence[float], epsilon: float
) -> dict[str, float]:
    """One point of a learning curve: greedy figures, rolling training figures, loss, speed, time."""
    seconds = time.perf_counter() - start
    return {
        "step": step,
        "seconds": seconds,
        "sps": step / seconds,
        "epsilon": epsilon,
        "greedy_success_rate": evaluation.success_rate,
        "greedy_step_reward": evaluation.mean_step_reward,
        "greedy_normalised_return": evaluation.normalised_return,
        "loss": float(np.mean(losses[-100:])) if len(losses) else math.nan,
        **tracker.summary(),
    }


def prune(trial: Any, message: str) -> None:
    """Ends a run: ``optuna.TrialPruned`` inside a study, ``FloatingPointError`` outside one."""
    if trial is None:
        raise FloatingPointError(message)
    import optuna

    raise optuna.TrialPruned(message)


def learning_score(history: Sequence[dict[str, Any]]) -> float:
    """The tuning objective: mean greedy per-step reward over the evaluations so far.

    With evaluations every ``eval_every`` steps this is the normalised area
    under the greedy learning curve: it rewards reaching the optimum (0.776 on
    the default layout) and reaching it early, where the final figure alone
    ties every run that ends solved.
    """
    if not history:
        raise ValueError("history is empty: expected at least one evaluation")
    return float(np.mean([row["greedy_step_reward"] for row in history]))


def report(trial: Any, figures: dict[str, float]) -> None:
    """Reports an evaluation to an Optuna trial and prunes when its pruner says so.

    A trial with an ``observe(figures) -> float`` method (the tuner's MLflow-
    tracked trial) logs the row and chooses the reported value (the running
    :func:`learning_score`); a plain Optuna trial gets the greedy per-step reward.
    """
    if trial is None:
        return
    observe = getattr(trial, "observe", None)
    value = observe(figures) if observe is not None else figures["greedy_step_reward"]
    trial.report(value, step=int(figures["step"]))
    if trial.should_prune():
        prune(trial, f"pruned at step {int(figures['step'])}")


def is_solved(figures: dict[str, float]) -> bool:
    """Greedy success >= 99 % and rolling reward >= 0.75 in a history row."""
    return figures["greedy_success_rate"] >= SOLVED_SUCCESS and figures["rolling_reward"] >= SOLVED_ROLLING_REWARD


def evaluate_and_report(
    act: Callable[[np.ndarray], np.ndarray],
    config: DQNConfig,
    tracker: EpisodeTracker,
    step: int,
    start: float,
    losses: Sequence[float],
    trial: Any,
) -> dict[str, float]:
    """A greedy evaluation during training, as a history row, reported to ``trial``."""
    figures = history_row(evaluate_greedy(act, config.params), tracker, step, start, losses, config.epsilon(step))
    report(trial, figures)
    return figures


class Progress:
    """A tqdm bar over env steps with SPS, the latest return and epsilon; silent when ``quiet``."""

    def __init__(self, total: int, description: str, quiet: bool) -> None:
        self._bar = None
        self._start = time.perf_counter()
        if not quiet:
            from tqdm.auto import tqdm

            self._bar = tqdm(total=total, desc=description, unit="step", unit_scale=True, dynamic_ncols=True)

    def update(self, steps: int, **figures: float) -> None:
        if self._bar is not None:
            self._bar.update(steps)
            self._bar.set_postfix(
                {key: f"{value:.3g}" for key, value in figures.items() if value == value}, refresh=False
            )

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


def add_config_arguments(parser: argparse.ArgumentParser, defaults: DQNConfig | None = None) -> None:
    """One ``--flag`` per :class:`DQNConfig` field, typed from the annotations."""
    defaults = defaults or DQNConfig()
    hints = typing.get_type_hints(DQNConfig)
    for field in dataclasses.fields(DQNConfig):
        flags = ["--" + field.name.replace("_", "-")] + (["--env"] if field.name == "env_id" else [])
        default = getattr(defaults, field.name)
        hint = hints[field.name]
        if hint is bool:
            parser.add_argument(*flags, dest=field.name, action=argparse.BooleanOptionalAction, default=default)
        elif typing.get_origin(hint) is tuple:
            shown = " ".join(map(str, default))
            parser.add_argument(
                *flags,
                dest=field.name,
                type=int,
                nargs="+",
                default=list(default),
                metavar="N",
                help=f"(default: {shown})",
            )
        else:
            choices = {"env_id": ENV_IDS, "optimizer": OPTIMIZERS, "loss": LOSSES, "vectorization": VECTORIZATIONS}.get(
                field.name
            )
            parser.add_argument(
                *flags, dest=field.name, type=hint, default=default, choices=choices, help="(default: %(default)s)"
            )


def config_from_arguments(args: argparse.Namespace) -> DQNConfig:
    """A validated :class:`DQNConfig` from parsed arguments."""
    values = {field.name: getattr(args, field.name) for field in dataclasses.fields(DQNConfig)}
    return DQNConfig.from_dict(values)


def run_cli(train: Callable[..., TrainResult], arm: str, argv: Sequence[str] | None = None) -> int:
    """The command line of one arm: parse, train, print the summary, optionally save the model."""
    parser = argparse.ArgumentParser(
        prog=f"python -m baselines.dqn_{arm.replace('-', '_')}", description=f"Train the {arm} DQN arm on Doors."
    )
    add_config_arguments(parser)
    parser.add_argument("--save", default=None, help="write the trained model to this file")
    args = parser.parse_args(argv)
    try:
        config = config_from_arguments(args)
    except ValueError as error:
        parser.error(str(error))
    result = train(config)
    print(json.dumps(result.summary(), indent=2))
    if args.save:
        module = __import__(train.__module__, fromlist=["save_model"])
        module.save_model(result, args.save)
        print(f"saved the model to {args.save}")
    return 0
