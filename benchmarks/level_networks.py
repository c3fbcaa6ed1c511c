"""The networks' input at every level: one-hot planes (dense MLP, small CNN) against the cells and door columns.

An MLP whose first layer is linear over the one-hot agent, goal and wall planes computes the same functions as
the baselines' network over the agent's and goal's cells and each wall's door columns: a one-hot plane selects
rows of the weight, and the wall plane of a layout is every wall row's cells less its doors (a constant plus
the door columns' rows). The two differ in cost, which this script prints per level: milliseconds per
gradient update of the first layer's two forms (torch, CPU, the other layers the same), of a small CNN over
the same planes (what a user reaching for a convolution would write: :func:`cnn_network`), and the bytes a replay
buffer stores per transition for each input (the grid's int8 cells twice, or the cells and door columns). A
second table (alone with ``--bytes-only``, no timing) gives both replay buffers' bytes per transition and
their layout tables (the door columns, one row per episode) for a buffer of 1M transitions, at the level's
shared preset's ``num_envs``.

    python benchmarks/level_networks.py [--batch 256] [--width 256] [--repeats 50] [--threads 1] [--bytes-only]
"""

from __future__ import annotations

import argparse
import time

import jax
import numpy as np
import torch

from doors_gym.jax import functional as F
from doors_gym.levels import LEVELS
from doors_gym_baselines.learners import cells as cell_codes
from doors_gym_baselines.learners.dqn_torch import QNetwork
from doors_gym_baselines.harness import device_replay
from doors_gym_baselines.harness.replay import ReplayBuffer, min_episode_steps
from doors_gym_baselines.presets import level_preset

MILLION = 1_000_000
"""Transitions of the buffer whose memory the bytes table states."""


def dense_network(inputs: int, width: int) -> torch.nn.Module:
    """The MLP over one-hot planes: a dense first layer of ``inputs`` (agent, goal and wall planes)."""
    return torch.nn.Sequential(
        torch.nn.Linear(inputs, width), torch.nn.ReLU(), torch.nn.Linear(width, width), torch.nn.ReLU(),
        torch.nn.Linear(width, 5),
    )


def cnn_network(height: int, width: int, hidden: int, channels: int = 16) -> torch.nn.Module:
    """A small CNN over the agent, goal and wall planes (``(3, H, W)``): two 3x3 convolutions (the second of
    stride 2), then the same two hidden layers as the MLPs."""
    flat = channels * -(-height // 2) * -(-width // 2)
    return torch.nn.Sequential(
        torch.nn.Unflatten(1, (3, height, width)),
        torch.nn.Conv2d(3, channels, 3, padding=1), torch.nn.ReLU(),
        torch.nn.Conv2d(channels, channels, 3, stride=2, padding=1), torch.nn.ReLU(),
        torch.nn.Flatten(), torch.nn.Linear(flat, hidden), torch.nn.ReLU(),
        torch.nn.Linear(hidden, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, 5),
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
    cnn_ms = ms_per_update(cnn_network(params.height, params.width, width), dense_batch, repeats)
    sparse_ms = ms_per_update(sparse, torch.as_tensor(cells), repeats)
    grid_bytes = 2 * params.num_cells + 8 + 4 + 4
    host = host_buffer(level)
    ours, million = host.bytes_per_transition(), host.bytes_per_transition() * MILLION + host.layout_bytes()
    return (
        f"| {level.name} | {params.num_cells} | {cell_codes.input_width(params)} | {dense_ms:.2f} | {cnn_ms:.2f} "
        f"| {sparse_ms:.2f} "
        f"| {grid_bytes} | {ours} | {grid_bytes * MILLION / 2**20:,.0f} | {million / 2**20:,.1f} |"
    )


def host_buffer(level) -> ReplayBuffer:
    """The host loop's replay buffer of :data:`MILLION` transitions at ``level`` (its shared preset's envs)."""
    params = level.params()
    num_envs = level_preset(level.name).config().hyperparameters.num_envs
    doors = cell_codes.door_count(params)
    return ReplayBuffer(MILLION, 0, doors, num_envs=num_envs, min_episode_steps=min_episode_steps(params))


def bytes_row(level) -> str:
    """One level's line of the bytes table: each buffer's bytes per transition and its layout table (1M)."""
    params = level.params()
    host = host_buffer(level)
    _, state = F.batch_reset(jax.random.key(0), host.num_envs, params)
    shapes = jax.eval_shape(
        lambda state: device_replay.empty_buffer(state, MILLION, min_episode_steps=min_episode_steps(params)), state
    )
    cells = []
    for per_transition, table in (
        (host.bytes_per_transition(), host.layout_bytes()),
        (device_replay.bytes_per_transition(shapes), device_replay.layout_bytes(shapes)),
    ):
        cells += [f"{per_transition}", f"{table / 2**10:,.0f}", f"{(per_transition * MILLION + table) / 2**20:,.1f}"]
    return f"| {level.name} | {host.num_envs} | {min_episode_steps(params)} | {' | '.join(cells)} |"


def print_bytes_table() -> None:
    """The replay bytes of both buffers at every level (no timing)."""
    print(
        f"Replay bytes per level, buffers of {MILLION:,} transitions (the level's shared preset's num_envs; "
        "episodes of at least min steps)"
    )
    print(
        "| level | num_envs | min steps | host B/transition | host table KiB | host 1M MiB | device B/transition "
        "| device table KiB | device 1M MiB |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for level in LEVELS:
        print(bytes_row(level), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=50)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--bytes-only", action="store_true", help="print only the replay bytes table (no timing)")
    args = parser.parse_args()
    if args.bytes_only:
        print_bytes_table()
        return
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {args.threads} thread(s), batch {args.batch}, hidden {args.width}x{args.width}")
    print(
        "| level | H*W | ints per obs | dense one-hot ms/update | small CNN ms/update | cells+doors ms/update "
        "| grid replay B/transition | cells+doors B/transition | 1M grid MiB | 1M cells+doors MiB |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    rng = np.random.default_rng(0)
    for level in LEVELS:
        print(level_row(level, args.batch, args.width, args.repeats, rng), flush=True)
    print()
    print_bytes_table()


if __name__ == "__main__":
    main()
