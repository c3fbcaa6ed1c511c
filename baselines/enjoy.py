"""Load a trained DQN model and watch its greedy episodes in a window or as an .mp4/.gif.

``python -m baselines.enjoy MODEL --episodes 3 --out greedy.mp4`` or ``doors-gym enjoy MODEL``.
A ``.pt`` file is a torch model (``dqn_torch.save_model``); anything else is a
Flax msgpack file (``dqn_flax.save_model`` / ``dqn_flax_scan.save_model``).
"""

from __future__ import annotations

import argparse
import pathlib
from collections.abc import Callable, Sequence

import gymnasium as gym
import numpy as np

from doors_gym import rendering

from .common import DQNConfig


def load_policy(path: str | pathlib.Path) -> tuple[Callable[[np.ndarray], int], DQNConfig]:
    """``(policy(obs) -> greedy action, config)`` from a saved model file."""
    path = pathlib.Path(path)
    if not path.is_file():
        raise ValueError(f"model file {str(path)!r} does not exist")
    if path.suffix == ".pt":
        import torch

        from .dqn_torch import load_model

        network, config = load_model(str(path))

        @torch.no_grad()
        def policy(obs: np.ndarray) -> int:
            return int(network(torch.as_tensor(np.asarray(obs)[None])).argmax(dim=1)[0])

        return policy, config
    import jax

    from .dqn_flax import load_model as load_flax_model

    network, params, config = load_flax_model(str(path))
    apply = jax.jit(lambda obs: network.apply(params, obs[None]).argmax(axis=1)[0])
    return (lambda obs: int(apply(np.asarray(obs)))), config


def enjoy(
    path: str | pathlib.Path, episodes: int = 1, out: str | pathlib.Path | None = None, seed: int = 0, fps: int = 8
) -> dict[str, float]:
    """Plays ``episodes`` greedy episodes; writes a video to ``out`` or shows a window when ``out`` is None.

    Returns the success rate and mean return of the episodes played.
    """
    if out is not None and pathlib.Path(out).suffix.lower() not in rendering.VIDEO_SUFFIXES:
        raise ValueError(f"out={str(out)!r} has suffix {pathlib.Path(out).suffix!r}: expected .mp4 or .gif")
    policy, config = load_policy(path)
    env = gym.make(
        "Doors-v0",
        grid_size=tuple(config.grid_size),
        n_doors=config.n_doors,
        max_episode_steps=config.max_episode_steps,
        render_mode="human" if out is None else "rgb_array",
    )
    frames, returns, successes = [], [], 0
    for episode in range(episodes):
        obs, _ = env.reset(seed=seed + episode)
        if out is not None:
            frames.append(env.render())
        total, terminated, truncated = 0.0, False, False
        while not (terminated or truncated):
            obs, reward, terminated, truncated, _ = env.step(policy(obs))
            total += reward
            if out is not None:
                frames.append(env.render())
        returns.append(total)
        successes += bool(terminated)
    env.close()
    if out is not None:
        rendering.write_video(frames, out, fps=fps)
    return {"success_rate": successes / episodes, "mean_return": float(np.mean(returns)), "frames": len(frames)}


def describe(figures: dict[str, float], episodes: int, out: str | pathlib.Path | None) -> str:
    """What ``enjoy`` printed: success, mean return and the file written."""
    text = (
        f"{episodes} greedy episode(s): success {figures['success_rate']:.2f}, mean return {figures['mean_return']:.3f}"
    )
    return text + (f"\nwrote {figures['frames']} frames to {out}" if out else "")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m baselines.enjoy", description=__doc__.splitlines()[0])
    parser.add_argument("model", help="a .pt (torch) or .msgpack (Flax) file written by --save")
    parser.add_argument("--episodes", type=int, default=3)
    parser.add_argument("--out", default=None, help="write an .mp4 or .gif instead of opening a window")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.episodes < 1:
        parser.error(f"--episodes {args.episodes} is out of range: expected >= 1")
    try:
        figures = enjoy(args.model, args.episodes, args.out, args.seed)
    except ValueError as error:
        parser.error(str(error))
    print(describe(figures, args.episodes, args.out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
