"""What a DQN of discount ``gamma`` can reach at a level, at best: the optimal policy of its discounted objective.

DQN learns the greedy policy of ``Q*_gamma``, the optimum of the discounted return (it bootstraps on truncation,
so the time limit is not part of its objective). SPEC's "solved" measures the undiscounted step reward of the
shortest path (the oracle). The two differ wherever a shortest path starts with steps that lose reward: a
sideways walk to a door far from the goal's column costs reward now and pays it back later, and a short horizon
discounts the pay-back below the cost, so the discounted optimum waits against the wall instead. This script
finds, exactly, the policy that a perfectly trained DQN of each ``gamma`` would play: value iteration on every
sampled layout and goal (the deterministic MDP of the env's own ``core.move`` and ``core.reward``), then its
greedy policy (ties to the lower action index, as ``argmax``) played from every start/goal pair within the
time limit; beside it the oracle on the same layouts. Prints, per level and gamma, the greedy success rate and
mean step reward as a share of the oracle's, against SPEC's bars (99 % success, 96.6 % of the step reward):

    python benchmarks/discounted_optimum.py --levels study Random 3Walls 31x31 --gammas 0.867 0.95 0.98 0.99
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from _timing import machine_line, markdown_table  # noqa: E402

DEFAULT_GAMMAS = (0.867118, 0.9, 0.95, 0.97, 0.98, 0.99, 0.995)
"""The shared preset's gamma (tuned on ``Doors-v0``), the level presets' 0.95 and longer horizons."""


def layout_moves(params, doors: np.ndarray) -> np.ndarray:
    """``(L, H * W, 5)`` int32: the cell after each action from each cell, on each of ``L`` layouts (``core.move``)."""
    from doors_gym import core

    cells = np.arange(params.num_cells, dtype=np.int32)
    row, col = np.divmod(cells, params.width)
    actions = np.arange(core.NUM_ACTIONS, dtype=np.int32)
    count = len(doors)
    shape = (count, params.num_cells, core.NUM_ACTIONS)
    row = np.broadcast_to(row[None, :, None], shape)
    col = np.broadcast_to(col[None, :, None], shape)
    layout_doors = np.broadcast_to(doors[:, None, None], shape + doors.shape[1:])
    new_row, new_col = core.move(params, row, col, actions, doors=layout_doors)
    return (new_row * params.width + new_col).astype(np.int32)


def goal_distances(params) -> np.ndarray:
    """``(W, H * W)`` float32: the distance from every cell to each goal of the top row (``core.distance``)."""
    from doors_gym import core

    return np.stack([core.distances_to(params, 0, goal) for goal in range(params.width)])


def discounted_policy(moves: np.ndarray, distances: np.ndarray, gamma: float, tolerance: float = 1e-9) -> np.ndarray:
    """``(L, W, H * W)`` int: the greedy action of ``Q*_gamma`` on each layout for each goal (value iteration).

    Args:
        moves: :func:`layout_moves`.
        distances: :func:`goal_distances`.
        gamma: the discount, in ``(0, 1)``.
        tolerance: stop once no value moves by more than this (the greedy policy is then exact up to ties
            closer than ``tolerance``).
    """
    count, cells, actions = moves.shape
    goals = distances.shape[0]
    goal_cell = np.arange(goals)  # the goals sit on the top row: cell index = column
    # rewards[l, g, c, a] = d(c) - d(next): float64 sums of the env's float32 rewards
    after = distances[None, :, :, None].astype(np.float64)
    next_cells = moves[:, None, :, :]  # (L, 1, C, A)
    rewards = after - np.take_along_axis(
        np.broadcast_to(distances[None, :, :, None], (count, goals, cells, 1)).astype(np.float64),
        np.broadcast_to(next_cells, (count, goals, cells, actions)).reshape(count, goals, cells * actions)[..., None],
        axis=2,
    ).reshape(count, goals, cells, actions)
    terminal = np.zeros((goals, cells), dtype=bool)
    terminal[goal_cell, goal_cell] = True
    flat_next = np.broadcast_to(next_cells, (count, goals, cells, actions)).reshape(count, goals, -1)
    values = np.zeros((count, goals, cells))
    while True:
        q = rewards + gamma * np.take_along_axis(values, flat_next, axis=2).reshape(count, goals, cells, actions)
        new = np.where(terminal[None], 0.0, q.max(axis=-1))
        change = float(np.abs(new - values).max())
        values = new
        if change < tolerance:
            return q.argmax(axis=-1)


def play(moves: np.ndarray, policies: np.ndarray, distances: np.ndarray, height: int, limit: int):
    """Plays ``policies`` (``(L, W, H * W)`` actions) from every start column to every goal column.

    Returns:
        ``(returns, steps, reached)``, each ``(L, W, W)`` indexed ``[layout, goal_col, agent_col]``.
    """
    count, goals, _ = policies.shape
    width = goals
    cell = np.broadcast_to((height - 1) * width + np.arange(width), (count, goals, width)).copy()
    goal_cell = np.broadcast_to(np.arange(goals)[None, :, None], cell.shape)
    layout = np.broadcast_to(np.arange(count)[:, None, None], cell.shape)
    goal_index = np.broadcast_to(np.arange(goals)[None, :, None], cell.shape)
    start = distances[goal_index, cell].astype(np.float64)
    steps = np.zeros(cell.shape, dtype=np.int64)
    done = cell == goal_cell
    for _ in range(limit):
        if done.all():
            break
        action = policies[layout, goal_index, cell]
        cell = np.where(done, cell, moves[layout, cell, action])
        steps += ~done
        done = cell == goal_cell
    returns = start - distances[goal_index, cell]
    return returns, steps, done


def level_rows(level: str, gammas: tuple[float, ...], layouts: int, seed: int) -> list[dict]:
    """One row per gamma at ``level``: the discounted optimum's greedy figures against the oracle's."""
    from doors_gym import core, oracle
    from doors_gym.levels import get_level

    params = get_level(level).params()
    limit = params.max_episode_steps or core.default_time_limit(params.grid_size, params.n_walls)
    if params.random_doors:
        doors = core.sample_doors(params, np.random.default_rng(seed), (layouts,))
    else:
        doors = np.asarray(params.fixed_doors)[None]
    moves = layout_moves(params, doors)
    distances = goal_distances(params)
    sums = oracle.layout_sums(core.wall_mask(params, doors), limit)
    oracle_reward = float(sums.returns.sum() / sums.steps.sum())
    rows = []
    for gamma in gammas:
        started = time.perf_counter()
        policies = discounted_policy(moves, distances, gamma)
        returns, steps, reached = play(moves, policies, distances, params.height, limit)
        step_reward = float(returns.sum() / steps.sum())
        rows.append(
            {
                "level": level,
                "layouts": len(doors),
                "gamma": gamma,
                "success": float(reached.mean()),
                "step_reward": step_reward,
                "oracle_step_reward": oracle_reward,
                "share": step_reward / oracle_reward,
                "seconds": time.perf_counter() - started,
            }
        )
        print(
            f"{level:7s} gamma {gamma:.4f}: success {reached.mean():.3f}, step reward {step_reward:.4f} "
            f"({step_reward / oracle_reward:.1%} of the oracle's {oracle_reward:.4f}) "
            f"[{time.perf_counter() - started:.1f} s]",
            flush=True,
        )
    return rows


def report(rows: list[dict]) -> str:
    """The Markdown table of every row, with whether SPEC's two bars (greedy parts) are met."""
    from doors_gym.oracle import SOLVED_REWARD_SHARE, SOLVED_SUCCESS

    table = [
        [
            row["level"],
            f"{row['gamma']:g}",
            str(row["layouts"]),
            f"{row['success']:.3f}",
            f"{row['step_reward']:.4f}",
            f"{row['oracle_step_reward']:.4f}",
            f"{row['share']:.1%}",
            "yes" if row["success"] >= SOLVED_SUCCESS and row["share"] >= SOLVED_REWARD_SHARE else "no",
        ]
        for row in rows
    ]
    header = ["level", "gamma", "layouts", "greedy success", "step reward", "oracle's", "share", "can be solved"]
    return markdown_table(header, table)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--levels", nargs="+", default=["study", "Random", "3Walls", "31x31"])
    parser.add_argument("--gammas", nargs="+", type=float, default=list(DEFAULT_GAMMAS))
    parser.add_argument("--layouts", type=int, default=200, help="layouts sampled per random-door level")
    parser.add_argument("--seed", type=int, default=0, help="the seed of the layouts' draw")
    parser.add_argument("--out", type=pathlib.Path, default=None, help="write the table here (Markdown)")
    args = parser.parse_args(argv)
    for gamma in args.gammas:
        if not 0.0 < gamma < 1.0:
            parser.error(f"--gammas: {gamma!r} is out of range: expected 0 < gamma < 1")
    if args.layouts < 1:
        parser.error(f"--layouts={args.layouts} is out of range: expected >= 1")
    print(machine_line(), flush=True)
    rows = [row for level in args.levels for row in level_rows(level, tuple(args.gammas), args.layouts, args.seed)]
    table = report(rows)
    print(table)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(
            f"`python benchmarks/discounted_optimum.py --levels {' '.join(args.levels)} --gammas "
            f"{' '.join(f'{g:g}' for g in args.gammas)} --layouts {args.layouts} --seed {args.seed}`\n\n{table}\n"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
