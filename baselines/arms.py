"""The arms of the comparison: the protocol they follow and the registry of them.

An arm is a learning algorithm in a framework and the env it trains against. What
an arm provides is :class:`ArmProtocol`; :class:`Arm` is the record that the
built-in arms, and any plug-in that wishes, use to provide it. Arms are found
through the entry-point group ``doors_gym.arms`` (:data:`ARM_GROUP`): this
distribution names its own six there, and any installed package adds its arms
the same way, with no line changed here. An arm's entry point names its record
(``module:ATTRIBUTE``), which is loaded (its file and framework imported) only
where it is used, so naming arms (``--arm``'s choices, ``doors-gym --help``,
``play``) imports no framework. The CLI, tracking, enjoy, tuning and compare
look arms up here and use the protocol; nothing else compares arm names.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.metadata
import pathlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from types import ModuleType
from typing import Any, Protocol, runtime_checkable

from doors_gym.extras import require

from .config import DQNConfig, Hyperparameters, check_choice, first_line
from .runtime import prepare_host_devices

FRAMEWORK_STACKS = {"torch": ("torch",), "flax": ("jax", "flax", "optax")}
"""The modules each framework's arms import (a missing one is named with its extra)."""
FRAMEWORK_FILES = {"torch": "dqn_torch", "flax": "dqn_flax"}
"""The module that reads and writes each framework's model files."""
PURE_FUNCTIONS = "DoorsJax pure functions"

Trainer = Callable[[DQNConfig, Any, "Arm"], Any]
"""A learner file's ``train(config, trial, arm) -> TrainResult``."""
Saver = Callable[[Any, str, int], None]
"""A learner file's ``save_model(result, path, seed_index)``."""
Loader = Callable[[str], "tuple[str, Any, DQNConfig]"]
"""A model format's ``load_model(path) -> (arm name, model, config)``."""
ARM_GROUP = "doors_gym.arms"
"""The entry-point group every arm is found through: ``name = "module:ATTRIBUTE"`` (the arm's record)."""
DISTRIBUTION = "doors-gym"
"""This distribution, whose arms come first."""
TABLE_ORDER = ("torch-numpy", "torch-jax", "torch-compile", "flax-numpy", "flax-jax", "flax-scan")
"""The order in which tables, plots and ``--arm`` list this distribution's arms (packaging sorts entry points
by name); other packages' arms follow, by name."""
_DEFAULTS = Hyperparameters()
HYPERPARAMETERS = {spec.name: getattr(_DEFAULTS, spec.name) for spec in dataclasses.fields(Hyperparameters)}
"""Every hyperparameter and its default (what an arm that does not read one must leave it at)."""


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
    :meth:`save`, :meth:`load` and :meth:`act`. The rest may be empty: ``honoured`` ``None`` means every
    hyperparameter; no ``presets`` means the built-in presets; no ``search_space`` means the DQN one (an
    arm that honours only some hyperparameters brings its own, or ``tune`` refuses it); no
    ``recognises`` means its model files are read only when its name is given (``enjoy --arm``).
    :class:`Arm` provides all of it.
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
    honoured: frozenset[str] | None
    """The hyperparameters ``train`` reads (``None``: all); another one away from its default is an error."""
    presets: Mapping[str, str]
    """Its own preset files by name (``tuned``, ``quick``, ...), over the built-in ones."""
    search_space: tuple[Any, ...] | None
    """Its tuning coordinates (:class:`doors_gym_baselines.tuning.space.Range`), or ``None`` for the DQN one."""
    requirements: tuple[str, ...]
    """The pip requirements of its models beside doors-gym (an MLflow model's environment)."""

    def configure(self, config: DQNConfig) -> DQNConfig:
        """``config`` as this arm trains it; ``ValueError`` naming a setting it does not honour."""

    def train(self, config: DQNConfig, trial: Any = None) -> Any:
        """Trains; returns a :class:`~doors_gym_baselines.metrics.TrainResult` (phase timings, history, model).

        Its model has ``act(obs)``, greedy actions ``(batch,)``, and ``q_values(obs)``, ``(batch, 5)`` float
        (the columns of its MLflow model), for grid observations ``(batch, H * W)``."""

    def save(self, result: Any, path: str | pathlib.Path, seed_index: int = 0) -> pathlib.Path:
        """Writes one seed's trained model in its own format; returns the path."""

    def load(self, path: str | pathlib.Path) -> tuple[Any, DQNConfig]:
        """``(model, config)`` of a model file it wrote."""

    def act(self, model: Any, obs: Any) -> Any:
        """Greedy actions ``(batch,)`` of ``model`` for grid observations ``(batch, H * W)``."""

    def recognises(self, path: pathlib.Path) -> bool:
        """Whether a model file is one of its own (from its first bytes, say)."""


