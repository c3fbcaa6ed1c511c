"""What a DQN training is: its hyperparameters (what presets and tuning set) apart from its run settings.

:class:`Hyperparameters` are the algorithm's knobs, the fields a tuning study
searches and a preset fixes. :class:`RunSettings` say what to run and how: the
task (env and layout), the budget, the seeds, the evaluation cadence, and how
to run it (vectorization, device, progress bar). :class:`DQNConfig` is the
pair, validated across both. Every field is checked on construction: a bad
value raises ``ValueError`` naming the field, the value and the allowed range.
Field docs (``metadata["help"]``) are the flags' help lines.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from doors_gym import core
from doors_gym.core import DoorsParams
from doors_gym.levels import LEVELS, Level

from . import schedules

ENV_IDS = ("Doors-v0", "DoorsJax-v0")
"""The arms' backends, by the study level's ids; a run at another level steps that backend's id of its level
(:func:`level_env_id`)."""
DOOR_MODES = core.DOOR_MODES
OPTIMIZERS = ("adam", "sgd")
LOSSES = ("huber", "mse")
LAYER_NORM_EPSILON = 1e-5  # both networks' LayerNorm (``layer_norm``): torch's default, set in Flax's too
VECTORIZATIONS = ("native", "sync", "async")
RUN_FIELDS_OFF_THE_OUTCOME = ("quiet", "jax_cache", "checkpoint")
"""Run settings that change how a run shows, compiles or saves itself, never what it learns (out of
:meth:`Config.outcome_key`)."""


def field(default: Any, help: str, **metadata: Any) -> Any:
    """A dataclass field whose ``help`` (and choices, flags) the command-line generator reads."""
    if isinstance(default, (list, dict, set)):
        raise TypeError("mutable defaults are not allowed")
    return dataclasses.field(default=default, metadata={"help": help, **metadata})


def check_choice(name: str, value: Any, allowed: Sequence[str]) -> None:
    """``ValueError`` naming ``name`` and the allowed values unless ``value`` is one of them."""
    if value not in allowed:
        raise ValueError(f"{name}={value!r} is not supported: expected one of {list(allowed)}")


def check_at_least(name: str, value: Any, minimum: int) -> None:
    """``ValueError`` naming ``name`` and the range unless ``value`` is an integer ``>= minimum``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name}={value!r} is out of range: expected an integer >= {minimum}")


def check_folder(name: str, value: Any) -> None:
    """``ValueError`` naming ``name`` unless ``value`` is a folder's path on a filesystem (no URL)."""
    if not isinstance(value, str) or not value.strip() or "://" in value:
        raise ValueError(
            f"{name}={value!r} is not a folder's path: expected a path on a filesystem (absolute, or relative to "
            "this command's folder); URLs are not supported"
        )


def check_fraction(name: str, value: Any) -> None:
    """``ValueError`` unless ``value`` is a number in ``[0, 1]``."""
    if isinstance(value, bool) or not (isinstance(value, (int, float)) and 0.0 <= value <= 1.0):
        raise ValueError(f"{name}={value!r} is out of range: expected a number in [0, 1]")


def first_line(error: BaseException) -> str:
    """The first line of ``error``'s message (driver and archive errors run to pages)."""
    return (str(error).strip().splitlines() or [""])[0]


def check_choices(instance: Any) -> None:
    """Checks every field of ``instance`` that declares ``choices`` in its metadata."""
    for spec in dataclasses.fields(instance):
        if "choices" in spec.metadata:
            check_choice(spec.name, getattr(instance, spec.name), spec.metadata["choices"])


