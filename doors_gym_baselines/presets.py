"""Presets: named hyperparameters and budgets that ``compare`` trains with (RL Zoo's hyperparams files).

A preset is a YAML file, or one of the built-in ones:

- ``tuned`` (the default): each arm's own file ``hyperparams/<arm>.yml`` beside
  this module, the best trial of its time-to-solved study (``doors-gym tune
  --preset-out``), with the budget and hold-out window it was tuned with;
- ``quick``: one hand-checked point of the search space for every arm, 100k
  env steps per seed;
- ``full``: the arm's default hyperparameters and the study's 500k env steps.

A file has a ``hyperparameters`` mapping (any field of the arm's hyperparameters: DQN's
:class:`~doors_gym_baselines.config.Hyperparameters` for this package's arms),
a ``run`` mapping (the budget: ``total_steps``, ``eval_every``,
``hold_out_steps``, ``stop_when_solved``) and an optional ``study`` mapping
that says where it came from. Anything else is an error naming the key.
"""

from __future__ import annotations

import dataclasses
import datetime
import pathlib
from collections.abc import Mapping
from typing import Any

from doors_gym.levels import STUDY

from .config import Config, Hyperparameters, RunSettings, field, field_names, make_config
from .config.seeds import seeds_named

HYPERPARAMS_DIR = pathlib.Path(__file__).parent / "hyperparams"
"""Where the tuned presets live (one ``<arm>.yml`` per arm, installed with the package)."""
RUN_FIELDS = ("total_steps", "eval_every", "hold_out_steps", "stop_when_solved")
"""The run settings a preset may set: the budget and when a run ends."""
SECTIONS = ("hyperparameters", "run", "study")

HAND_CHECKED = {
    "learning_rate": 3e-3,
    "gamma": 0.9,
    "target_update": 100,
    "exploration_fraction": 0.2,
    "learning_starts": 2_000,
}
"""A hand-checked point of the tuning search space, over the defaults (network 128 x 128, batch 128, 16 envs),
that every arm solves with (gamma 0.9 is what matters most)."""
TO_SOLVED = {"total_steps": 200_000, "eval_every": 10_000, "hold_out_steps": 20_000, "stop_when_solved": True}
"""The budget of a run timed to a solved agent (tuning's, and the tuned presets'): it stops once solved at
every evaluation of a 20k-step hold-out window."""

BUILTIN: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "quick": (HAND_CHECKED, {"total_steps": 100_000, "eval_every": 20_000}),
    # The study's protocol: 5e5 env steps per run, rolling reward over the last 2000 episodes.
    "full": ({}, {"total_steps": 500_000, "eval_every": 25_000}),
}
"""The built-in presets' ``(hyperparameters, run settings)`` over the defaults."""
SHARED = "shared"
"""Like for like: one network, one set of hyperparameters and one budget for every arm, timed to solved. The
file ``hyperparams/shared.yml`` holds it: of the studies' winners, the one whose slowest arm is fastest in
``benchmarks/preset_matrix.py`` (every arm solved every seed with it there)."""
NAMES = ("tuned", SHARED, *BUILTIN)
DEFAULT_PRESET = "tuned"


def preset_field(what: str) -> Any:
    """The ``--preset NAME|FILE`` field (with a switch per built-in name) of a command that trains ``what``."""
    return field(
        DEFAULT_PRESET,
        f"hyperparameters and budget of {what}: {', '.join(NAMES)}, or a preset file (YAML)",
        metavar="NAME|FILE",
        switches={
            "tuned": "each arm's own tuned preset (doors_gym_baselines/hyperparams/<arm>.yml): it stops once solved",
            "shared": "one preset for every arm, like for like: the same network, hyperparameters and budget",
            "quick": "a hand-checked point of the search space, 100k env steps per seed",
            "full": "the study's protocol: the defaults, 500k env steps per seed",
        },
    )


def check_preset(spec: str) -> None:
    """``ValueError`` unless ``spec`` is a built-in preset's name, a plug-in arm's own preset's name
    (:attr:`Arm.presets`) or an existing file."""
    if spec in NAMES or pathlib.Path(spec).is_file():
        return
    own = plugged_in_preset_names()
    if spec not in own:
        others = f" nor one of the installed arms' own, {own}" if own else ""
        raise ValueError(f"preset={spec!r} is neither one of {list(NAMES)} nor a file{others}")


def plugged_in_preset_names() -> list[str]:
    """The names of the presets the installed plug-in arms bring (arms that fail to load are left out)."""
    from .arms import ARMS

    names: list[str] = []
    for arm in ARMS:
        if ARMS.is_builtin(arm):
            continue
        try:
            own = ARMS[arm].presets
        except (ImportError, ValueError):
            continue
        names.extend(name for name in own if name not in NAMES and name not in names)
    return names


@dataclasses.dataclass(frozen=True)
class PresetOptions:
    """The ``--preset`` flag of ``doors-gym train``: where its hyperparameters and budget come from."""

    preset: str = preset_field("the run")

    def __post_init__(self) -> None:
        check_preset(self.preset)