@dataclasses.dataclass(frozen=True)
class Arm:
    """The record of an arm: an algorithm's functions, the env it steps and how it is shown (:class:`ArmProtocol`).

    Attributes:
        name: the ``--arm`` value.
        framework: what it is written in (``torch``, ``flax``, ...): a run tag; the built-in frameworks'
            model files are recognised by content.
        env_id: the registered env whose rules it steps.
        label: its row in tables and plots.
        trainer: the learner file's ``train(config, trial, arm)``: trains ``config`` as this arm.
        saver: the learner file's ``save_model(result, path, seed_index)``.
        loader: its model format's ``load_model(path) -> (arm name, model, config)``; ``None``: the
            built-in framework's (:data:`FRAMEWORK_FILES`).
        seeds_in_one_run: whether it trains several seeds together (under one ``vmap``).
        steps_pure_functions: whether it calls the JAX pure functions instead of a Gymnasium env.
        study: the study's published figures for the same stack, if it has them.
        honoured: the hyperparameters it reads (``None``: all of them).
        presets: its own preset files by name, over the built-in presets.
        search_space: its tuning coordinates, or ``None`` for the DQN search space.
        requirements: pip requirements of its models beside doors-gym; empty: its built-in framework's.
        magic: the first bytes of its model files, if they tell them apart (for :meth:`recognises`).
        package: the distribution that provides it (set by the registry from its entry point).
    """

    name: str
    framework: str
    env_id: str
    label: str
    trainer: Trainer = dataclasses.field(repr=False)
    saver: Saver = dataclasses.field(repr=False)
    loader: Loader | None = dataclasses.field(default=None, repr=False)
    seeds_in_one_run: bool = False
    steps_pure_functions: bool = False
    study: StudyFigures | None = None
    honoured: frozenset[str] | None = None
    presets: Mapping[str, str] = dataclasses.field(default_factory=dict)
    search_space: tuple[Any, ...] | None = None
    requirements: tuple[str, ...] = ()
    magic: bytes = b""
    package: str = DISTRIBUTION

    def __post_init__(self) -> None:
        if self.honoured is not None:
            unknown = sorted(set(self.honoured) - set(HYPERPARAMETERS))
            if unknown:
                raise ValueError(
                    f"honoured={unknown} of the {self.name} arm are not hyperparameters: expected names among "
                    f"{sorted(HYPERPARAMETERS)}"
                )
        if not self.requirements:
            object.__setattr__(self, "requirements", FRAMEWORK_STACKS.get(self.framework, ()))
        if self.loader is None and self.framework not in FRAMEWORK_FILES:
            raise ValueError(
                f"the {self.name} arm ({self.framework}) needs a loader: only {sorted(FRAMEWORK_FILES)} models "
                "are read without one"
            )

    @property
    def env_label(self) -> str:
        """What the arm steps: the env id, or the pure functions for the fully jitted arm."""
        return PURE_FUNCTIONS if self.steps_pure_functions else self.env_id

    def module(self) -> ModuleType:
        """The learner file that holds this record (imported with it)."""
        return importlib.import_module(self.trainer.__module__)

    def configure(self, config: DQNConfig) -> DQNConfig:
        """``config`` for this arm: its env id, and one seed unless it trains seeds together.

        Raises:
            ValueError: for several seeds on an arm that trains one per run, or a hyperparameter the arm
                does not read set away from its default (never silently ignored).
        """
        if config.run.num_seeds > 1 and not self.seeds_in_one_run:
            raise ValueError(
                f"num_seeds={config.run.num_seeds} is not supported by the {self.name} arm: it trains one seed per "
                f"run (arms that train seeds together: {arms_that_train_seeds_together()})"
            )
        self.check_honoured(config.hyperparameters)
        return config if config.run.env_id == self.env_id else config.replace(env_id=self.env_id)

    def check_honoured(self, hyperparameters: Hyperparameters) -> None:
        """``ValueError`` naming the first hyperparameter set away from its default that this arm does not read."""
        if self.honoured is None:
            return
        for name, default in HYPERPARAMETERS.items():
            value = getattr(hyperparameters, name)
            if name not in self.honoured and value != default:
                raise ValueError(
                    f"{name}={value!r} is not honoured by the {self.name} arm ({self.package}): it reads "
                    f"{', '.join(sorted(self.honoured))}; leave {name} at its default ({default!r})"
                )

    def train(self, config: DQNConfig, trial: Any = None) -> Any:
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

    def load(self, path: str | pathlib.Path) -> tuple[Any, DQNConfig]:
        """``(model, config)`` of a model file written by an arm of this format."""
        if self.loader is not None:
            _, model, config = self.loader(str(path))
            return model, config
        arm, model, config = load_builtin_model(path)
        if arm.framework != self.framework:
            raise ValueError(
                f"{str(path)!r} holds a {arm.framework} model of the {arm.name} arm, not a {self.framework} one"
            )
        return model, config

    def recognises(self, path: pathlib.Path) -> bool:
        """Whether ``path`` begins with this arm's :attr:`magic` (never, without one)."""
        if not self.magic:
            return False
        with pathlib.Path(path).open("rb") as handle:
            return handle.read(len(self.magic)) == self.magic

    def act(self, model: Any, obs: Any) -> Any:
        """Greedy actions of ``model`` (from :meth:`train` or :func:`load_model`) for a batch of observations."""
        return model.act(obs)