@dataclasses.dataclass(frozen=True)
class Hyperparameters:
    """The DQN algorithm's knobs: what a preset fixes and a tuning study searches."""

    learning_rate: float = field(1e-3, "optimizer step size")
    optimizer: str = field("adam", "gradient optimizer", choices=OPTIMIZERS)
    loss: str = field("huber", "TD loss", choices=LOSSES)
    buffer_size: int = field(50_000, "replay buffer capacity, in transitions")
    batch_size: int = field(128, "transitions per gradient update")
    gamma: float = field(0.95, "discount factor")
    num_envs: int = field(16, "parallel envs; their actions come from one batched forward pass")
    train_frequency: int = field(1, "vector steps between gradient updates")
    gradient_steps: int = field(
        1, "gradient updates at each training vector step (every train_frequency vector steps), each on its own batch"
    )
    target_update: int = field(250, "gradient updates between updates of the target network")
    tau: float = field(
        1.0, "at each target update, target <- tau * online + (1 - tau) * target (1: a copy; < 1: Polyak averaging)"
    )
    double_dqn: bool = field(False, "Double DQN: the online network picks the next action, the target values it")
    lr_end_fraction: float = field(
        1.0, "learning rate at the end of its decay, as a fraction of learning_rate (linear decay; 1: constant)"
    )
    lr_decay_fraction: float = field(
        1.0, "share of the run's updates over which the learning rate decays, then stays at its end (1: all of them)"
    )
    max_grad_norm: float = field(0.0, "clip the gradients' global norm to this (0: no clipping)")
    learning_starts: int = field(5_000, "env steps before the first update")
    start_epsilon: float = field(1.0, "exploration rate at the start")
    end_epsilon: float = field(0.01, "exploration rate after the decay")
    exploration_fraction: float = field(0.3, "share of total_steps over which epsilon decays linearly")
    hidden_sizes: tuple[int, ...] = field((128, 128), "widths of the hidden layers")
    relative_inputs: bool = field(
        False,
        "the network also reads the agent's row and column, and the goal's and each door's column relative to the "
        "agent's (one input each, where the cell planes give them only as relations learned cell by cell)",
    )
    cell_planes: bool = field(
        True,
        "the first layer reads the agent's and the goal's one-hot cell planes (2 * H * W rows); False: the relative "
        "inputs alone say where they are (needs relative_inputs), so the first layer, its gradient, optimizer state "
        "and target copy grow with the grid's side, not its area",
    )
    dueling: bool = field(
        False,
        "dueling heads: Q = V + A - mean(A), a state value and the actions' advantages from the last hidden layer "
        "(Wang et al. 2016; where the shaping reward leaves the actions' values close together)",
    )
    layer_norm: bool = field(
        False,
        "LayerNorm (a learned scale and offset) on every hidden layer, before its ReLU: bounds the features' scale, "
        "which steadies TD learning on near-greedy data (Gallici et al. 2024, PQN)",
    )
    n_step: int = field(
        1, "multi-step returns: the TD target sums up to n_step discounted rewards of one episode (1: one-step DQN)"
    )
    step_cost: float = field(
        0.0,
        "a training-only cost per step, taken off the reward the learner stores (the env's reward, the rolling reward "
        "and evaluation are untouched): waiting, or pushing into an edge, then costs more than (1 - gamma) of a "
        "state's value (0: off)",
    )
    advantage_learning: float = field(
        0.0,
        "advantage learning (Bellemare et al. 2016): the TD target takes off this share of how far the taken action's "
        "value falls below the state's best, both under the target network, which widens the gaps between actions' "
        "values (1 / (1 - share) times at its fixed point) where they are small beside the values' errors "
        "(0: off; below 1)",
    )
    restart_prob: float = field(
        0.0,
        "exploring starts: the probability that a training episode starts with the agent anywhere (env reset "
        "option start='anywhere'); such episodes stay out of the rolling reward (0: off, every start as the env's)",
    )
    restart_fraction: float = field(
        0.5, "share of total_steps over which restart_prob decays linearly to 0 (exploring starts only)"
    )

    def __post_init__(self) -> None:
        check_choices(self)
        for name in (
            "num_envs", "buffer_size", "batch_size", "train_frequency", "gradient_steps", "target_update", "n_step"
        ):
            check_at_least(name, getattr(self, name), 1)
        check_at_least("learning_starts", self.learning_starts, 0)
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
        for name in (
            "gamma", "start_epsilon", "end_epsilon", "exploration_fraction", "lr_end_fraction", "restart_prob"
        ):
            check_fraction(name, getattr(self, name))
        for name in ("tau", "lr_decay_fraction", "restart_fraction"):
            value = getattr(self, name)
            if isinstance(value, bool) or not (isinstance(value, (int, float)) and 0.0 < value <= 1.0):
                raise ValueError(f"{name}={value!r} is out of range: expected a number in (0, 1]")
        share = self.advantage_learning
        if isinstance(share, bool) or not (isinstance(share, (int, float)) and 0.0 <= share < 1.0):
            raise ValueError(f"advantage_learning={share!r} is out of range: expected a number in [0, 1) (0: off)")
        cost = self.step_cost
        if isinstance(cost, bool) or not (isinstance(cost, (int, float)) and 0.0 <= cost <= 1.0):
            raise ValueError(f"step_cost={cost!r} is out of range: expected a number in [0, 1] (0: off)")
        norm = self.max_grad_norm
        if isinstance(norm, bool) or not (isinstance(norm, (int, float)) and math.isfinite(norm) and norm >= 0):
            raise ValueError(f"max_grad_norm={norm!r} is out of range: expected a finite number >= 0 (0: no clipping)")
        for name in ("double_dqn", "relative_inputs", "cell_planes", "dueling", "layer_norm"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name}={getattr(self, name)!r} is invalid: expected True or False")
        if not self.cell_planes and not self.relative_inputs:
            raise ValueError(
                "cell_planes=False needs relative_inputs=True: without the cell planes only the relative inputs say "
                "where the agent and the goal are"
            )
        sizes = self.hidden_sizes
        if not sizes or any(isinstance(width, bool) or not isinstance(width, int) or width < 1 for width in sizes):
            raise ValueError(f"hidden_sizes={sizes!r} is invalid: expected one or more integers >= 1")

    def describe(self) -> str:
        """The hyperparameters in their natural units, in one line for people (the field names are in the files)."""
        decay = "" if self.lr_end_fraction >= 1.0 else f", decaying to {self.lr_end_fraction:.0%}"
        if decay and self.lr_decay_fraction < 1.0:
            decay += f" over the first {self.lr_decay_fraction:.0%} of the updates"
        target = "copy" if self.tau >= 1.0 else f"tau {self.tau:.2g}"
        extras = ["double DQN"] if self.double_dqn else []
        if self.max_grad_norm > 0:
            extras.append(f"gradient norm clipped at {self.max_grad_norm:g}")
        if self.relative_inputs:
            extras.append("relative inputs" if self.cell_planes else "relative inputs alone (no cell planes)")
        if self.dueling:
            extras.append("dueling heads")
        if self.layer_norm:
            extras.append("layer norm")
        if self.step_cost > 0:
            extras.append(f"step cost {self.step_cost:g} in training")
        if self.n_step > 1:
            extras.append(f"{self.n_step}-step returns")
        if self.advantage_learning > 0:
            extras.append(f"advantage learning {self.advantage_learning:g}")
        if self.restart_prob > 0:
            extras.append(
                f"starts anywhere {self.restart_prob:.0%} of episodes, to none at {self.restart_fraction:.0%} of the budget"
            )
        return ", ".join(
            [
                f"lr {self.learning_rate:.2g} {self.optimizer}{decay}",
                f"gamma {self.gamma:.3g}",
                f"net {'x'.join(map(str, self.hidden_sizes))}",
                f"batch {self.batch_size}",
                f"buffer {self.buffer_size}",
                f"{self.num_envs} envs",
                f"update every {self.train_frequency} step{'s' if self.train_frequency > 1 else ''}"
                + (f" ({self.gradient_steps} updates)" if self.gradient_steps > 1 else ""),
                f"target every {self.target_update} ({target})",
                f"learns from step {self.learning_starts}",
                f"explore {self.exploration_fraction:.0%} of the budget",
                *extras,
            ]
        )


