"""Which registered level a layout is, and the env id a backend steps there."""

from __future__ import annotations

from doors_gym.core import DoorsParams
from doors_gym.levels import LEVELS, Level


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