@dataclasses.dataclass(frozen=True)
class Preset:
    """Hyperparameters and a budget over the defaults, and where they came from."""

    name: str
    """``tuned``, ``quick``, ``full`` or the file's path."""
    hyperparameters: dict[str, Any]
    run: dict[str, Any]
    study: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def chosen_on(self) -> tuple[int, ...]:
        """The seeds the preset was chosen on, as its ``study`` section names them
        (:func:`~doors_gym_baselines.config.seeds.seeds_named`); none for the built-in presets."""
        return seeds_named(self.study)

    @property
    def label(self) -> str:
        """What the comparison table says about the hyperparameters."""
        if not self.study.get("study"):
            return self.name
        trial = f", trial {self.study['trial']}" if "trial" in self.study else ""
        return f"{self.name} ({self.study['study']}{trial})"

    def config(self, run: RunSettings | None = None, hyperparameters: type = Hyperparameters) -> Config:
        """The preset over ``run`` (layout and machinery) and the defaults of ``hyperparameters`` (the arm's
        dataclass; DQN's by default); ``ValueError`` naming a key that is not one of its fields."""
        unknown = sorted(set(self.hyperparameters) - set(field_names(hyperparameters)))
        if unknown:
            raise ValueError(
                f"preset {self.name!r}: hyperparameters {unknown} are not fields of {hyperparameters.__name__}: "
                f"expected keys among {sorted(field_names(hyperparameters))}"
            )
        run = dataclasses.replace(run or RunSettings(), **self.run)
        return make_config(hyperparameters(**self.hyperparameters), run)


def tuned_path(arm: str, level: str = STUDY) -> pathlib.Path:
    """The tuned preset file of ``arm`` at ``level``: ``hyperparams/<arm>.yml`` at the study's level,
    ``hyperparams/<level>/<arm>.yml`` at another (``doors-gym tune --level <level> --preset-out`` writes it)."""
    return HYPERPARAMS_DIR / (f"{arm}.yml" if level == STUDY else f"{level}/{arm}.yml")


def preset_at(spec: str, arm: str, level: str = STUDY) -> Preset:
    """The preset ``spec`` for ``arm`` at ``level``, as every command that trains at a level reads it.

    At the study's level it is :func:`load_preset`'s. At another, ``tuned`` is the arm's tuned preset at that
    level (:func:`tuned_path`) where a study wrote one, else the level's shared preset, as ``shared`` is
    (:func:`level_preset`); any other name or file is read as at the study's level. The level's shared preset
    sets this package's DQN: an arm of its own hyperparameters (a plug-in's) takes its own preset of that name
    with the level's budget (its ``run`` section) in place of the preset's.
    """
    if level == STUDY or spec not in ("tuned", SHARED):
        return load_preset(spec, arm)
    path = tuned_path(arm, level)
    if spec == "tuned" and path.exists():
        return dataclasses.replace(read_preset(path, hyperparameters_of(arm)), name=f"tuned-{level}")
    if hyperparameters_of(arm) is not Hyperparameters:
        own, budget = load_preset(spec, arm), level_preset(level).run
        study = {**own.study, "run": f"the level's budget ({LEVEL_PREFIX}{level}.yml)"}
        return Preset(f"{spec}-{level}", own.hyperparameters, {**own.run, **budget}, study)
    return level_preset(level)


def tuned_arms() -> tuple[str, ...]:
    """The arms that have a tuned preset."""
    stems = (path.stem for path in HYPERPARAMS_DIR.glob("*.yml"))
    return tuple(sorted(stem for stem in stems if stem != SHARED and not stem.startswith(LEVEL_PREFIX)))


LEVEL_PREFIX = "level-"
"""The shared preset of a level other than the study's is ``hyperparams/level-<level>.yml``."""


def level_preset(level: str) -> Preset:
    """The shared preset of ``level`` (like for like: every arm's hyperparameters and budget at that level),
    named ``shared-<level>``: :data:`SHARED`'s, with ``hyperparams/level-<level>.yml`` on top (its budget, and
    any hyperparameter it changes); the study level's is :data:`SHARED` itself.

    Raises:
        ValueError: naming a level that has no preset file.
    """
    shared = load_preset(SHARED, "")
    if level == STUDY:
        return shared
    path = HYPERPARAMS_DIR / f"{LEVEL_PREFIX}{level}.yml"
    if not path.exists():
        known = sorted(path.stem.removeprefix(LEVEL_PREFIX) for path in HYPERPARAMS_DIR.glob(f"{LEVEL_PREFIX}*.yml"))
        raise ValueError(f"level={level!r} has no shared preset ({path.name} is missing): expected one of {known}")
    own = read_preset(path)
    return Preset(
        f"{SHARED}-{level}",
        {**shared.hyperparameters, **own.hyperparameters},
        {**shared.run, **own.run},
        {**own.study, "hyperparameters": f"{SHARED}.yml's, changed: {sorted(own.hyperparameters) or 'none'}"},
    )


