"""Records ``Doors-v0``'s and ``DoorsJax-v0``'s transitions on fixed seeds and action streams.

``python tests/envs/golden.py`` wrote ``golden_v0.npz`` from the code of main c26fc2f, before the Doors
suite (``n_walls``, ``doors``) changed the rules module; ``test_golden.py`` records again with the code
under test and requires every array to be identical, so the study's environment stays bit for bit what
it was (SPEC.md, "Levels"). The recordings cover the single env (with resets after each episode), the
native vector env (next-step autoresets), and the JAX single env, vector env and ``rollout``.
"""

from __future__ import annotations

import pathlib
import sys

import gymnasium as gym
import numpy as np

import doors_gym  # noqa: F401  (registers the ids)

GOLDEN_PATH = pathlib.Path(__file__).with_name("golden_v0.npz")
SINGLE_STEPS = 400
VECTOR_ENVS = 8
VECTOR_STEPS = 150
ACTION_SEED = 20251125


def _actions(shape: tuple[int, ...]) -> np.ndarray:
    """A fixed stream of uniform actions; -1 (half of them) asks for the guide's action instead."""
    rng = np.random.default_rng(ACTION_SEED)
    return np.where(rng.random(shape) < 1 / 2, -1, rng.integers(0, 5, size=shape))


def _guide(obs: np.ndarray, height: int = 15, width: int = 15) -> int:
    """A plain guide to the goal through the nearest door (so that episodes also terminate), from the grid."""
    grid = np.asarray(obs).reshape(height, width)
    (agent_row,), (agent_col,) = np.nonzero(grid == 1)
    goal_cols = np.nonzero((grid == 3).any(axis=0))[0]
    wall_row = height // 2
    if agent_row > wall_row:
        doors = np.nonzero(grid[wall_row] != 2)[0]
        target = doors[np.argmin(np.abs(doors - agent_col))]
    else:
        target = goal_cols[0] if goal_cols.size else agent_col
    if agent_col != target and agent_row != wall_row:
        return 1 if target > agent_col else 3
    return 4


def _choose(actions: np.ndarray, obs: np.ndarray) -> np.ndarray:
    """The stream's actions with each -1 replaced by the guide's action for its env."""
    guided = np.array([_guide(o) for o in np.asarray(obs).reshape(-1, 225)]).reshape(np.shape(actions))
    return np.where(actions < 0, guided, actions)


def record_single(env_id: str) -> dict[str, np.ndarray]:
    """A stream of single-env steps; reset with seeds 0, 1, 2, then without a seed, after each episode."""
    env = gym.make(env_id)
    obs, info = env.reset(seed=0)
    records: dict[str, list] = {"obs": [obs], "reward": [], "terminated": [], "truncated": [], "distance": []}
    seeds = iter([1, 2])
    for stream_action in _actions((SINGLE_STEPS,)):
        action = int(_choose(stream_action, obs))
        obs, reward, terminated, truncated, info = env.step(action)
        for name, value in zip(records, (obs, reward, terminated, truncated, info["distance"])):
            records[name].append(value)
        if terminated or truncated:
            obs, info = env.reset(seed=next(seeds, None))
            records["obs"].append(obs)
    env.close()
    return {name: np.asarray(values) for name, values in records.items()}


def record_vector(env_id: str) -> dict[str, np.ndarray]:
    """``VECTOR_ENVS`` envs from ``reset(seed=7)``, stepped with next-step autoresets."""
    envs = gym.make_vec(env_id, num_envs=VECTOR_ENVS)
    obs, info = envs.reset(seed=7)
    records: dict[str, list] = {"obs": [obs], "reward": [], "terminated": [], "truncated": [], "distance": []}
    for stream_actions in _actions((VECTOR_STEPS, VECTOR_ENVS)):
        obs, reward, terminated, truncated, info = envs.step(_choose(stream_actions, obs))
        for name, value in zip(records, (obs, reward, terminated, truncated, info["distance"])):
            records[name].append(np.asarray(value))
    envs.close()
    return {name: np.asarray(values) for name, values in records.items()}


def record_rollout() -> dict[str, np.ndarray]:
    """``doors_gym.jax.rollout`` of a uniform policy: 4 envs, 120 steps, key 3."""
    import jax

    from doors_gym.jax import functional as F

    def policy(key, obs):
        return jax.random.randint(key, (), 0, 5)

    state, trajectory = F.rollout(jax.random.key(3), policy, 4, 120)
    recorded = {name: np.asarray(value) for name, value in trajectory.items()}
    final = {f"final_{name}": np.asarray(value) for name, value in state._asdict().items() if value is not None}
    recorded.update(final)
    return recorded


def record(with_jax: bool = True) -> dict[str, np.ndarray]:
    """Every recording, as flat ``"<part>/<field>"`` arrays (the layout of the npz file)."""
    parts = {"single": record_single("Doors-v0"), "vector": record_vector("Doors-v0")}
    if with_jax:
        parts.update(
            {
                "jax_single": record_single("DoorsJax-v0"),
                "jax_vector": record_vector("DoorsJax-v0"),
                "jax_rollout": record_rollout(),
            }
        )
    return {f"{part}/{name}": value for part, fields in parts.items() for name, value in fields.items()}


def main() -> None:
    """Writes the recordings to :data:`GOLDEN_PATH` (or the path given)."""
    path = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else GOLDEN_PATH
    np.savez_compressed(path, **record())
    print(f"wrote {path} ({path.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