@dataclasses.dataclass(frozen=True)
class RunSettings:
    """What to run and how: the task, the budget, the seeds, the evaluation, and the machinery."""

    env_id: str = field("Doors-v0", "the env the arm steps (set from the arm)", choices=ENV_IDS, cli=False)
    grid_size: tuple[int, int] = field(core.DEFAULT_GRID_SIZE, "grid height and width", layout=True)
    n_doors: int | None = field(None, "number of doors, 1..W (default: 3)", layout=True)
    door_cols: tuple[int, ...] | None = field(None, "explicit door columns in [0, W)", layout=True)
    max_episode_steps: int = field(core.DEFAULT_MAX_EPISODE_STEPS, "time limit per episode", layout=True)
    n_walls: int = field(core.DEFAULT_N_WALLS, "number of walls (a level's layout)", layout=True)
    doors: str = field("fixed", "fixed doors, or drawn per episode (a level's layout)", layout=True, choices=DOOR_MODES)
    total_steps: int = field(300_000, "env steps of training, summed over the vector envs")
    seed: int = field(1, "seed of the run (networks, env starts, exploration, replay sampling)")
    num_seeds: int = field(1, "seeds from --seed trained together in one run (arms that train seeds in one vmap)")
    eval_every: int = field(50_000, "env steps between greedy evaluations (0: only at the end)")
    rolling_episodes: int = field(2000, "training episodes in the rolling reward (the study's 2000)")
    stop_when_solved: bool = field(
        False,
        "end training once solved (greedy success >= 99 %, rolling reward >= 0.75) at every evaluation "
        "of the last --hold-out-steps env steps",
    )
    hold_out_steps: int = field(
        0, "env steps a run must stay solved, at every evaluation, to count as solved (0: solved at one evaluation)"
    )
    devices: int | None = field(
        None, "devices the seeds of one run spread over (default: one per core, or GPU, up to the seeds)"
    )
    profile: bool = field(True, "time the phases of the fully jitted arm apart after training (a few seconds)")
    vectorization: str = field(
        "native", "Doors-v0 vector env: native NumPy, or Gymnasium's sync or async", choices=VECTORIZATIONS
    )
    device: str = field("cpu", "torch device of the torch arms (cpu, cuda, cuda:1, ...)")
    torch_threads: int | None = field(
        None, "torch's intra-op threads during a torch arm's run, put back after (default: 1 on a CPU)"
    )
    jax_cache: str | None = field(
        None,
        "folder of JAX's persistent compilation cache: a later run loads the JAX arms' compiled programs "
        "instead of compiling them again (default: $DOORS_GYM_JAX_CACHE, else off)",
    )
    quiet: bool = field(False, "no progress: no bar at a terminal, no lines in a log")
    checkpoint: str | None = field(
        None,
        "file a resumable arm (flax-scan) saves its training state to at a segment's end, once a minute at "
        "most; a run started again with the same config goes on from it, and it is removed at the end",
    )

    def __post_init__(self) -> None:
        check_choices(self)
        for name in ("total_steps", "num_seeds", "rolling_episodes", "max_episode_steps"):
            check_at_least(name, getattr(self, name), 1)
        check_at_least("seed", self.seed, 0)
        for name in ("devices", "torch_threads"):
            if getattr(self, name) is not None:
                check_at_least(name, getattr(self, name), 1)
        check_at_least("eval_every", self.eval_every, 0)
        check_at_least("hold_out_steps", self.hold_out_steps, 0)
        self.params  # validates the layout

    @property
    def env_keywords(self) -> dict[str, Any]:
        """The layout keywords of ``gym.make`` / ``gym.make_vec`` for this layout (``n_walls`` and ``doors`` only
        off ``Doors-v0``'s one wall of fixed doors, so its call is the study's own)."""
        keywords: dict[str, Any] = {
            "grid_size": tuple(self.grid_size),
            "n_doors": self.n_doors,
            "door_cols": self.door_cols,
            "max_episode_steps": self.max_episode_steps,
        }
        if self.n_walls != core.DEFAULT_N_WALLS or self.doors != "fixed":
            keywords.update(n_walls=self.n_walls, doors=self.doors)
        return keywords

    @property
    def params(self) -> DoorsParams:
        """The env layout and time limit."""
        return DoorsParams(
            grid_size=tuple(self.grid_size),
            n_doors=self.n_doors,
            door_cols=None if self.door_cols is None else tuple(self.door_cols),
            max_episode_steps=self.max_episode_steps,
            n_walls=self.n_walls,
            doors=self.doors,
        )


