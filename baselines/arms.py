"""The arms of the comparison: one record per stack, the only place an arm's name means anything.

An arm is a DQN implementation (a module of this package) and the env it
trains against. The CLI, tracking, enjoy, tuning and compare look arms up here
and use the record's fields and methods; nothing else compares arm names.

Adding an arm is one file (a module with ``train(config, trial=None)``,
``save_model(result, path, seed_index=0)`` and ``load_model(path)``, whose models
have ``act(obs)``) and one line in :data:`ARMS`.
"""

from __future__ import annotations

import dataclasses
import importlib
import pathlib
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


@dataclasses.dataclass(frozen=True)
class StudyFigures:
    """The study's Table 2 row for the same stack (one seed, tuned with 40 Optuna trials, on a GPU)."""

    label: str
    rolling_reward: float
    wall_seconds: float


@dataclasses.dataclass(frozen=True)
class Arm:
    """One stack: a DQN implementation and the env it steps.

    Attributes:
        name: the ``--arm`` value.
        framework: ``torch`` or ``flax``: the run tags and the model file format.
        env_id: the registered env whose rules it steps.
        label: its row in tables and plots.
        implementation: the module of this package that trains it.
        seeds_in_one_run: whether it trains several seeds together (under one ``vmap``).
        steps_pure_functions: whether it calls the JAX pure functions instead of a Gymnasium env.
        study: the study's published figures for the same stack, if it has them.
    """

    name: str
    framework: str
    env_id: str
    label: str
    implementation: str
    seeds_in_one_run: bool = False
    steps_pure_functions: bool = False
    study: StudyFigures | None = None

    @property
    def env_label(self) -> str:
        """What the arm steps: the env id, or the pure functions for the fully jitted arm."""
        return PURE_FUNCTIONS if self.steps_pure_functions else self.env_id

    def module(self) -> ModuleType:
        """The implementation module (imports the framework; a missing one is named with its extra)."""
        for stack in FRAMEWORK_STACKS[self.framework]:
            require(stack, f"the {self.name} arm")
        if self.seeds_in_one_run:
            prepare_host_devices()
        return importlib.import_module(f"{__package__}.{self.implementation}")

    def configure(self, config: DQNConfig) -> DQNConfig:
        """``config`` for this arm: its env id, and one seed unless it trains seeds together."""
        if config.run.num_seeds > 1 and not self.seeds_in_one_run:
            raise ValueError(
                f"num_seeds={config.run.num_seeds} is not supported by the {self.name} arm: it trains one seed per "
                f"run (arms that train seeds together: {[a.name for a in ARMS.values() if a.seeds_in_one_run]})"
            )
        return config if config.run.env_id == self.env_id else config.replace(env_id=self.env_id)

    def train(self, config: DQNConfig, trial: Any = None) -> Any:
        """Trains with ``config`` (its env id set to the arm's); reports evaluations to an Optuna ``trial``."""
        return self.module().train(self.configure(config), trial)

    def save(self, result: Any, path: str | pathlib.Path, seed_index: int = 0) -> pathlib.Path:
        """Writes one seed's trained model to ``path`` (its folder is created); returns the path."""
        path = pathlib.Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        self.module().save_model(result, str(path), seed_index=seed_index)
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


ARMS: dict[str, Arm] = {
    arm.name: arm
    for arm in (
        Arm(
            "torch-numpy",
            "torch",
            "Doors-v0",
            "torch x Doors-v0 (NumPy)",
            "dqn_torch",
            study=StudyFigures("PyTorch + Gym (sync envs)", 0.73, 22.5 * 60),
        ),
        Arm("torch-jax", "torch", "DoorsJax-v0", "torch x DoorsJax-v0", "dqn_torch"),
        Arm("torch-compile", "torch", "Doors-v0", "torch.compile x Doors-v0 (NumPy)", "dqn_torch_compile"),
        Arm(
            "flax-numpy",
            "flax",
            "Doors-v0",
            "Flax x Doors-v0 (NumPy)",
            "dqn_flax",
            study=StudyFigures("Flax + Gym (sync envs)", 0.64, 22.8 * 60),
        ),
        Arm(
            "flax-jax",
            "flax",
            "DoorsJax-v0",
            "Flax x DoorsJax-v0",
            "dqn_flax",
            study=StudyFigures("Flax + Gym + JAX-vectorised env", 0.71, 2.3 * 60),
        ),
        Arm(
            "flax-scan",
            "flax",
            "DoorsJax-v0",
            "Flax + JAX env, one jitted scan",
            "dqn_flax_scan",
            seeds_in_one_run=True,
            steps_pure_functions=True,
        ),
    )
}
"""Every arm, by name: the one ``--arm`` vocabulary of ``train``, ``tune`` and ``compare``."""
REFERENCE_ARM = ARMS["torch-numpy"]
"""The arm speed-ups are measured against (the study's baseline stack)."""


def get_arm(name: str) -> Arm:
    """The arm called ``name``; ``ValueError`` listing the known arms otherwise."""
    check_choice("arm", name, tuple(ARMS))
    return ARMS[name]


def arm_of(implementation: str, env_id: str) -> Arm:
    """The arm that ``implementation`` (a module name) forms with ``env_id`` (its only arm, if it has one)."""
    candidates = [arm for arm in ARMS.values() if arm.implementation == implementation.rsplit(".", 1)[-1]]
    if len(candidates) == 1:
        return candidates[0]
    for arm in candidates:
        if arm.env_id == env_id:
            return arm
    raise ValueError(
        f"env_id={env_id!r} is not supported by {implementation}: expected one of "
        f"{[arm.env_id for arm in candidates]}"
    )


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
