"""Shared test set-up: headless SDL before pygame can load, optional stacks, reference rules from SPEC.md."""

import math
import os
import pathlib
import shutil
import sys
import tempfile
import types

os.environ["SDL_VIDEODRIVER"] = "dummy"
os.environ["SDL_AUDIODRIVER"] = "dummy"
if os.environ.get("PYTEST_XDIST_WORKER"):
    # Workers share the cores (make test runs one per core): one OpenMP thread each, as torch's own arms run, so
    # torch's threads do not fight the other workers' (an SB3 PPO test took 150 s beside them, 35 s alone).
    for variable in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(variable, "1")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import doors_gym  # noqa: E402, F401  (registers the ids)
from doors_gym.core import DoorsParams  # noqa: E402

# Test files ask for optional stacks with `from stacks import needs` (tests/stacks.py).
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import stacks  # noqa: E402


def pytest_configure(config: pytest.Config) -> None:
    """One JAX compilation cache for the whole session (the JAX arms' persistent cache, ``runtime``), unless the
    caller set one: the workers (which inherit the variable) and the commands tests start load the programs another
    test compiled instead of compiling them again. Removed at the end of the session."""
    try:
        from doors_gym_baselines.runtime import JAX_CACHE_VARIABLE
    except ImportError:  # the env package alone: no JAX arm to cache for
        return
    if os.environ.get("PYTEST_XDIST_WORKER") or os.environ.get(JAX_CACHE_VARIABLE):
        return
    folder = tempfile.mkdtemp(prefix="doors-gym-test-jax-cache-")
    os.environ[JAX_CACHE_VARIABLE] = folder
    config.add_cleanup(lambda: (shutil.rmtree(folder, ignore_errors=True), os.environ.pop(JAX_CACHE_VARIABLE, None)))


def pytest_report_header(config: pytest.Config) -> str:
    """Says whether a missing optional stack skips or fails (``DOORS_GYM_REQUIRE_ALL``)."""
    setting = "fails" if stacks.require_all() else "skips"
    return f"optional stacks: a missing one {setting} its tests ({stacks.REQUIRE_ALL_VARIABLE}={stacks.require_all():d})"

MOVES = {0: (0, 0), 1: (0, 1), 2: (1, 0), 3: (0, -1), 4: (-1, 0)}
"""SPEC.md's action table, written out independently of ``doors_gym.core``."""


def reference_move(params: DoorsParams, row: int, col: int, action: int) -> tuple[int, int]:
    """SPEC.md's move rule in plain Python: clip to the grid, stay if the target is a wall."""
    d_row, d_col = MOVES[action]
    target_row = min(max(row + d_row, 0), params.height - 1)
    target_col = min(max(col + d_col, 0), params.width - 1)
    if target_row == params.height // 2 and target_col not in params.door_cols:
        return row, col
    return target_row, target_col


def reference_distance(row: int, col: int, goal_row: int, goal_col: int) -> np.float32:
    """SPEC.md's float32 Euclidean distance, computed with ``math.hypot``."""
    return np.float32(math.hypot(goal_row - row, goal_col - col))


def reference_reward(before: tuple[int, int], after: tuple[int, int], goal: tuple[int, int]) -> np.float32:
    """``|goal - before| - |goal - after|`` in float32 arithmetic."""
    return np.float32(reference_distance(*before, *goal) - reference_distance(*after, *goal))


def reference_path_lengths(params: DoorsParams, goal: tuple[int, int]) -> dict[tuple[int, int], int]:
    """Breadth-first search over the reference moves: fewest steps from every reachable cell to ``goal``."""
    cells = [(row, col) for row in range(params.height) for col in range(params.width)]
    open_cells = [cell for cell in cells if not (cell[0] == params.height // 2 and cell[1] not in params.door_cols)]
    predecessors: dict[tuple[int, int], list[tuple[int, int]]] = {cell: [] for cell in open_cells}
    for cell in open_cells:
        for action in MOVES:
            target = reference_move(params, *cell, action)
            if target != cell:
                predecessors[target].append(cell)
    lengths = {goal: 0}
    frontier = [goal]
    while frontier:
        next_frontier = []
        for cell in frontier:
            for previous in predecessors[cell]:
                if previous not in lengths:
                    lengths[previous] = lengths[cell] + 1
                    next_frontier.append(previous)
        frontier = next_frontier
    return lengths


@pytest.fixture(scope="session")
def reference() -> types.SimpleNamespace:
    """The reference rules above, for tests to compare the package against."""
    return types.SimpleNamespace(
        move=reference_move,
        distance=reference_distance,
        reward=reference_reward,
        path_lengths=reference_path_lengths,
    )
