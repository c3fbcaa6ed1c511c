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

Where the doors are drawn per episode (a level's ``doors="random"``), the two cells no longer tell the
layout: the input is then ``(..., 2 + n_walls * n_doors)``, the two cells followed by each wall's door
columns (ascending per wall), and the first layer is linear over one more one-hot plane per wall, its
open columns (``W`` inputs per wall, :func:`num_inputs`). The network still adds rows of that layer's
weight: the agent's, the goal's and one per door. Its width grows with the number of doors, never with
``H * W``, and neither do the replay buffers, which store these small integers. Where the doors are fixed
the input stays the two cells (``Doors-v0``'s network, bit for bit).
NumPy only, so every framework's arm uses it.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from doors_gym import core
from doors_gym.core import AGENT, GOAL, WALL, DoorsParams

CELLS_DTYPE = np.int16
"""Cell indices: ``H * W <= 8191`` fits int16 (the replay buffer holds 4 bytes per observation)."""
HIDDEN = -1
"""The goal's cell when the agent stands on the goal."""


def door_count(params: DoorsParams | None) -> int:
    """Door columns in the input: ``n_walls * n_doors`` where the doors are random, else 0."""
    return params.n_walls * params.n_doors if params is not None and params.random_doors else 0


def input_width(params: DoorsParams | None) -> int:
    """Integers per observation: 2 cells, and the door columns where the doors are random."""
    return 2 + door_count(params)


def cell_rows(params: DoorsParams, cell_planes: bool = True) -> int:
    """First-layer rows of the agent's and the goal's one-hot cell planes: ``2 * H * W``, or none without them
    (the hyperparameter ``cell_planes``: the relative rows alone then say where the agent and the goal are)."""
    return 2 * params.num_cells if cell_planes else 0


def num_inputs(params: DoorsParams, relative: bool = False, cell_planes: bool = True) -> int:
    """Inputs of the first layer: the agent's and the goal's planes (``2 * H * W``, unless not ``cell_planes``), and
    where the doors are random one plane of open columns per wall (``n_walls * W``); with ``relative`` (the
    hyperparameter ``relative_inputs``) the planes of :class:`RelativeRows` after those."""
    rows = relative_rows(params, cell_planes)  # its first row follows the absolute planes
    return rows.end if relative else rows.agent_row


class RelativeRows(NamedTuple):
    """Where the network reads the agent's position and the layout relative to the agent (``relative_inputs``):
    the first-layer row of the agent's row 0 (``H`` rows follow), of its column 0 (``W`` rows), and of offset 0 of
    the goal's column relative to the agent's and of each door's (``2 * W - 1`` rows each, offsets ``-(W-1)..W-1``).
    A cell adds ``agent_row + row``, ``agent_col + col``, ``goal + goal_col - col`` (none when the agent stands on
    the goal) and ``doors[k] + door_col_k - col``; ``end`` is the number of inputs."""

    agent_row: int
    agent_col: int
    goal: int
    doors: tuple[int, ...]
    end: int


def relative_rows(params: DoorsParams, cell_planes: bool = True) -> RelativeRows:
    """The :class:`RelativeRows` of ``params``, after its absolute planes (the cell planes unless not
    ``cell_planes``, then the door planes).

    Which way the goal's column and each door lie is then one row each, and the agent's row and column are shared
    by the cells of a row or column, where the one-hot cell planes give them only as relations the network must
    learn cell by cell (measured at ``31x31``: ``benchmarks/results/ladder/probes/exploration/``).
    """
    walls = params.n_walls * params.width if params.random_doors else 0
    agent_row = cell_rows(params, cell_planes) + walls
    agent_col = agent_row + params.height
    span = 2 * params.width - 1
    goal = agent_col + params.width + params.width - 1
    doors = tuple(goal + span * (door + 1) for door in range(door_count(params)))
    return RelativeRows(agent_row, agent_col, goal, doors, agent_col + params.width + span * (1 + door_count(params)))


def door_offsets(params: DoorsParams, cell_planes: bool = True) -> tuple[int, ...]:
    """The first-layer row of column 0 of each door column in the input (``door_count`` of them, wall by wall)."""
    if not params.random_doors:
        return ()
    first = cell_rows(params, cell_planes)
    return tuple(first + wall * params.width for wall in range(params.n_walls) for _ in range(params.n_doors))


class InputLayout(NamedTuple):
    """Where a Q-network's first layer reads its input, as both frameworks' ``QNetwork`` take it (their keywords
    of the same names): the rows of the door columns, the layer's inputs (``None``: the two cell planes alone),
    the :class:`RelativeRows` (``None`` without ``relative_inputs``) and the grid's width they need (0 without)."""

    door_offsets: tuple[int, ...]
    num_inputs: int | None
    relative: RelativeRows | None
    grid_width: int


def input_layout(params: DoorsParams, relative: bool = False, cell_planes: bool = True) -> InputLayout:
    """The :class:`InputLayout` of ``params`` with the hyperparameters ``relative_inputs`` and ``cell_planes``."""
    return InputLayout(
        door_offsets=door_offsets(params, cell_planes),
        num_inputs=num_inputs(params, relative, cell_planes) if params.random_doors or relative else None,
        relative=relative_rows(params, cell_planes) if relative else None,
        grid_width=params.width if relative else 0,
    )


def door_columns(obs: np.ndarray, params: DoorsParams) -> np.ndarray:
    """``(..., n_walls * n_doors)`` int16: each wall's open columns of grid observations ``(..., H * W)``,
    ascending per wall (what ``DoorsState.doors`` holds, flattened). Reads only the wall rows."""
    obs = np.asarray(obs)
    grid = obs.reshape(*obs.shape[:-1], params.height, params.width)
    open_cells = grid[..., list(params.wall_rows), :] != WALL  # the agent may stand in a door
    columns = np.arange(params.width)
    ranked = np.sort(np.where(open_cells, columns, params.width + columns), axis=-1)[..., : params.n_doors]
    return ranked.reshape(*obs.shape[:-1], -1).astype(CELLS_DTYPE)


def encode(obs: np.ndarray, params: DoorsParams | None = None) -> np.ndarray:
    """``(..., 2)`` int16 cells (agent, goal or :data:`HIDDEN`) of grid observations ``(..., H * W)``, followed by
    the door columns (:func:`door_columns`) where ``params`` draws its doors per episode."""
    obs = np.asarray(obs)
    agent = np.argmax(obs == AGENT, axis=-1)
    is_goal = obs == GOAL
    goal = np.argmax(is_goal, axis=-1)
    visible = np.take_along_axis(is_goal, goal[..., None], axis=-1)[..., 0]
    cells = np.stack([agent, np.where(visible, goal, HIDDEN)], axis=-1).astype(CELLS_DTYPE)
    if not door_count(params):
        return cells
    return np.concatenate([cells, door_columns(obs, params)], axis=-1)


def planes(
    cells: np.ndarray,
    num_cells: int,
    offsets: tuple[int, ...] = (),
    inputs: int | None = None,
    relative: RelativeRows | None = None,
    grid_width: int = 0,
    cell_planes: bool = True,
) -> np.ndarray:
    """The one-hot planes, float32 ``(..., inputs)`` (default ``2 * H * W``), that the first layer is defined over.

    ``offsets`` are :func:`door_offsets` where the input carries door columns; ``relative`` the
    :func:`relative_rows` (with the grid's ``grid_width``) where the network also reads the relative inputs;
    without ``cell_planes`` the agent's and the goal's cell planes are left out. The networks never build them
    (they add weight rows); the reference update in the tests does.
    """
    width = 2 + len(offsets)
    flat = np.asarray(cells).reshape(-1, width).astype(np.intp)
    size = inputs or 2 * num_cells
    rows = np.arange(len(flat))
    out = np.zeros((len(flat), size), dtype=np.float32)
    visible = flat[:, 1] != HIDDEN
    if cell_planes:
        out[rows, flat[:, 0]] = 1.0
        out[rows[visible], num_cells + flat[visible, 1]] = 1.0
    for index, offset in enumerate(offsets):
        out[rows, offset + flat[:, 2 + index]] = 1.0
    if relative is not None:
        column = flat[:, 0] % grid_width
        out[rows, relative.agent_row + flat[:, 0] // grid_width] = 1.0
        out[rows, relative.agent_col + column] = 1.0
        out[rows[visible], relative.goal + flat[visible, 1] % grid_width - column[visible]] = 1.0
        for index, offset in enumerate(relative.doors):
            out[rows, offset + flat[:, 2 + index] - column] = 1.0
    return out.reshape(*np.shape(cells)[:-1], size)


def decode(cells: np.ndarray, params: DoorsParams) -> np.ndarray:
    """The grid observations ``(..., H * W)`` int8 that :func:`encode` read ``cells`` off (its inverse)."""
    cells = np.asarray(cells)
    batch = cells.shape[:-1]
    doors = cells[..., 2:].reshape(*batch, params.n_walls, params.n_doors) if door_count(params) else None
    grid = np.array(np.broadcast_to(core.layout_grid(params, doors), (*batch, params.num_cells)))
    agent, goal = cells[..., :1].astype(np.intp), cells[..., 1:2].astype(np.intp)
    np.put_along_axis(grid, np.where(goal >= 0, goal, agent), np.where(goal >= 0, GOAL, AGENT), axis=-1)
    np.put_along_axis(grid, agent, AGENT, axis=-1)
    return grid
