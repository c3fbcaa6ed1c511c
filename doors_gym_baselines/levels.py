"""The level a run trains at, resolved once: :class:`TrainingLevel`.

The env package's :class:`~doors_gym.levels.Level` is a row of SPEC's levels table. A training at a level needs
more: the run settings of its layout and time limit, the ids each backend steps there, the rolling reward of
"Solved" there, and the level's presets. The command line builds one :class:`TrainingLevel` from its flags
(:meth:`TrainingLevel.from_flags`), the ladder one per rung and a comparison one from its options
(:meth:`TrainingLevel.named`); ``train``, ``tune``, ``compare`` and ``ladder`` read it from there.

>>> level = TrainingLevel.named("31x31")
>>> level.env_id, level.jax_env_id, level.max_episode_steps
('Doors-31x31-v0', 'DoorsJax-31x31-v0', 248)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from doors_gym.core import DoorsParams
from doors_gym.levels import STUDY, get_level

from .config import ENV_IDS, LAYOUT_NAMES, RunSettings, level_env_id
from .harness.metrics import solved_reward
from .presets import Preset, level_preset, preset_at

NUMPY_BACKEND, JAX_BACKEND = ENV_IDS


@dataclasses.dataclass(frozen=True)
class TrainingLevel:
    """A level as a run trains at it: its name and the run settings of its layout and time limit.

    Attributes:
        name: a registered level's name (:data:`doors_gym.levels.LEVEL_NAMES`); the study's level also stands for
            any layout of the layout flags.
        layout: run settings whose layout fields (:data:`~doors_gym_baselines.config.LAYOUT_NAMES`) are the
            level's; the others keep their defaults and are not read.
    """

    name: str
    layout: RunSettings = dataclasses.field(default_factory=RunSettings)

    def __post_init__(self) -> None:
        get_level(self.name)  # ValueError naming an unknown level

    @classmethod
    def named(cls, name: str, layout: RunSettings | None = None) -> TrainingLevel:
        """The registered level ``name``: its own layout and time limit, or at the study's level ``layout``'s
        (default: the defaults, ``Doors-v0``'s). ``ValueError`` naming an unknown level."""
        if name == STUDY:
            return cls(name, layout or RunSettings())
        return cls.from_flags(name, {})

    @classmethod
    def from_flags(cls, name: str | None, flags: Mapping[str, Any]) -> TrainingLevel:
        """The level of a command's flags: ``name`` (with no layout flag and no time limit beside it), or where
        ``name`` is None the study's level at the layout of ``flags`` (each flag by its run setting's name, None
        where not given; the time limit defaults to the layout's, ``(n_walls + 1) * (H + W)``).

        Raises:
            ValueError: naming an unknown level, a layout flag or the time limit given beside a level, or a bad
                layout.
        """
        level = get_level(STUDY if name is None else name)
        if name is not None:
            level.check_alone(flags)
            if flags.get("max_episode_steps") is not None:
                raise ValueError(
                    f"level={name!r} sets the time limit: max_episode_steps={flags['max_episode_steps']!r} cannot be "
                    "given beside it (give a level, or the layout flags)"
                )
        if level.name != STUDY:
            return cls(level.name, RunSettings(**level.keywords, max_episode_steps=level.max_episode_steps))
        # The study's level is the flags' layout, any layout, as they give it (an untyped door count stays None).
        given = {key: tuple(value) if isinstance(value, list) else value for key, value in flags.items()}
        layout = {key: value for key, value in given.items() if key in LAYOUT_NAMES and value is not None}
        if "max_episode_steps" not in layout:
            shape = {key: value for key, value in layout.items() if key != "n_walls"}
            layout["max_episode_steps"] = DoorsParams(**shape, n_walls=given.get("n_walls") or 1).max_episode_steps
        return cls(STUDY, RunSettings(**layout))

    @property
    def settings(self) -> dict[str, Any]:
        """The run settings of its layout and time limit, by name (for ``RunSettings`` or ``Config.replace``)."""
        return {name: getattr(self.layout, name) for name in LAYOUT_NAMES}

    def at(self, run: RunSettings) -> RunSettings:
        """``run`` at this level: its layout and time limit in place of ``run``'s, the rest of ``run`` kept."""
        return dataclasses.replace(run, **self.settings)

    @property
    def params(self) -> DoorsParams:
        """The env's layout and time limit."""
        return self.layout.params

    @property
    def max_episode_steps(self) -> int:
        """The time limit of an episode."""
        return self.layout.max_episode_steps

    def env_id_of(self, backend_id: str) -> str:
        """The id the backend ``backend_id`` (``Doors-v0``, ``DoorsJax-v0``) steps here: its id of the registered
        level whose layout this is (``Doors-31x31-v0``), or ``backend_id`` on a layout that is no registered level."""
        return level_env_id(backend_id, self.params)

    @property
    def env_id(self) -> str:
        """The NumPy env's id here."""
        return self.env_id_of(NUMPY_BACKEND)

    @property
    def jax_env_id(self) -> str:
        """The JAX env's id here."""
        return self.env_id_of(JAX_BACKEND)

    @property
    def solved_reward(self) -> float:
        """SPEC's rolling-reward bar of "Solved" here (the oracle's, computed once per layout and cached)."""
        return solved_reward(self.params)

    @property
    def shared_preset(self) -> Preset:
        """The level's shared preset: every arm's hyperparameters and budget here, like for like."""
        return level_preset(self.name)

    def preset(self, spec: str, arm: str) -> Preset:
        """The preset ``spec`` (a name or a file) for ``arm`` here: at a level other than the study's, ``tuned``
        is the arm's tuned preset there where one was written, else, as ``shared`` always is, the shared preset."""
        return preset_at(spec, arm, self.name)
