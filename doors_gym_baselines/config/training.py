"""What a training is: an arm's own hyperparameters over the shared run settings.

:class:`Config` is the pair, read and changed flat (field names are unique across the two); :class:`DQNConfig`
is DQN's, validated across both and giving the schedule both set (iterations, updates, exploration).
:func:`make_config` picks the class.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from doors_gym.core import DoorsParams

from . import schedules
from .fields import field_names
from .hyperparameters import Hyperparameters
from .run import RUN_FIELDS_OFF_THE_OUTCOME, RUN_NAMES, RunSettings


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
        """What decides the run's outcome: :meth:`to_dict` without :data:`RUN_FIELDS_OFF_THE_OUTCOME` and without
        the hyperparameters its algorithm leaves unused (``unused_fields``: a PQN run's replay buffer size, say), so a
        cached run, or a checkpoint, is reused for any config that computes the same run."""
        values = self.to_dict()
        for name in RUN_FIELDS_OFF_THE_OUTCOME:
            values["run"].pop(name)
        for name in getattr(self.hyperparameters, "unused_fields", ()):
            values["hyperparameters"].pop(name)
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
        if hyper.algorithm == "pqn":  # a learning phase at the end of every whole rollout
            return self.num_iterations // hyper.rollout_steps * hyper.epochs * hyper.minibatches
        first = hyper.learning_starts // hyper.num_envs  # the first iteration with (i + 1) * num_envs > starts
        if first >= self.num_iterations:
            return 0
        start = -(-first // hyper.train_frequency) * hyper.train_frequency  # first multiple of train_frequency
        return max(0, -(-(self.num_iterations - start) // hyper.train_frequency)) * hyper.gradient_steps

    @property
    def update_batch_size(self) -> int:
        """Transitions per gradient update: ``batch_size``, or PQN's minibatch (a rollout's over ``minibatches``)."""
        hyper = self.hyperparameters
        if hyper.algorithm == "pqn":
            return hyper.rollout_steps * hyper.num_envs // hyper.minibatches
        return hyper.batch_size

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


def _own_hyperparameters(cls: type) -> type:
    factory = {spec.name: spec for spec in dataclasses.fields(cls)}["hyperparameters"].default_factory
    if factory is dataclasses.MISSING:
        raise ValueError(f"{cls.__name__}.from_dict needs the hyperparameters' dataclass: pass hyperparameters=")
    return factory


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