@dataclasses.dataclass(frozen=True)
class Config:
    """One training of an arm: its own hyperparameters (a frozen dataclass of the arm's) and the shared run settings.

    Field names are unique across the two, so a config reads and changes them flat (:meth:`replace`,
    :meth:`flat`). :class:`DQNConfig` is the config of the DQN arms; :func:`make_config` picks the class.
    """

    hyperparameters: Any
    run: RunSettings = dataclasses.field(default_factory=RunSettings)

    def __post_init__(self) -> None:
        if not dataclasses.is_dataclass(self.hyperparameters) or isinstance(self.hyperparameters, type):
            raise ValueError(f"hyperparameters={self.hyperparameters!r} is not a dataclass instance")
        clash = sorted(set(field_names(self.hyperparameters)) & set(RUN_NAMES))
        if clash:
            raise ValueError(f"hyperparameters {clash} are named like run settings: expected names apart from those")

    def replace(self, **values: Any) -> Config:
        """A copy with flat keywords changed: each goes to the dataclass with that field.

        Raises:
            ValueError: naming a keyword that is neither a hyperparameter of this config nor a run setting.
        """
        names = field_names(self.hyperparameters)
        unknown = sorted(set(values) - set(names) - set(RUN_NAMES))
        if unknown:
            raise ValueError(
                f"config fields {unknown} are unknown: expected hyperparameters among {sorted(names)} "
                f"({type(self.hyperparameters).__name__}) or run settings among {sorted(RUN_NAMES)}"
            )
        hyper = {name: value for name, value in values.items() if name in names}
        run = {name: value for name, value in values.items() if name in RUN_NAMES}
        return make_config(
            dataclasses.replace(self.hyperparameters, **hyper) if hyper else self.hyperparameters,
            dataclasses.replace(self.run, **run) if run else self.run,
        )

    def flat(self) -> dict[str, Any]:
        """Every field by name (hyperparameters and run settings together), values as stored."""
        return {
            **{name: getattr(self.hyperparameters, name) for name in field_names(self.hyperparameters)},
            **{name: getattr(self.run, name) for name in RUN_NAMES},
        }

    @property
    def params(self) -> DoorsParams:
        """The env layout and time limit."""
        return self.run.params

    @property
    def seeds(self) -> list[int]:
        """The seeds of the run: ``seed``, ``seed + 1``, ... (``num_seeds`` of them)."""
        return list(range(self.run.seed, self.run.seed + self.run.num_seeds))

    def to_dict(self) -> dict[str, dict[str, Any]]:
        """Plain types only (for JSON, model files and ``torch.load(weights_only=True)``), one dict per group."""
        return {"hyperparameters": _plain(self.hyperparameters), "run": _plain(self.run)}

    def outcome_key(self) -> dict[str, Any]:
        """What decides the run's outcome: :meth:`to_dict` without :data:`RUN_FIELDS_OFF_THE_OUTCOME` (a cached
        run, or a checkpoint, is reused only for the same key)."""
        values = self.to_dict()
        for name in RUN_FIELDS_OFF_THE_OUTCOME:
            values["run"].pop(name)
        return values

    def same_outcome(self, saved: Any) -> bool:
        """Whether ``saved``, an :meth:`outcome_key` written earlier (a cached run's, a checkpoint's), is this
        config's: equal, or equal once the fields added since it was written take their defaults (a knob added
        later is off by default, so the runs and checkpoints written before it stay valid)."""
        if saved == self.outcome_key():
            return True
        if not isinstance(saved, dict):
            return False
        try:
            filled = type(self).from_dict(saved, type(self.hyperparameters))
        except (TypeError, ValueError):  # a field since removed or renamed, or a value no longer allowed
            return False
        return filled.outcome_key() == self.outcome_key()

    @classmethod
    def from_dict(cls, values: dict[str, Any], hyperparameters: type | None = None) -> Config:
        """Inverse of :meth:`to_dict`, the hyperparameters read as ``hyperparameters`` (the class's own by
        default: DQN's for :class:`DQNConfig`); unknown groups or keys are an error."""
        kind = hyperparameters or _own_hyperparameters(cls)
        unknown = sorted(set(values) - {"hyperparameters", "run"})
        if unknown:
            raise ValueError(f"config groups {unknown} are unknown: expected 'hyperparameters' and 'run'")
        return make_config(
            _from_plain(kind, values.get("hyperparameters", {})), _from_plain(RunSettings, values.get("run", {}))
        )


