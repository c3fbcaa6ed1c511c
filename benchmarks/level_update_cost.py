"""Milliseconds per update at each level's preset, with and without the cell planes, for every learner.

Run from the repository root, with nothing else running (``pip install -e .[baselines]``)::

    python benchmarks/level_update_cost.py                                  # every level, every learner
    python benchmarks/level_update_cost.py --levels 63x63 --stacks "Flax host loop" --rounds 3

Question: what does one update cost at a level's preset (``doors-gym compare --level L``'s network and knobs), and
what do the first layer's rows buy back when the agent's and the goal's one-hot cell planes give way to the relative
rows alone (``cell_planes: false``, where the preset reads the relative inputs)? Each learner is timed on the same
fixed replay batch of the level's cells (its door columns where the doors are random), the variants one after the
other in each round so load from elsewhere falls on every variant alike; a figure is the median over the rounds.
The learners are ``benchmarks/update_cost.py``'s: eager torch (one intra-op thread), Flax in the host loop, and
the fully jitted arm's learning step as its scan runs it (one seed under ``vmap``, donated). Variants: the preset,
the preset without the cell planes, the plain update at the preset's width (:data:`PLAIN`: relative inputs, multi-step
returns, double DQN, LayerNorm and advantage learning off), and (``--widths``) the first two at other widths.
Where the preset is PQN (``31x31``, ``63x63``) an update is one of its minibatch regressions (the learners'
``regress``, the jitted arm's regression step), the plain update is :data:`PLAIN` DQN at the preset's width with
``shared.yml``'s replay and schedule, PQN over 1,024-row minibatches (:data:`PQN_WIDE`) is timed where the
preset's are other, and a last column puts them on the same work: milliseconds of updates per 1,000 env steps (a
run's updates over its env steps: the level presets' PQN makes 16 updates of 256 transitions per 4,096 env steps).
Writes a Markdown report.
"""

from __future__ import annotations

import argparse
import pathlib
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from _timing import machine_line, medians_in_turn, write_report  # noqa: E402
from update_cost import build  # noqa: E402

from doors_gym_baselines.learners import cells as cell_codes  # noqa: E402
from doors_gym_baselines.config import DQNConfig, RunSettings  # noqa: E402
from doors_gym_baselines.config.hyperparameters import UNUSED_BY  # noqa: E402
from doors_gym_baselines.levels import TrainingLevel  # noqa: E402

RESULTS = pathlib.Path(__file__).resolve().parent / "results" / "ladder"
LEVELS = ("Random", "3Walls", "31x31", "63x63")
STACKS = ("eager torch, 1 thread", "Flax host loop", "Flax scan arm")
PLAIN = {"relative_inputs": False, "n_step": 1, "double_dqn": False, "layer_norm": False, "advantage_learning": 0.0,
         "cell_planes": True}  # fmt: skip
"""The five knobs a level preset may turn on, off: the plain DQN update at the preset's width (over the one-hot cell
planes, the only input without the relative inputs)."""
PQN_WIDE = {"epochs": 2, "minibatches": 4}
"""PQN's update over 1,024-row minibatches (a rollout of 32 x 128 in four, two epochs), timed beside a PQN preset
that splits its rollouts otherwise: what the minibatch's rows cost."""
PQN_UNUSED = UNUSED_BY["pqn"]
"""DQN's replay, target-network and schedule fields, which PQN's preset leaves at values it never reads."""


def level_config(level: str, **changes: object) -> DQNConfig:
    """The level's shared preset at the level, with ``changes`` on top."""
    training = TrainingLevel.named(level)
    config = training.shared_preset.config(training.at(RunSettings(quiet=True)))
    return config.replace(**changes) if changes else config


