"""What an arm is: :class:`ArmProtocol`, what every arm provides, and :class:`Arm`, the record that provides it.

An arm is a learning algorithm in a framework and the env it trains against. It owns its hyperparameters (a
frozen dataclass of its own, :attr:`Arm.hyperparameters`) and its search space; what every run shares (the
budget, the evaluation, the seeds: :class:`~doors_gym_baselines.config.RunSettings`) is shared. This module
imports no framework and no registry: the learners and the plug-ins build their records with it, and the
registry (:mod:`doors_gym_baselines.arms`) finds them through their entry points.
"""

from __future__ import annotations

import dataclasses
import importlib
import pathlib
from collections.abc import Callable, Mapping, Sequence
from types import ModuleType
from typing import Any, Protocol, runtime_checkable

from .config import Config, Hyperparameters, RunSettings, level_env_id, make_config
from .runtime import prepare_host_devices

FRAMEWORK_STACKS = {"torch": ("torch",), "flax": ("jax", "flax", "optax")}
"""The modules each framework's arms import (a missing one is named with its extra)."""
PURE_FUNCTIONS = "DoorsJax pure functions"
DISTRIBUTION = "doors-gym"
"""This distribution, whose arms come first."""
ZIP_MAGIC = b"PK\x03\x04"
"""How a ``torch.save`` file begins."""


def is_msgpack_map(header: bytes) -> bool:
    """Whether ``header`` begins a msgpack map (how ``flax.serialization.to_bytes`` files begin)."""
    return bool(header) and (0x80 <= header[0] <= 0x8F or header[0] in (0xDE, 0xDF))


FILE_FORMATS: dict[str, Callable[[bytes], bool]] = {
    "torch": lambda header: header == ZIP_MAGIC,
    "flax": is_msgpack_map,
}
"""How each framework's own serialisation begins (its first four bytes): what tells an arm of that framework
without a :attr:`Arm.magic` of its own that a file is in its format."""

Trainer = Callable[[Config, Any, "Arm"], Any]
"""A learner file's ``train(config, trial, arm) -> TrainResult``."""
Saver = Callable[[Any, str, int], None]
"""A learner file's ``save_model(result, path, seed_index)``."""
Loader = Callable[[str], "tuple[str, Any, Config]"]
"""A model format's ``load_model(path) -> (arm name, model, config)``."""


@dataclasses.dataclass(frozen=True)
class StudyFigures:
    """The study's Table 2 row for the same stack (one seed, tuned with 40 Optuna trials, on a GPU)."""

    label: str
    rolling_reward: float
    wall_seconds: float


@runtime_checkable
class ArmProtocol(Protocol):
    """What an arm provides, built in or plugged in (an object with these attributes and methods).

    Required: the attributes down to ``study`` and the methods :meth:`configure`, :meth:`train`,
    :meth:`save`, :meth:`load` and :meth:`act`. The rest may be empty: no ``presets`` means the built-in
    presets; no ``search_space`` means the DQN one (an arm with hyperparameters of its own brings its own, or
    ``tune`` refuses it); no ``recognises`` means its model files are read only when its name is given
    (``enjoy --arm``); no ``resumable`` (True when ``train`` saves its state to ``config.run.checkpoint`` and
    resumes from it) means it cannot resume, and ``compare`` gives its runs no checkpoint. :class:`Arm`
    provides all of it.
    """

    name: str
    """The ``--arm`` value (its entry point's name)."""
    framework: str
    """What it is written in (a run tag): ``torch``, ``flax``, ``jax``, ..."""
    env_id: str
    """The registered env whose rules it steps."""
    env_label: str
    """What it steps, for tables: the env id, or the pure functions."""
    label: str
    """Its row in tables and plots."""
    package: str
    """The distribution that provides it, with its version (a run tag)."""
    seeds_in_one_run: bool
    """Whether ``train`` trains ``config.run.num_seeds`` seeds together."""
    study: StudyFigures | None
    """The study's published figures for the same stack, if any."""
    hyperparameters: type
    """Its hyperparameters: a frozen dataclass whose fields have defaults and check themselves."""
    presets: Mapping[str, str]
    """Its own preset files by name (``tuned``, ``quick``, ...), over the built-in ones."""
    search_space: tuple[Any, ...] | None
    """Its tuning coordinates (:class:`doors_gym_baselines.api.Range`), or ``None`` for the DQN one."""
    requirements: tuple[str, ...]
    """The pip requirements of its models beside doors-gym (an MLflow model's environment)."""

    def configure(self, config: Config) -> Config:
        """``config`` as this arm trains it; ``ValueError`` naming what it cannot train."""

    def train(self, config: Config, trial: Any = None) -> Any:
        """Trains; returns a :class:`~doors_gym_baselines.harness.metrics.TrainResult` (phase timings, history, model).

        Its model has ``act(obs)``, greedy actions ``(batch,)``, and ``q_values(obs)``, ``(batch, 5)`` float
        (the columns of its MLflow model), for grid observations ``(batch, H * W)``."""

    def save(self, result: Any, path: str | pathlib.Path, seed_index: int = 0) -> pathlib.Path:
        """Writes one seed's trained model in its own format; returns the path."""

    def load(self, path: str | pathlib.Path) -> tuple[Any, Config]:
        """``(model, config)`` of a model file it wrote."""

    def act(self, model: Any, obs: Any) -> Any:
        """Greedy actions ``(batch,)`` of ``model`` for grid observations ``(batch, H * W)``."""

    def recognises(self, path: pathlib.Path) -> bool:
        """Whether a model file is one of its own (from its first bytes, say)."""