def own_presets(arm: str) -> Mapping[str, str]:
    """The preset files a plug-in arm brings by name (none for this package's arms, whose presets are here)."""
    from .arms import ARMS

    if not arm or arm not in ARMS or ARMS.is_builtin(arm):
        return {}
    return ARMS[arm].presets


def hyperparameters_of(arm: str) -> type:
    """The hyperparameters' dataclass of the arm called ``arm``: DQN's for this package's arms (read without
    importing them), a plug-in's own."""
    from .arms import ARMS

    if not arm or arm not in ARMS or ARMS.is_builtin(arm):
        return Hyperparameters
    return ARMS[arm].hyperparameters


def load_preset(spec: str, arm: str) -> Preset:
    """The preset ``spec`` (a built-in name or a YAML file's path) for ``arm``; ``ValueError`` naming what is wrong.

    A plug-in arm's own preset of that name (``Arm.presets``) comes first."""
    own = own_presets(arm)
    if spec in own:
        return dataclasses.replace(read_preset(pathlib.Path(own[spec]), hyperparameters_of(arm)), name=spec)
    if spec in BUILTIN:
        hyperparameters, run = BUILTIN[spec]
        return Preset(spec, dict(hyperparameters), dict(run))
    if spec == SHARED:
        return dataclasses.replace(read_preset(HYPERPARAMS_DIR / f"{SHARED}.yml"), name=SHARED)
    if spec == "tuned":
        path = tuned_path(arm)
        if not path.exists():
            raise ValueError(
                f"preset='tuned': arm {arm!r} has no tuned preset ({path} is missing; tuned: "
                f"{', '.join(tuned_arms()) or 'none'}): expected --preset quick, full or a file, "
                f"or tune it first (doors-gym tune --arm {arm} --preset-out {path})"
            )
        return dataclasses.replace(read_preset(path), name="tuned")
    check_preset(spec)
    if not pathlib.Path(spec).is_file():
        raise ValueError(f"preset={spec!r} is not one of the {arm} arm's: expected one of {[*NAMES, *own]} or a file")
    return read_preset(pathlib.Path(spec), hyperparameters_of(arm))


def read_preset(path: pathlib.Path, hyperparameters: type = Hyperparameters) -> Preset:
    """A preset file whose hyperparameters are fields of ``hyperparameters`` (an arm's dataclass; DQN's by
    default); ``ValueError`` naming the file and the bad section, key or value."""
    import yaml

    try:
        values = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as error:
        raise ValueError(f"preset file {str(path)!r} cannot be read: {error}") from None
    if not isinstance(values, dict):
        raise ValueError(f"preset file {str(path)!r} is not a mapping: expected sections {list(SECTIONS)}")
    unknown = sorted(set(values) - set(SECTIONS))
    if unknown:
        raise ValueError(f"preset file {str(path)!r}: sections {unknown} are unknown: expected {list(SECTIONS)}")
    sections = {name: values.get(name) or {} for name in SECTIONS}
    for name, section in sections.items():
        if not isinstance(section, dict):
            raise ValueError(f"preset file {str(path)!r}: section {name!r} is not a mapping")
    allowed = {"hyperparameters": field_names(hyperparameters), "run": RUN_FIELDS}
    for name, keys in allowed.items():
        unknown = sorted(set(sections[name]) - set(keys))
        if unknown:
            raise ValueError(
                f"preset file {str(path)!r}: {name} keys {unknown} are unknown: expected keys among {sorted(keys)}"
            )
    values = {
        key: tuple(value) if isinstance(value, list) else value for key, value in sections["hyperparameters"].items()
    }
    preset = Preset(str(path), values, dict(sections["run"]), dict(sections["study"]))
    try:
        preset.config(hyperparameters=hyperparameters)  # every value checked now, with the field's own message
        seeds_named(preset.study)  # the seeds it names checked now too
    except (TypeError, ValueError) as error:
        raise ValueError(f"preset file {str(path)!r}: {error}") from None
    return preset


def write_preset(
    path: str | pathlib.Path,
    hyperparameters: Any,
    run: RunSettings,
    study: dict[str, Any],
    written_by: str = "doors-gym tune --preset-out",
) -> pathlib.Path:
    """Writes every hyperparameter and the budget of ``run`` as a preset file, ``study`` saying where they came from."""
    import yaml

    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    values = {
        "study": {**study, "written": datetime.date.today().isoformat()},
        "hyperparameters": {
            key: list(value) if isinstance(value, tuple) else value
            for key, value in dataclasses.asdict(hyperparameters).items()
        },
        "run": {key: getattr(run, key) for key in RUN_FIELDS},
    }
    header = (
        f"# A doors-gym preset (doors-gym compare --preset {path}); written by {written_by}.\n"
        "# hyperparameters: every hyperparameter of the arm; run: the budget and when a run ends; study: the origin.\n"
    )
    path.write_text(header + yaml.safe_dump(values, sort_keys=False))
    return path