def level_batch(config: DQNConfig, seed: int = 0) -> tuple[np.ndarray, ...]:
    """A replay batch of the level's cells as the buffers store them (a multi-step batch brings its discounts), or
    a PQN minibatch ``(cells, actions, returns)``."""
    rng = np.random.default_rng(seed)
    params, size = config.params, config.update_batch_size
    cells = np.stack([rng.integers(0, params.num_cells, size), rng.integers(0, params.num_cells, size)], axis=1)
    doors = cell_codes.door_count(params)
    if doors:
        columns = np.sort(rng.integers(0, params.width, (size, params.n_walls, params.n_doors)), axis=-1)
        cells = np.concatenate([cells, columns.reshape(size, doors)], axis=1)
    cells = cells.astype(cell_codes.CELLS_DTYPE)
    next_cells = cells.copy()
    next_cells[:, 0] = rng.integers(0, params.num_cells, size)
    next_cells[rng.random(size) < 0.05, 1] = cell_codes.HIDDEN
    batch = (
        cells,
        rng.integers(0, 5, size).astype(np.int64),
        rng.normal(0, 0.5, size).astype(np.float32),
        next_cells,
        (next_cells[:, 1] < 0).astype(np.float32),
    )
    hyper = config.hyperparameters
    if hyper.algorithm == "pqn":  # the cells, the actions taken and their returns
        return batch[:3]
    if hyper.n_step > 1:  # each return's gamma ** steps taken
        batch = (*batch, (hyper.gamma ** rng.integers(1, hyper.n_step + 1, size)).astype(np.float32))
    return batch


def variants(level: str, widths: list[int]) -> dict[str, DQNConfig]:
    """The configs timed at ``level``: its preset, without the cell planes where it reads the relative inputs, and
    both at each of ``widths``."""
    preset = level_config(level)
    hyper = preset.hyperparameters
    found = {"preset": preset}
    planes = hyper.relative_inputs and hyper.cell_planes  # a preset that could drop its cell planes
    if planes:
        found["preset, no cell planes"] = preset.replace(cell_planes=False)
    if hyper.algorithm == "pqn":  # the plain DQN: shared.yml's replay and schedule, the knobs off, this width
        dqn = TrainingLevel.named("study").shared_preset.config().hyperparameters
        replay = {name: getattr(dqn, name) for name in (*PQN_UNUSED, "num_envs")}
        found["plain DQN (the knobs off)"] = preset.replace(**{**replay, **PLAIN, "algorithm": "dqn"})
        wide = preset.replace(**PQN_WIDE)
        if wide != preset:
            found[f"PQN, {wide.update_batch_size:,}-row minibatches"] = wide
    elif preset.replace(**PLAIN) != preset:
        found["plain (the knobs off)"] = preset.replace(**PLAIN)
    for width in widths:
        sizes = (width,) * len(hyper.hidden_sizes)
        found[f"width {width}"] = preset.replace(hidden_sizes=sizes)
        if planes:
            found[f"width {width}, no cell planes"] = preset.replace(hidden_sizes=sizes, cell_planes=False)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--levels", nargs="+", default=list(LEVELS), choices=LEVELS)
    parser.add_argument("--stacks", nargs="+", default=list(STACKS), choices=STACKS)
    parser.add_argument("--widths", nargs="*", type=int, default=[64], help="other widths to time (default 64)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds over the variants (default 3)")
    parser.add_argument("--min-seconds", type=float, default=0.5, help="timing per variant per round (default 0.5)")
    parser.add_argument("--out", type=pathlib.Path, default=RESULTS / "update_cost_levels.md")
    args = parser.parse_args()
    rows = []
    for level in args.levels:
        configs = variants(level, args.widths)
        for stack in args.stacks:
            timers = {name: build(stack, config, level_batch(config)) for name, config in configs.items()}
            medians = medians_in_turn(timers, args.rounds, args.min_seconds)
            plain = medians["preset"]
            for name, config in configs.items():
                inputs = cell_codes.num_inputs(config.params, config.hyperparameters.relative_inputs,
                                               config.hyperparameters.cell_planes)  # fmt: skip
                median = medians[name]
                per_thousand = f"{median * 1000 * config.num_updates / config.run.total_steps:.1f}"
                speed = f"{plain / median:.1f}x"
                rows.append((level, stack, name, f"{inputs:,}", f"{median:.2f}", speed, per_thousand))
                print(" | ".join(rows[-1]), flush=True)
    command = "python benchmarks/level_update_cost.py " + " ".join(sys.argv[1:])
    intro = (
        "ms per update at each level's shared preset (the network and knobs of `doors-gym compare --level L`), "
        f"the median of {args.rounds} rounds over the variants in turn, each learner on one fixed batch of the "
        f"level's cells; first-layer rows: the inputs of the first layer. {machine_line()}; torch with one intra-op "
        "thread, XLA as the process starts it."
    )
    headers = ("level", "learner", "variant", "first-layer rows", "ms per update", "faster than the preset by",
               "ms of updates per 1,000 env steps")  # fmt: skip
    print(write_report(args.out, command.strip(), intro, headers, rows))


if __name__ == "__main__":
    main()