@dataclasses.dataclass(frozen=True)
class DQNConfig(Config):
    """One DQN training: DQN's hyperparameters and run settings, checked against each other, and the schedule
    both give (iterations, updates, exploration)."""

    hyperparameters: Hyperparameters = dataclasses.field(default_factory=Hyperparameters)
    run: RunSettings = dataclasses.field(default_factory=RunSettings)

    def __post_init__(self) -> None:
        if not isinstance(self.hyperparameters, Hyperparameters):
            raise ValueError(f"hyperparameters={self.hyperparameters!r} are not DQN's: expected Hyperparameters")
        if self.hyperparameters.num_envs > self.run.total_steps:
            raise ValueError(
                f"num_envs={self.hyperparameters.num_envs} exceeds total_steps={self.run.total_steps}: "
                "expected num_envs <= total_steps"
            )

    @classmethod
    def of(cls, **values: Any) -> DQNConfig:
        """A config from flat keywords: each goes to the dataclass with that field (names are unique)."""
        return cls().replace(**values)

    @property
    def num_iterations(self) -> int:
        """Vector steps in the run."""
        return self.run.total_steps // self.hyperparameters.num_envs

    @property
    def num_updates(self) -> int:
        """Gradient updates in the run: ``gradient_steps`` at each vector step past ``learning_starts`` whose index
        is a multiple of ``train_frequency`` (the schedule of every arm's loop; the learning rate decays over them)."""
        hyper = self.hyperparameters
        first = hyper.learning_starts // hyper.num_envs  # the first iteration with (i + 1) * num_envs > starts
        if first >= self.num_iterations:
            return 0
        start = -(-first // hyper.train_frequency) * hyper.train_frequency  # first multiple of train_frequency
        return max(0, -(-(self.num_iterations - start) // hyper.train_frequency)) * hyper.gradient_steps

    @property
    def lr_decay_updates(self) -> int:
        """Updates over which the learning rate decays linearly (``lr_decay_fraction`` of the span from the first
        update to the last), at least 1: update ``k`` runs at :func:`~.schedules.learning_rate` of ``k`` in every
        arm."""
        return max(1, round(self.hyperparameters.lr_decay_fraction * (self.num_updates - 1)))

    def epsilon(self, step: Any, xp: Any = np) -> Any:
        """The exploration rate at env step ``step`` (:func:`~.schedules.epsilon`; NumPy's ``xp`` or ``jax.numpy``)."""
        hyper = self.hyperparameters
        return schedules.epsilon(
            step, hyper.start_epsilon, hyper.end_epsilon, hyper.exploration_fraction, self.run.total_steps, xp
        )

    @property
    def restarts(self) -> bool:
        """Whether training episodes may start anywhere (``restart_prob > 0``): the loops draw the restarts only then,
        so a run without them consumes its random streams exactly as before they existed."""
        return self.hyperparameters.restart_prob > 0

    def restart_probability(self, step: Any, xp: Any = np) -> Any:
        """The probability that an episode starting after env step ``step`` starts anywhere
        (:func:`~.schedules.restart_probability`; NumPy's ``xp`` or ``jax.numpy``)."""
        hyper = self.hyperparameters
        return schedules.restart_probability(step, hyper.restart_prob, hyper.restart_fraction, self.run.total_steps, xp)


def level_of(params: DoorsParams) -> Level | None:
    """The registered level whose layout ``params`` is (grid, walls, doors per wall, door mode), or None."""
    for level in LEVELS:
        if (level.grid_size, level.n_walls, level.n_doors, level.doors) == (
            params.grid_size,
            params.n_walls,
            params.n_doors,
            params.doors,
        ) and (params.random_doors or params.door_cols == level.params().door_cols):
            return level
    return None


def level_env_id(backend_id: str, params: DoorsParams) -> str:
    """The id a backend (``Doors-v0`` NumPy, ``DoorsJax-v0`` JAX) steps at ``params``'s level: that backend's
    id of the level (``Doors-Random-v0``, ...), or ``backend_id`` where the layout is no registered level."""
    level = level_of(params)
    if level is None:
        return backend_id
    return level.jax_env_id if backend_id == "DoorsJax-v0" else level.env_id


def make_config(hyperparameters: Any, run: RunSettings | None = None) -> Config:
    """The config of ``hyperparameters`` over ``run``: a :class:`DQNConfig` for DQN's, a :class:`Config` for an
    arm's own."""
    kind = DQNConfig if isinstance(hyperparameters, Hyperparameters) else Config
    return kind(hyperparameters, run or RunSettings())


def describe_hyperparameters(hyperparameters: Any) -> str:
    """Hyperparameters in one line for people: their own ``describe()``, else ``name value`` by field."""
    if hasattr(hyperparameters, "describe"):
        return hyperparameters.describe()
    return ", ".join(f"{name} {getattr(hyperparameters, name)!r}" for name in field_names(hyperparameters))


def field_names(instance: Any) -> tuple[str, ...]:
    """The field names of a dataclass or of its instance."""
    return tuple(spec.name for spec in dataclasses.fields(instance))


def _own_hyperparameters(cls: type) -> type:
    factory = {spec.name: spec for spec in dataclasses.fields(cls)}["hyperparameters"].default_factory
    if factory is dataclasses.MISSING:
        raise ValueError(f"{cls.__name__}.from_dict needs the hyperparameters' dataclass: pass hyperparameters=")
    return factory


RUN_NAMES = field_names(RunSettings)
"""The run settings' names (no arm's hyperparameter may take one)."""
LAYOUT_NAMES = tuple(spec.name for spec in dataclasses.fields(RunSettings) if spec.metadata.get("layout"))
"""The run settings of the layout and its time limit (the layout and level flags set them)."""
HYPERPARAMETER_NAMES = field_names(Hyperparameters)
"""DQN's hyperparameters' names."""


def _plain(instance: Any) -> dict[str, Any]:
    return {
        key: list(value) if isinstance(value, tuple) else value for key, value in dataclasses.asdict(instance).items()
    }


def _from_plain(cls: type, values: dict[str, Any]) -> Any:
    known = {spec.name for spec in dataclasses.fields(cls)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise ValueError(f"config keys {unknown} are unknown: expected keys among {sorted(known)}")
    return cls(**{key: tuple(value) if isinstance(value, list) else value for key, value in values.items()})
