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

from doors_gym.core import DEFAULT_MAX_EPISODE_STEPS, DoorsParams, DoorsState

__version__ = "0.1.0"
__all__ = ["DoorsParams", "DoorsState", "ENV_IDS", "__version__"]

ENV_IDS = ("Doors-v0", "DoorsJax-v0")

register(
    id="Doors-v0",
    entry_point="doors_gym.envs.doors:DoorsEnv",
    vector_entry_point="doors_gym.envs.vector:DoorsVectorEnv",
    max_episode_steps=DEFAULT_MAX_EPISODE_STEPS,
)
register(
    id="DoorsJax-v0",
    entry_point="doors_gym.jax.shells:DoorsJaxEnv",
    vector_entry_point="doors_gym.jax.shells:DoorsJaxVectorEnv",
    max_episode_steps=DEFAULT_MAX_EPISODE_STEPS,
)
