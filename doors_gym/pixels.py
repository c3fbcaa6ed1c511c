"""Pictures of the grid as arrays: the colour of each cell code and the RGB image of a grid.

Pure functions over NumPy or ``jax.numpy``, with no window and no file: :mod:`doors_gym.rendering` shows
and saves what these draw. :mod:`doors_gym.core` sits above this module: ``DoorsParams`` checks its
``colors`` here, and the ``rgb`` observation is :func:`rgb_image` of the grid (under ``jit`` in JAX).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from doors_gym.codes import AGENT, EMPTY, GOAL, NUM_CELL_TYPES, WALL

RGB_DTYPE = np.uint8
"""Dtype of images, palettes and the ``rgb`` observation."""
EMPTY_COLOR, AGENT_COLOR, WALL_COLOR, GOAL_COLOR = (0, 0, 0), (0, 90, 255), (0, 170, 0), (230, 30, 30)
DEFAULT_COLORS = {EMPTY: EMPTY_COLOR, AGENT: AGENT_COLOR, WALL: WALL_COLOR, GOAL: GOAL_COLOR}
"""RGB colour of each cell code: empty black, agent blue, wall green, goal red."""
DEFAULT_CELL_PIXELS = 16
MAX_CELL_PIXELS = 256
DEFAULT_FRAME_PIXELS = 640
"""The longest side of a frame at the default cell size, once a grid is too large for 16 pixels a cell."""
AGENT_ON_GOAL = NUM_CELL_TYPES
"""Tile index of the agent standing on the goal (the grid shows only the agent there)."""


def default_cell_pixels(grid_size: tuple[int, int], largest: int = DEFAULT_CELL_PIXELS) -> int:
    """The default pixels per cell: ``largest`` (16), or fewer so the longest side fits :data:`DEFAULT_FRAME_PIXELS`.

    ``min(largest, 640 // max(H, W))``, at least 1: 16 up to 40 cells a side (a 15 x 15 frame is 240 x 240
    pixels, 31 x 31 is 496 x 496), then fewer, so a 63 x 63 frame is 630 x 630 pixels at 10 per cell, whole
    on a laptop's screen with every wall and door a visible 10-pixel square.
    """
    return max(1, min(largest, DEFAULT_FRAME_PIXELS // max(grid_size)))


def normalise_colors(colors: Any) -> tuple[tuple[int, int, int], ...]:
    """``{cell code: (r, g, b)}`` over the defaults, as a tuple of four RGB tuples (hashable).

    Raises:
        ValueError: for unknown cell codes or components outside ``0..255``.
    """
    if isinstance(colors, tuple) and len(colors) == NUM_CELL_TYPES and all(is_rgb(rgb) for rgb in colors):
        return tuple(tuple(int(v) for v in rgb) for rgb in colors)
    if colors is not None and not hasattr(colors, "items"):
        raise ValueError(f"colors={colors!r} is invalid: expected None or a dict {{cell code: (r, g, b)}}")
    palette = dict(DEFAULT_COLORS)
    for code, rgb in (colors or {}).items():
        if code not in DEFAULT_COLORS:
            raise ValueError(f"colors has cell code {code!r}: expected one of {sorted(DEFAULT_COLORS)}")
        if not is_rgb(rgb):
            raise ValueError(f"colors[{code}]={rgb!r} is invalid: expected (r, g, b) with each in 0..255")
        palette[code] = tuple(int(v) for v in rgb)
    return tuple(palette[code] for code in range(NUM_CELL_TYPES))


def is_rgb(value: Any) -> bool:
    """Whether ``value`` is three integers in ``0..255``."""
    values = np.asarray(value)
    return values.shape == (3,) and values.dtype.kind in "iu" and values.min() >= 0 and values.max() <= 255


def make_palette(colors: Mapping[int, Sequence[int]] | None = None) -> np.ndarray:
    """``(4, 3)`` uint8 palette from a ``{cell code: (r, g, b)}`` mapping over the defaults.

    Raises:
        ValueError: for unknown cell codes or components outside ``0..255``.
    """
    return np.array(normalise_colors(colors), dtype=RGB_DTYPE)


def grid_to_rgb(grid: np.ndarray, palette: np.ndarray, cell_pixels: int = DEFAULT_CELL_PIXELS) -> np.ndarray:
    """``(H, W)`` cell codes to an ``(H * p, W * p, 3)`` uint8 image, ``p = cell_pixels``, from a ``(4, 3)`` palette.

    The agent standing on the goal keeps a goal-coloured border (see :func:`rgb_image`).
    """
    colors = tuple(tuple(int(v) for v in rgb) for rgb in np.asarray(palette).tolist())
    return rgb_image(np.asarray(grid), colors, cell_pixels)


def rgb_image(cells: Any, colors: tuple[tuple[int, int, int], ...], pixels: int, xp: Any = np) -> Any:
    """``batch + (H, W)`` cell codes to ``batch + (H * p, W * p, 3)`` uint8 with ``p = pixels`` per cell.

    Each cell is a ``p x p`` tile of its colour. Where the agent stands on the
    goal (no goal code left in the grid), its tile keeps a goal-coloured border
    ``p // 4`` pixels wide, so the goal stays visible in an episode's last frame.
    """
    height, width = cells.shape[-2:]
    goal_hidden = ~xp.any(cells == GOAL, axis=(-2, -1), keepdims=True)
    codes = xp.where((cells == AGENT) & goal_hidden, AGENT_ON_GOAL, cells.astype(np.int32))
    tiles = xp.asarray(_tiles(normalise_colors(colors), pixels))
    image = tiles[codes]  # batch + (H, W, p, p, 3)
    image = xp.swapaxes(image, -4, -3)  # batch + (H, p, W, p, 3)
    return image.reshape(cells.shape[:-2] + (height * pixels, width * pixels, 3))


@functools.lru_cache(maxsize=32)
def _tiles(colors: tuple[tuple[int, int, int], ...], pixels: int) -> np.ndarray:
    """``(5, p, p, 3)`` uint8: a tile per cell code, then the agent on the goal (read-only, cached)."""
    palette = np.array(colors, dtype=RGB_DTYPE)
    tiles = np.repeat(np.repeat(palette[:, None, None, :], pixels, axis=1), pixels, axis=2)
    border = pixels // 4
    on_goal = np.broadcast_to(palette[GOAL], (pixels, pixels, 3)).copy()
    on_goal[border : pixels - border, border : pixels - border] = palette[AGENT]
    tiles = np.concatenate([tiles, on_goal[None]])
    tiles.setflags(write=False)
    return tiles
