"""doors-gym: the Doors gridworld for Gymnasium, in NumPy (``Doors-v0``) and JAX (``DoorsJax-v0``).

Importing this package registers both ids with Gymnasium. It imports only
Gymnasium and NumPy: JAX, torch, pygame and OpenCV load when an env or tool
that needs them is created.

>>> import gymnasium as gym
>>> import doors_gym
>>> env = gym.make("Doors-v0")
>>> obs, info = env.reset(seed=0)
>>> obs.shape, obs.dtype.name
((225,), 'int16')
"""

from gymnasium.envs.registration import register

from doors_gym.core import DoorsParams, DoorsState
from doors_gym.levels import LEVELS

__version__ = "0.1.0"
__all__ = ["DoorsParams", "DoorsState", "ENV_IDS", "FLAT_ENV_IDS", "JAX_ENV_IDS", "NUMPY_ENV_IDS", "__version__"]

_NUMPY_ENTRY_POINTS = {
    "entry_point": "doors_gym.envs.doors:DoorsEnv",
    "vector_entry_point": "doors_gym.envs.vector:DoorsVectorEnv",
}
_JAX_ENTRY_POINTS = {
    "entry_point": "doors_gym.jax.shells:DoorsJaxEnv",
    "vector_entry_point": "doors_gym.jax.shells:DoorsJaxVectorEnv",
}


def _register_levels() -> dict[str, tuple[str, ...]]:
    """Registers every level of :data:`doors_gym.levels.LEVELS`, for both backends and with flat observations.

    Each id carries its level's layout keywords and its time limit (the ``TimeLimit`` ``gym.make`` adds; a
    layout changed through ``gym.make``'s keywords keeps it unless ``max_episode_steps`` is given too).
    """
    ids: dict[str, list[str]] = {"numpy": [], "jax": [], "flat": []}
    for level in LEVELS:
        layout = {} if level.name == "study" else level.keywords
        flat = {**layout, "obs_mode": "flat"}
        for env_id, entry_points, kwargs, kind in (
            (level.env_id, _NUMPY_ENTRY_POINTS, layout, "numpy"),
            (level.jax_env_id, _JAX_ENTRY_POINTS, layout, "jax"),
            (level.flat_env_id, _NUMPY_ENTRY_POINTS, flat, "flat"),
            (level.jax_flat_env_id, _JAX_ENTRY_POINTS, flat, "flat"),
        ):
            register(id=env_id, **entry_points, max_episode_steps=level.max_episode_steps, kwargs=kwargs)
            ids[kind].append(env_id)
    return {kind: tuple(names) for kind, names in ids.items()}


_IDS = _register_levels()
NUMPY_ENV_IDS = _IDS["numpy"]
"""``Doors-v0``, then ``Doors-<level>-v0`` for every other level (grid observations)."""
JAX_ENV_IDS = _IDS["jax"]
"""``DoorsJax-v0``, then ``DoorsJax-<level>-v0``."""
FLAT_ENV_IDS = _IDS["flat"]
"""The ``obs_mode="flat"`` ids (float32 ``Box`` observations): ``Doors-Flat-v0``, ``DoorsJax-Flat-v0``,
``Doors-<level>-Flat-v0``, ``DoorsJax-<level>-Flat-v0``."""
ENV_IDS = ("Doors-v0", "DoorsJax-v0")
"""The study's two ids (the first level's)."""