@dataclasses.dataclass(frozen=True)
class Arm:
    """The record of an arm: an algorithm's functions, its hyperparameters, the env it steps and how it is shown
    (:class:`ArmProtocol`).

    Attributes:
        name: the ``--arm`` value.
        framework: what it is written in (``torch``, ``flax``, ``jax``, ...): a run tag.
        env_id: the registered env whose rules it steps.
        label: its row in tables and plots.
        trainer: the learner file's ``train(config, trial, arm)``: trains ``config`` as this arm.
        saver: the learner file's ``save_model(result, path, seed_index)``.
        loader: its model format's ``load_model(path) -> (arm name, model, config)``; ``None``: the learner
            file's own ``load_model``.
        hyperparameters: its hyperparameters' frozen dataclass (every field with a default); DQN's by default.
        seeds_in_one_run: whether it trains several seeds together (under one ``vmap``).
        resumable: whether its runs save their training state to ``config.run.checkpoint`` as they go and resume
            from it (``compare`` and ``ladder`` give such an arm's runs a checkpoint beside their cache files).
        steps_pure_functions: whether it calls the JAX pure functions instead of a Gymnasium env.
        study: the study's published figures for the same stack, if it has them.
        presets: its own preset files by name, over the built-in presets.
        search_space: its tuning coordinates over its hyperparameters, or ``None`` for the DQN search space.
        requirements: pip requirements of its models beside doors-gym; empty: its built-in framework's.
        magic: the first bytes of its model files, if they tell them apart (for :meth:`recognises`); without
            it, its framework's own serialisation (:data:`FILE_FORMATS`).
        package: the distribution that provides it (set by the registry from its entry point).
        algorithms: the values of the hyperparameter ``algorithm`` it trains (hyperparameters without that field:
            any config).
    """

    name: str
    framework: str
    env_id: str
    label: str
    trainer: Trainer = dataclasses.field(repr=False)
    saver: Saver = dataclasses.field(repr=False)
    loader: Loader | None = dataclasses.field(default=None, repr=False)
    hyperparameters: type = Hyperparameters
    seeds_in_one_run: bool = False
    resumable: bool = False
    steps_pure_functions: bool = False
    study: StudyFigures | None = None
    presets: Mapping[str, str] = dataclasses.field(default_factory=dict)
    search_space: tuple[Any, ...] | None = None
    requirements: tuple[str, ...] = ()
    magic: bytes = b""
    package: str = DISTRIBUTION
    algorithms: tuple[str, ...] = ("dqn",)

    def __post_init__(self) -> None:
        if not (dataclasses.is_dataclass(self.hyperparameters) and isinstance(self.hyperparameters, type)):
            raise ValueError(
                f"hyperparameters={self.hyperparameters!r} of the {self.name} arm is not a dataclass: expected "
                "the frozen dataclass of its hyperparameters"
            )
        if not self.requirements:
            object.__setattr__(self, "requirements", FRAMEWORK_STACKS.get(self.framework, ()))

    @property
    def env_label(self) -> str:
        """What the arm steps: the env id, or the pure functions for the fully jitted arm."""
        return PURE_FUNCTIONS if self.steps_pure_functions else self.env_id

    def module(self) -> ModuleType:
        """The learner file that holds this record (imported with it)."""
        return importlib.import_module(self.trainer.__module__)

    def config(self, run: RunSettings | None = None, **values: Any) -> Config:
        """A config of this arm (rejax's ``create(**config)``): its hyperparameters from ``values`` (their
        field names) over their defaults, the run settings from ``run`` and ``values`` (theirs).

        Raises:
            ValueError: naming a keyword that is neither one of its hyperparameters nor a run setting.
        """
        return make_config(self.hyperparameters(), run or RunSettings()).replace(**values)

    def configure(self, config: Config) -> Config:
        """``config`` for this arm: its env id, and one seed unless it trains seeds together.

        Raises:
            ValueError: for several seeds on an arm that trains one per run, a checkpoint for an arm that cannot
                resume, or hyperparameters of another arm's kind (never silently converted).
        """
        if config.run.num_seeds > 1 and not self.seeds_in_one_run:
            raise ValueError(
                f"num_seeds={config.run.num_seeds} is not supported by the {self.name} arm: it trains one seed per "
                "run (expected num_seeds=1; arms that train seeds together say seeds_in_one_run)"
            )
        if config.run.checkpoint is not None and not self.resumable:
            raise ValueError(
                f"checkpoint={config.run.checkpoint!r} is not supported by the {self.name} arm: it cannot resume a "
                "run (expected checkpoint=None; arms that resume say resumable)"
            )
        if not isinstance(config.hyperparameters, self.hyperparameters):
            raise ValueError(
                f"hyperparameters={type(config.hyperparameters).__name__}(...) are not the {self.name} arm's: it "
                f"trains with {self.hyperparameters.__name__} (build its config with Arm.config)"
            )
        algorithm = getattr(config.hyperparameters, "algorithm", None)
        if algorithm is not None and algorithm not in self.algorithms:
            raise ValueError(
                f"algorithm={algorithm!r} is not supported by the {self.name} arm: expected one of "
                f"{', '.join(self.algorithms)}"
            )
        return config if config.run.env_id == self.env_id else config.replace(env_id=self.env_id)

    def train(self, config: Config, trial: Any = None) -> Any:
        """Trains with ``config`` (its env id set to the arm's); reports evaluations to ``trial`` (see
        :class:`~doors_gym_baselines.harness.Reporter`)."""
        if self.seeds_in_one_run:
            prepare_host_devices()  # its seeds spread over one JAX CPU device per core
        return self.trainer(self.configure(config), trial, self)

    def save(self, result: Any, path: str | pathlib.Path, seed_index: int = 0) -> pathlib.Path:
        """Writes one seed's trained model to ``path`` (its folder is created); returns the path."""
        path = pathlib.Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        self.saver(result, str(path), seed_index)
        return path

    def read(self, path: str | pathlib.Path) -> tuple[str, Any, Config]:
        """``(arm name, model, config)`` of a model file in this arm's format (the name is the file's own: arms
        of one learner file share a format); ``ValueError`` for a file that does not begin as its files do."""
        if (self.magic or self.framework in FILE_FORMATS) and not self.recognises(path):
            raise ValueError(
                f"{str(path)!r} is not a model file of the {self.name} arm: it does not begin as its "
                f"{self.framework} model files do"
            )
        loader = self.loader or getattr(self.module(), "load_model", None)
        if loader is None:
            raise ValueError(f"the {self.name} arm cannot read model files: its Arm has no loader")
        return loader(str(path))

    def load(self, path: str | pathlib.Path) -> tuple[Any, Config]:
        """``(model, config)`` of a model file written by an arm of this format."""
        _, model, config = self.read(path)
        return model, config

    def recognises(self, path: pathlib.Path) -> bool:
        """Whether ``path`` begins with this arm's :attr:`magic`, or else with its framework's serialisation."""
        with pathlib.Path(path).open("rb") as handle:
            header = handle.read(max(4, len(self.magic)))
        if self.magic:
            return header[: len(self.magic)] == self.magic
        known = FILE_FORMATS.get(self.framework)
        return known is not None and known(header[:4])

    def native_model(self, result: Any, seed_index: int = 0) -> Any:
        """One seed's model in its framework's own form (a ``torch.nn.Module`` from grids to Q-values, say), from
        the learner file's ``native_model(result, seed_index)``; ``None`` where it has none."""
        make = getattr(self.module(), "native_model", None)
        return None if make is None else make(result, seed_index)

    def act(self, model: Any, obs: Any) -> Any:
        """Greedy actions of ``model`` (from :meth:`train` or :meth:`load`) for a batch of observations."""
        return model.act(obs)


def env_label_at(arm: ArmProtocol, params: Any) -> str:
    """What ``arm`` steps at the level of ``params`` (a ``DoorsParams``), for tables and run tags: its
    :attr:`~ArmProtocol.env_label` with the env id of its backend (``Doors-v0``, ``DoorsJax-v0``) read as that backend's
    id of the level (``Doors-63x63-v0``, ``DoorsJax-63x63-v0``); a label that is not its env id (the pure functions)
    as it is."""
    if arm.env_label != arm.env_id:
        return arm.env_label
    return level_env_id(arm.env_id, params)


def arm_for_env(arms: Sequence[Arm], env_id: str) -> Arm:
    """The one of ``arms`` (a learner file's records) that steps ``env_id``; ``ValueError`` naming theirs if none."""
    for arm in arms:
        if arm.env_id == env_id:
            return arm
    names = ", ".join(arm.name for arm in arms)
    raise ValueError(f"env_id={env_id!r} is not supported by {names}: expected one of {[a.env_id for a in arms]}")