def arm_for_env(arms: Sequence[Arm], env_id: str) -> Arm:
    """The one of ``arms`` (a learner file's records) that steps ``env_id``; ``ValueError`` naming theirs if none."""
    for arm in arms:
        if arm.env_id == env_id:
            return arm
    names = ", ".join(arm.name for arm in arms)
    raise ValueError(f"env_id={env_id!r} is not supported by {names}: expected one of {[a.env_id for a in arms]}")


class ArmUnavailable(ValueError):
    """An installed arm cannot be used: its package failed to import, or its entry point is not an arm."""


class ArmNameClash(ValueError):
    """Two installed packages name an arm the same."""


def distribution_of(entry: importlib.metadata.EntryPoint) -> str:
    """The distribution that declares ``entry``, with its version (``doors-gym 0.1.0``)."""
    dist = entry.dist
    return f"{dist.name} {dist.version}" if dist is not None else "an unknown package"


def arm_entry_points(group: str = ARM_GROUP) -> dict[str, list[importlib.metadata.EntryPoint]]:
    """The installed arms' entry points by name: this distribution's first (:data:`TABLE_ORDER`), then the
    others' by name (a name with two entries is a clash, reported where it is used)."""
    entries: dict[str, list[importlib.metadata.EntryPoint]] = {}
    for entry in importlib.metadata.entry_points(group=group):
        found = entries.setdefault(entry.name, [])
        if all(distribution_of(entry) != distribution_of(other) for other in found):  # a package seen twice
            found.append(entry)

    def order(name: str) -> tuple[int, str]:
        return (TABLE_ORDER.index(name), "") if name in TABLE_ORDER else (len(TABLE_ORDER), name)

    return {name: entries[name] for name in sorted(entries, key=order)}


class ArmRegistry(Mapping[str, ArmProtocol]):
    """The installed arms by name (:data:`ARM_GROUP`), in table order; a record is loaded at its first lookup.

    Iterating gives the names without importing anything; looking one up imports its package. A missing
    framework of a built-in arm is named with its extra; a plug-in that fails to import is one line
    naming its package (:class:`ArmUnavailable`), and other arms go on working.
    """

    def __init__(self, group: str = ARM_GROUP) -> None:
        self._group = group
        self._entries: dict[str, list[importlib.metadata.EntryPoint]] | None = None
        self._loaded: dict[str, ArmProtocol] = {}
        self._added: dict[str, ArmProtocol] = {}

    @property
    def entries(self) -> dict[str, list[importlib.metadata.EntryPoint]]:
        if self._entries is None:
            self._entries = arm_entry_points(self._group)
        return self._entries

    def __getitem__(self, name: str) -> ArmProtocol:
        if name in self._added:
            return self._added[name]
        if name not in self._loaded:
            self._loaded[name] = self._load(name, self.entries[name])
        return self._loaded[name]

    def _load(self, name: str, found: list[importlib.metadata.EntryPoint]) -> ArmProtocol:
        if len(found) > 1:
            raise ArmNameClash(
                f"arm {name!r} is provided by two packages, {' and '.join(map(distribution_of, found))}: "
                "uninstall one of them"
            )
        entry = found[0]
        package = distribution_of(entry)
        if self.is_builtin(name):
            require(entry.module, f"the {name} arm")  # a missing framework, named with its extra
        try:
            arm = entry.load()
        except Exception as error:  # noqa: BLE001 - whatever a plug-in raises at import is reported in one line
            raise ArmUnavailable(
                f"the {name} arm of {package} failed to import ({entry.value}): {type(error).__name__}: "
                f"{first_line(error)}"
            ) from error
        if not isinstance(arm, ArmProtocol) or arm.name != name:
            raise ArmUnavailable(f"the entry point {name} = {entry.value!r} of {package} is not the {name} arm")
        return dataclasses.replace(arm, package=package) if isinstance(arm, Arm) else arm

    def is_builtin(self, name: str) -> bool:
        """Whether the arm called ``name`` is one of this package's own."""
        return name not in self._added and all(
            entry.module.startswith(f"{__package__}.") for entry in self.entries.get(name, [])
        )

    def add(self, arm: ArmProtocol) -> None:
        """Makes ``arm`` (an object, e.g. from a notebook) known by its name for this process; the installed
        arm of that name is fine (the same record), another one is a :class:`ArmNameClash`."""
        if not isinstance(arm, ArmProtocol):
            raise TypeError(f"{arm!r} is not an arm: see doors_gym_baselines.arms.ArmProtocol")
        if arm.name in self.entries and arm.name not in self._added:
            installed = self[arm.name]
            if installed is arm or getattr(installed, "trainer", None) is getattr(arm, "trainer", arm):
                return
            packages = ", ".join(map(distribution_of, self.entries[arm.name]))
            raise ArmNameClash(f"arm {arm.name!r} is installed already ({packages}): name yours otherwise")
        self._added[arm.name] = arm

    def __iter__(self) -> Iterator[str]:
        return iter([*self.entries, *(name for name in self._added if name not in self.entries)])

    def __len__(self) -> int:
        return len(list(iter(self)))


