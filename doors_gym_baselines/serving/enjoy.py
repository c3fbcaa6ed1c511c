"""Load a trained model of any arm and watch its greedy episodes in a window or as an .mp4/.gif.

``doors-gym enjoy MODEL --episodes 3 --out greedy.mp4``. ``MODEL`` is a file
(its format recognised by its content, never by its name: see
:func:`doors_gym_baselines.serving.load_model`) or an MLflow model: ``runs:/<run id>/model`` or
``models:/doors-<arm>@champion``.
"""

from __future__ import annotations

import pathlib
import tempfile
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np

import doors_gym  # noqa: F401  (registers the ids)
from doors_gym import rendering
from doors_gym.pixels import default_cell_pixels

from .. import tracking
from ..arm import ArmProtocol
from ..config import Config, level_env_id
from . import download_model_file, load_model

URI_SCHEMES = ("runs:/", "models:/")
LARGEST_CELL_PIXELS = 24
"""Pixels per cell of a watched episode, fewer where the grid would not fit (63 x 63: 10)."""


def load_policy(
    path: str | pathlib.Path, tracking_uri: str | None = None, arm: ArmProtocol | None = None
) -> tuple[Callable[[np.ndarray], int], Config]:
    """``(policy(obs) -> greedy action, config)`` from a model file of any arm (of ``arm``, if given), or an
    MLflow model URI.

    ``runs:/<run id>/model`` and ``models:/doors-<arm>@champion`` are read from the
    tracking store at ``tracking_uri`` (default: ``$MLFLOW_TRACKING_URI``, else ``sqlite:///mlflow.db``).
    """
    text = str(path)
    if text.startswith(URI_SCHEMES):
        with tracking.quiet_mlflow(), tempfile.TemporaryDirectory() as folder:
            import mlflow

            mlflow.set_tracking_uri(tracking.tracking_uri(tracking_uri))
            arm, model, config = load_model(download_model_file(text, folder), arm)
    else:
        arm, model, config = load_model(path, arm)
    return (lambda obs: int(arm.act(model, np.asarray(obs)[None])[0])), config


def enjoy(
    path: str | pathlib.Path,
    episodes: int = 1,
    out: str | pathlib.Path | None = None,
    seed: int = 0,
    fps: int = 8,
    cell_pixels: int | None = None,
    tracking_uri: str | None = None,
    arm: ArmProtocol | None = None,
) -> dict[str, Any]:
    """Plays ``episodes`` greedy episodes at the model's own layout (its level's, doors drawn per episode where
    they are random); writes a video to ``out`` or shows a window when ``out`` is None.

    ``cell_pixels`` defaults to one that fits the grid in a window (:func:`doors_gym.pixels.default_cell_pixels`).
    Returns the success rate and mean return of the episodes played, the frames written, the env's id and the
    pixels per cell.
    """
    if out is not None and pathlib.Path(out).suffix.lower() not in rendering.VIDEO_SUFFIXES:
        raise ValueError(f"out={str(out)!r} has suffix {pathlib.Path(out).suffix!r}: expected .mp4 or .gif")
    policy, config = load_policy(path, tracking_uri, arm)
    run = config.run
    if cell_pixels is None:
        cell_pixels = default_cell_pixels(tuple(run.grid_size), LARGEST_CELL_PIXELS)
    env = gym.make(
        level_env_id("Doors-v0", run.params),
        **run.env_keywords,
        render_mode="human" if out is None else "rgb_array",
        cell_pixels=cell_pixels,
    )
    env.unwrapped.metadata = {**env.unwrapped.metadata, "render_fps": fps}
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
    return {
        "success_rate": successes / episodes,
        "mean_return": float(np.mean(returns)),
        "frames": len(frames),
        "env_id": env.spec.id,
        "cell_pixels": cell_pixels,
    }


def describe(figures: dict[str, Any], episodes: int, out: str | pathlib.Path | None) -> str:
    """What ``enjoy`` printed: success, mean return and the file written."""
    text = (
        f"{episodes} greedy episode(s): success {figures['success_rate']:.2f}, mean return {figures['mean_return']:.3f}"
    )
    return text + (f"\nwrote {figures['frames']} frames to {out}" if out else "")
