"""The networks' input at every level: one-hot planes (dense) against the cells and door columns (rows added).

An MLP whose first layer is linear over the one-hot agent, goal and wall planes computes the same functions as
the baselines' network over the agent's and goal's cells and each wall's door columns: a one-hot plane selects
rows of the weight, and the wall plane of a layout is every wall row's cells less its doors (a constant plus
the door columns' rows). The two differ in cost, which this script prints per level: milliseconds per
gradient update of the first layer's two forms (torch, CPU, the other layers the same), and the bytes a replay
buffer stores per transition for each input (the grid's int8 cells twice, or the cells and door columns).

    python benchmarks/level_networks.py [--batch 256] [--width 256] [--repeats 50] [--threads 1]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from doors_gym.levels import LEVELS
from doors_gym_baselines import cells as cell_codes
from doors_gym_baselines.dqn_torch import QNetwork
from doors_gym_baselines.harness.replay import ReplayBuffer


def dense_network(inputs: int, width: int) -> torch.nn.Module:
    """The MLP over one-hot planes: a dense first layer of ``inputs`` (agent, goal and wall planes)."""
    return torch.nn.Sequential(
        torch.nn.Linear(inputs, width), torch.nn.ReLU(), torch.nn.Linear(width, width), torch.nn.ReLU(),
        torch.nn.Linear(width, 5),
    )


def ms_per_update(network: torch.nn.Module, batch: torch.Tensor, repeats: int) -> float:
    """Milliseconds of one Adam step on a squared loss of the Q-values of ``batch`` (median of ``repeats``)."""
    optimizer = torch.optim.Adam(network.parameters(), lr=1e-3)
    times = []
    for _ in range(repeats + 3):
        start = time.perf_counter()
        optimizer.zero_grad()
        network(batch).square().mean().backward()
        optimizer.step()
        times.append(time.perf_counter() - start)
    return 1e3 * float(np.median(times[3:]))


def level_row(level, batch_size: int, width: int, repeats: int, rng: np.random.Generator) -> str:
    """One level's line: dense and row-sum ms per update, and the replay bytes of each input."""
    params = level.params()
    doors = cell_codes.door_count(params)
    cells = np.zeros((batch_size, 2 + doors), dtype=np.int16)
    cells[:, :2] = rng.integers(0, params.num_cells, (batch_size, 2))
    if doors:
        cells[:, 2:] = np.sort(rng.integers(0, params.width, (batch_size, doors)), axis=-1)
    grids = cell_codes.decode(cells, params) if doors else None
    planes_in = 3 * params.num_cells
    dense_batch = torch.zeros(batch_size, planes_in)
    if grids is not None:
        for code_index, code in enumerate((1, 3, 2)):  # agent, goal, wall planes
            plane = torch.as_tensor(grids == code).float()
            dense_batch[:, code_index * params.num_cells : (code_index + 1) * params.num_cells] = plane
    sparse = QNetwork(params.num_cells, (width, width), door_offsets=cell_codes.door_offsets(params),
                      num_inputs=cell_codes.num_inputs(params) if doors else None)
    dense_ms = ms_per_update(dense_network(planes_in, width), dense_batch, repeats)
    sparse_ms = ms_per_update(sparse, torch.as_tensor(cells), repeats)
    grid_bytes = 2 * params.num_cells + 8 + 4 + 4
    ours = ReplayBuffer(1, seed=0, doors=doors).bytes_per_transition()
    return (
        f"| {level.name} | {params.num_cells} | {cell_codes.input_width(params)} | {dense_ms:.2f} | {sparse_ms:.2f} "
        f"| {grid_bytes} | {ours} | {grid_bytes * 1e6 / 2**20:,.0f} | {ours * 1e6 / 2**20:,.1f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=50)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {args.threads} thread(s), batch {args.batch}, hidden {args.width}x{args.width}")
    print(
        "| level | H*W | ints per obs | dense one-hot ms/update | cells+doors ms/update | grid replay B/transition "
        "| cells+doors B/transition | 1M grid MiB | 1M cells+doors MiB |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    rng = np.random.default_rng(0)
    for level in LEVELS:
        print(level_row(level, args.batch, args.width, args.repeats, rng), flush=True)


if __name__ == "__main__":
    main()
