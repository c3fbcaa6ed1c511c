"""The arms of the comparison: the registry of their records, the only place an arm's name means anything.

An arm is a DQN implementation and the env it trains against. Each learner file
(``dqn_torch.py``, ``dqn_flax.py``, ...) holds its own :class:`Arm` records, beside
the functions they name; :data:`ARM_RECORDS` says where each one lives, and a
record is loaded (its file and framework imported) only where it is used, so
naming arms (``--arm``'s choices, ``doors-gym --help``, ``play``) imports no
framework. The CLI, tracking, enjoy, tuning and compare look arms up here and
use the record's fields and methods; nothing else compares arm names.

Adding an arm is one learner file (with ``train(config, trial=None, arm=None)``,
a ``save_model(result, path, seed_index=0)`` and an :class:`Arm` record naming
them) and one line in :data:`ARM_RECORDS`.
"""

from __future__ import annotations

import dataclasses
import importlib
import pathlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from types import ModuleType
from typing import Any

from doors_gym.extras import require

from .config import DQNConfig, check_choice
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


@dataclasses.dataclass(frozen=True)
class StudyFigures:
    """The study's Table 2 row for the same stack (one seed, tuned with 40 Optuna trials, on a GPU)."""

    label: str
    rolling_reward: float
    wall_seconds: float


@dataclasses.dataclass(frozen=True)
class Arm:
    """One stack: a DQN implementation and the env it steps (each learner file holds its own).

    Attributes:
        name: the ``--arm`` value.
        framework: ``torch`` or ``flax``: the run tags and the model file format.
        env_id: the registered env whose rules it steps.
        label: its row in tables and plots.
        trainer: the learner file's ``train(config, trial, arm)``: trains ``config`` as this arm.
        saver: the learner file's ``save_model(result, path, seed_index)``.
        seeds_in_one_run: whether it trains several seeds together (under one ``vmap``).
        steps_pure_functions: whether it calls the JAX pure functions instead of a Gymnasium env.
        study: the study's published figures for the same stack, if it has them.
    """

    name: str
    framework: str
    env_id: str
    label: str
    trainer: Trainer = dataclasses.field(repr=False)
    saver: Saver = dataclasses.field(repr=False)
    seeds_in_one_run: bool = False
    steps_pure_functions: bool = False
    study: StudyFigures | None = None

    @property
    def env_label(self) -> str:
        """What the arm steps: the env id, or the pure functions for the fully jitted arm."""
        return PURE_FUNCTIONS if self.steps_pure_functions else self.env_id

    def module(self) -> ModuleType:
        """The learner file that holds this record (imported with it)."""
        return importlib.import_module(self.trainer.__module__)

    def configure(self, config: DQNConfig) -> DQNConfig:
        """``config`` for this arm: its env id, and one seed unless it trains seeds together."""
        if config.run.num_seeds > 1 and not self.seeds_in_one_run:
            raise ValueError(
                f"num_seeds={config.run.num_seeds} is not supported by the {self.name} arm: it trains one seed per "
                f"run (arms that train seeds together: {arms_that_train_seeds_together()})"
            )
        return config if config.run.env_id == self.env_id else config.replace(env_id=self.env_id)

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
        """``(model, config)`` of a model file written by an arm of this framework."""
        arm, model, config = load_model(path)
        if arm.framework != self.framework:
            raise ValueError(
                f"{str(path)!r} holds a {arm.framework} model of the {arm.name} arm, not a {self.framework} one"
            )
        return model, config

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


ARM_RECORDS = {
    "torch-numpy": "dqn_torch:TORCH_NUMPY",
    "torch-jax": "dqn_torch:TORCH_JAX",
    "torch-compile": "dqn_torch_compile:ARM",
    "flax-numpy": "dqn_flax:FLAX_NUMPY",
    "flax-jax": "dqn_flax:FLAX_JAX",
    "flax-scan": "dqn_flax_scan:ARM",
}
"""Where each arm's record lives (``module:ATTRIBUTE`` in this package), in the order tables list the arms."""


class ArmRegistry(Mapping[str, Arm]):
    """The arms by name, in the order of their locations; a record is loaded at its first lookup.

    Iterating gives the names without importing anything; looking one up imports its learner file (a
    missing framework is named with its extra).
    """

    def __init__(self, locations: Mapping[str, str]) -> None:
        self._locations = dict(locations)

    def __getitem__(self, name: str) -> Arm:
        module_name, attribute = self._locations[name].split(":")
        module = require(f"{__package__}.{module_name}", f"the {name} arm")
        arm = getattr(module, attribute)
        if not isinstance(arm, Arm) or arm.name != name:
            raise LookupError(f"{self._locations[name]} is not the record of the {name} arm")
        return arm

    def __iter__(self) -> Iterator[str]:
        return iter(self._locations)

    def __len__(self) -> int:
        return len(self._locations)


ARMS: Mapping[str, Arm] = ArmRegistry(ARM_RECORDS)
"""Every arm, by name: the one ``--arm`` vocabulary of ``train``, ``tune`` and ``compare``."""


class ArmReference:
    """An arm of the registry as a module-level constant: its name is here, the rest of its record is read
    from :data:`ARMS` when first asked for (so that importing the constant imports no framework)."""

    def __init__(self, name: str) -> None:
        check_choice("arm", name, tuple(ARM_RECORDS))
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
        except ImportError:
            continue
        if arm.seeds_in_one_run:
            names.append(name)
    return names


def get_arm(name: str) -> Arm:
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


def load_model(path: str | pathlib.Path) -> tuple[Arm, Any, DQNConfig]:
    """``(arm, model, config)`` of a model file of any arm; ``model.act(obs)`` gives greedy actions."""
    framework = model_framework(path)
    for stack in FRAMEWORK_STACKS[framework]:
        require(stack, f"loading a {framework} model")
    module = importlib.import_module(f"{__package__}.{FRAMEWORK_FILES[framework]}")
    arm_name, model, config = module.load_model(str(path))
    return get_arm(arm_name), model, config
