"""Draws the pictures of docs/rules.md and docs/levels.md with the package's own renderer.

Run from the repository root after changing the rules or the renderer, and commit the PNGs:

    python docs/make_images.py

Every picture is ``env.render()`` in ``rgb_array`` mode (several frames side by side where a
picture shows a step); OpenCV, which the ``render`` extra installs, writes the files.
"""

from __future__ import annotations

import pathlib
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np

import doors_gym  # noqa: F401  (registers the ids)
from doors_gym import core
from doors_gym.levels import LEVELS
from doors_gym.oracle import OraclePolicy

IMAGES = pathlib.Path(__file__).resolve().parent / "images"
CELL_PIXELS = 20
GAP_PIXELS = 6
GAP_COLOR = (255, 255, 255)
TRAIL_COLOR = (0, 45, 128)
START_COLOR = (90, 150, 255)
LEVEL_FRAME_PIXELS = 320
"""About this many pixels across every level's frame: the cell size shrinks as the grid grows."""


def make_env(**kwargs: Any) -> gym.Env:
    """A ``Doors-v0`` env that renders ``rgb_array`` frames at the docs' cell size."""
    return gym.make("Doors-v0", render_mode="rgb_array", cell_pixels=CELL_PIXELS, **kwargs)


def side_by_side(frames: Sequence[np.ndarray]) -> np.ndarray:
    """``(H, W, 3)`` uint8 frames of one height joined left to right with a white gap between them."""
    gap = np.empty((frames[0].shape[0], GAP_PIXELS, 3), dtype=np.uint8)
    gap[:] = GAP_COLOR
    parts: list[np.ndarray] = []
    for frame in frames:
        parts.extend([gap, frame] if parts else [frame])
    return np.concatenate(parts, axis=1)


def start_frame(env: gym.Env, agent_pos: tuple[int, int], goal_pos: tuple[int, int]) -> np.ndarray:
    """The first frame of an episode from a chosen start."""
    env.reset(options={"agent_pos": agent_pos, "goal_pos": goal_pos})
    return env.render()


def step_pair(env: gym.Env, agent_pos: tuple[int, int], goal_pos: tuple[int, int], action: int) -> np.ndarray:
    """The frame before and the frame after one action from a chosen start, side by side."""
    before = start_frame(env, agent_pos, goal_pos)
    env.step(action)
    return side_by_side([before, env.render()])


def oracle_trail(env: gym.Env, agent_pos: tuple[int, int], goal_pos: tuple[int, int]) -> np.ndarray:
    """The last frame of an oracle episode with the cells the agent passed tinted (the start lighter)."""
    obs, _ = env.reset(options={"agent_pos": agent_pos, "goal_pos": goal_pos})
    policy = OraclePolicy(env.unwrapped.params)
    width = env.unwrapped.params.width
    visited = []
    terminated = truncated = False
    while not (terminated or truncated):
        visited.append(divmod(int(np.flatnonzero(obs == core.AGENT)[0]), width))
        obs, _, terminated, truncated, _ = env.step(policy(obs))
    frame = env.render().copy()
    for index, (row, col) in enumerate(visited):
        color = START_COLOR if index == 0 else TRAIL_COLOR
        frame[row * CELL_PIXELS : (row + 1) * CELL_PIXELS, col * CELL_PIXELS : (col + 1) * CELL_PIXELS] = color
    return frame


def pictures() -> dict[str, np.ndarray]:
    """Every picture of the rules page by file name."""
    env = make_env()
    images = {
        "start.png": start_frame(env, (14, 3), (0, 11)),
        "wall_bump.png": step_pair(env, (8, 3), (0, 11), core.UP),
        "door.png": step_pair(env, (8, 5), (0, 11), core.UP),
        "goal.png": step_pair(env, (1, 11), (0, 11), core.UP),
        "oracle_trail.png": oracle_trail(env, (14, 3), (0, 11)),
    }
    env.close()
    wide = make_env(grid_size=(9, 21), n_doors=4)
    wide.reset(seed=3)
    images["layout_9x21_4_doors.png"] = wide.render()
    wide.close()
    explicit = make_env(grid_size=(11, 11), door_cols=(1, 9))
    explicit.reset(seed=3)
    images["layout_door_cols.png"] = explicit.render()
    explicit.close()
    return images


def level_frames() -> dict[str, np.ndarray]:
    """The first frame of each level's episode from seed 0 (its own doors where they are random)."""
    images = {}
    for level in LEVELS:
        cell_pixels = max(2, LEVEL_FRAME_PIXELS // level.grid_size[1])
        env = gym.make(level.env_id, render_mode="rgb_array", cell_pixels=cell_pixels)
        env.reset(seed=0)
        images[f"level_{level.name}.png"] = env.render()
        env.close()
    return images


def main() -> None:
    """Writes every picture under docs/images/."""
    import cv2

    IMAGES.mkdir(exist_ok=True)
    for name, image in {**pictures(), **level_frames()}.items():
        path = IMAGES / name
        if not cv2.imwrite(str(path), cv2.cvtColor(image, cv2.COLOR_RGB2BGR)):
            raise OSError(f"OpenCV could not write {path}")
        print(f"wrote {path.relative_to(IMAGES.parent.parent)} {image.shape[1]}x{image.shape[0]}")


if __name__ == "__main__":
    main()