ARMS: ArmRegistry = ArmRegistry()
"""Every installed arm, by name: the one ``--arm`` vocabulary of ``train``, ``enjoy``, ``tune`` and ``compare``."""


class ArmReference:
    """An arm of the registry as a module-level constant: its name is here, the rest of its record is read
    from :data:`ARMS` when first asked for (so that importing the constant imports no framework)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __getattr__(self, attribute: str) -> Any:
        if attribute.startswith("_"):  # copy and pickle probe for these: not the record's
            raise AttributeError(attribute)
        return getattr(ARMS[self.name], attribute)

    def __repr__(self) -> str:
        return f"ArmReference({self.name!r})"


REFERENCE_ARM = ArmReference("torch-numpy")
"""The arm speed-ups are measured against (the study's baseline stack)."""


def arms_that_train_seeds_together() -> list[str]:
    """The names of the installed arms that train several seeds in one run (an arm whose framework is
    missing is left out: this names alternatives, it does not load them for use)."""
    names = []
    for name in ARMS:
        try:
            arm = ARMS[name]
        except (ImportError, ValueError):  # a missing framework, a broken plug-in
            continue
        if arm.seeds_in_one_run:
            names.append(name)
    return names


def get_arm(name: str) -> ArmProtocol:
    """The arm called ``name``; ``ValueError`` listing the known arms otherwise."""
    check_choice("arm", name, tuple(ARMS))
    return ARMS[name]


ZIP_MAGIC = b"PK\x03\x04"
"""How a ``torch.save`` file begins."""


def model_framework(path: str | pathlib.Path) -> str:
    """The framework whose model file ``path`` is, read from its first bytes (never from its name).

    Raises:
        ValueError: for a missing file or one that is neither a torch archive nor a msgpack map.
    """
    path = pathlib.Path(path)
    if not path.is_file():
        raise ValueError(f"model file {str(path)!r} does not exist")
    with path.open("rb") as handle:
        header = handle.read(4)
    if header == ZIP_MAGIC:
        return "torch"
    if header and (0x80 <= header[0] <= 0x8F or header[0] in (0xDE, 0xDF)):
        return "flax"
    raise ValueError(
        f"{str(path)!r} is not a doors-gym model file: expected a torch archive or a Flax msgpack file "
        "written by `doors-gym train --save`"
    )


def plugged_in_arm_of(path: pathlib.Path) -> ArmProtocol | None:
    """The installed arm of another package that recognises the model file ``path``, if one does."""
    for name in ARMS:
        try:
            arm = ARMS[name]
        except (ImportError, ValueError):  # a missing framework, a broken plug-in: not this file's reader
            continue
        if not ARMS.is_builtin(name) and arm.recognises(path):
            return arm
    return None


def load_model(path: str | pathlib.Path, arm: ArmProtocol | None = None) -> tuple[ArmProtocol, Any, DQNConfig]:
    """``(arm, model, config)`` of a model file of any arm (or of ``arm``'s format); ``model.act(obs)`` gives
    greedy actions. Plug-in arms that recognise the file read it; the built-in formats are told by content."""
    path = pathlib.Path(path)
    if not path.is_file():
        raise ValueError(f"model file {str(path)!r} does not exist")
    arm = arm or plugged_in_arm_of(path)
    if arm is not None:
        model, config = arm.load(path)
        return arm, model, config
    return load_builtin_model(path)


def load_builtin_model(path: str | pathlib.Path) -> tuple[ArmProtocol, Any, DQNConfig]:
    """``(arm, model, config)`` of a model file of a built-in framework, told by content."""
    framework = model_framework(path)
    for stack in FRAMEWORK_STACKS[framework]:
        require(stack, f"loading a {framework} model")
    module = importlib.import_module(f"{__package__}.{FRAMEWORK_FILES[framework]}")
    arm_name, model, config = module.load_model(str(path))
    return get_arm(arm_name), model, config
