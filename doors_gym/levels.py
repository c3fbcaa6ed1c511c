"""The registered levels of the Doors suite (SPEC.md, "Levels"): one table, looked up everywhere else.

Registration (:mod:`doors_gym`), the command line's ``--level`` and the benchmarks read :data:`LEVELS`;
:func:`get_level` finds one by name.

>>> from doors_gym.levels import get_level
>>> level = get_level("31x31")
>>> level.env_id, level.jax_env_id, level.max_episode_steps
('Doors-31x31-v0', 'DoorsJax-31x31-v0', 248)
>>> level.params().wall_rows
(7, 15, 23)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from doors_gym.core import DEFAULT_GRID_SIZE, DoorsParams, default_time_limit

STUDY = "study"
"""The first level, the study's environment: its ids keep their names (``Doors-v0``, ``DoorsJax-v0``)."""


@dataclasses.dataclass(frozen=True)
class Level:
    """One row of SPEC.md's levels table.

    Attributes:
        name: the level's name (``"study"``, ``"Random"``, ``"3Walls"``, ``"31x31"``, ``"63x63"``).
        grid_size: ``(H, W)``.
        n_walls: number of walls.
        n_doors: doors per wall.
        doors: ``"fixed"`` or ``"random"`` (:data:`doors_gym.core.DOOR_MODES`).
    """

    name: str
    grid_size: tuple[int, int]
    n_walls: int
    n_doors: int
    doors: str

    @property
    def max_episode_steps(self) -> int:
        """The level's time limit, the layout's default ``(n_walls + 1) * (H + W)``."""
        return default_time_limit(self.grid_size, self.n_walls)

    @property
    def keywords(self) -> dict[str, Any]:
        """The layout keywords of ``gym.make`` / :class:`~doors_gym.core.DoorsParams` for this level."""
        return {"grid_size": self.grid_size, "n_walls": self.n_walls, "n_doors": self.n_doors, "doors": self.doors}

    def params(self, **overrides: Any) -> DoorsParams:
        """The level's :class:`~doors_gym.core.DoorsParams`, with ``overrides`` (e.g. ``obs_mode``) on top."""
        return DoorsParams(**{**self.keywords, "max_episode_steps": self.max_episode_steps, **overrides})

    def check_alone(self, keywords: Mapping[str, Any]) -> None:
        """``ValueError`` naming every layout keyword of ``keywords`` given beside this level (a ``grid_size``
        other than the default; ``n_walls``, ``doors``, ``n_doors`` or ``door_cols`` other than None): the level
        sets the layout."""
        names = ("n_walls", "doors", "n_doors", "door_cols")
        given = {name: keywords[name] for name in names if keywords.get(name) is not None}
        grid_size = tuple(keywords.get("grid_size", DEFAULT_GRID_SIZE))
        if grid_size != DEFAULT_GRID_SIZE:
            given = {"grid_size": grid_size, **given}
        if given:
            shown = ", ".join(f"{name}={value!r}" for name, value in given.items())
            raise ValueError(
                f"level={self.name!r} sets the layout: {shown} cannot be given beside it (give a level, or the layout "
                "flags)"
            )

    def _id(self, prefix: str, suffix: str = "") -> str:
        middle = "" if self.name == STUDY else f"-{self.name}"
        return f"{prefix}{middle}{suffix}-v0"

    @property
    def env_id(self) -> str:
        """The NumPy env's id: ``Doors-<level>-v0`` (``Doors-v0`` for the study level)."""
        return self._id("Doors")

    @property
    def jax_env_id(self) -> str:
        """The JAX env's id: ``DoorsJax-<level>-v0`` (``DoorsJax-v0`` for the study level)."""
        return self._id("DoorsJax")

    @property
    def flat_env_id(self) -> str:
        """The NumPy env's id with ``obs_mode="flat"``: ``Doors-<level>-Flat-v0`` (``Doors-Flat-v0``)."""
        return self._id("Doors", "-Flat")

    @property
    def jax_flat_env_id(self) -> str:
        """The JAX env's id with ``obs_mode="flat"``: ``DoorsJax-<level>-Flat-v0`` (``DoorsJax-Flat-v0``)."""
        return self._id("DoorsJax", "-Flat")


LEVELS: tuple[Level, ...] = (
    Level(STUDY, (15, 15), 1, 3, "fixed"),
    Level("Random", (15, 15), 1, 3, "random"),
    Level("3Walls", (15, 15), 3, 1, "random"),
    Level("31x31", (31, 31), 3, 2, "random"),
    Level("63x63", (63, 63), 3, 3, "random"),
)
"""SPEC.md's levels, in its order."""
LEVEL_NAMES: tuple[str, ...] = tuple(level.name for level in LEVELS)


def get_level(name: str) -> Level:
    """The level called ``name`` (exact spelling, e.g. ``"31x31"``).

    Raises:
        ValueError: naming the unknown level and the known ones.
    """
    for level in LEVELS:
        if level.name == name:
            return level
    raise ValueError(f"level={name!r} is unknown: expected one of {list(LEVEL_NAMES)}")
