"""The networks' input: the agent's cell and the goal's cell, found once per observation.

Every arm's network is an MLP whose first layer is linear over two one-hot planes of the grid, the
agent's and the goal's (the wall plane is the same in every observation of a layout, so it is left
out). A one-hot plane selects one row of that layer's weight, so the layer is the sum of two rows:
the network needs the two cells, not the grid. They are found once, where an observation is encoded
(after each env step of the host loop, and in a model's greedy policy, which takes grids) or read off
the env state (the fully jitted arm), and the replay buffer stores them; no forward pass searches the
225 cells of a grid.

Cells are an integer array ``(..., 2)``: the agent's cell and the goal's cell, row-major, the goal's
:data:`HIDDEN` when the agent stands on it (the grid then shows the agent there, not the goal).
NumPy only, so every framework's arm uses it.
"""

from __future__ import annotations

import numpy as np

from doors_gym.core import AGENT, GOAL

CELLS_DTYPE = np.int16
"""Cell indices: ``H * W <= 8191`` fits int16 (the replay buffer holds 4 bytes per observation)."""
HIDDEN = -1
"""The goal's cell when the agent stands on the goal."""


def encode(obs: np.ndarray) -> np.ndarray:
    """``(..., 2)`` int16 cells (agent, goal or :data:`HIDDEN`) of grid observations ``(..., H * W)``."""
    obs = np.asarray(obs)
    agent = np.argmax(obs == AGENT, axis=-1)
    is_goal = obs == GOAL
    goal = np.argmax(is_goal, axis=-1)
    visible = np.take_along_axis(is_goal, goal[..., None], axis=-1)[..., 0]
    return np.stack([agent, np.where(visible, goal, HIDDEN)], axis=-1).astype(CELLS_DTYPE)


def planes(cells: np.ndarray, num_cells: int) -> np.ndarray:
    """The one-hot agent and goal planes, float32 ``(..., 2 * H * W)``, that the first layer is defined over.

    The networks never build them (they add two weight rows); the reference update in the tests does.
    """
    flat = np.asarray(cells).reshape(-1, 2).astype(np.intp)
    rows = np.arange(len(flat))
    out = np.zeros((len(flat), 2 * num_cells), dtype=np.float32)
    out[rows, flat[:, 0]] = 1.0
    visible = flat[:, 1] != HIDDEN
    out[rows[visible], num_cells + flat[visible, 1]] = 1.0
    return out.reshape(*np.shape(cells)[:-1], 2 * num_cells)
