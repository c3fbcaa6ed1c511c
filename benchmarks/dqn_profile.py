"""Where a fully jitted DQN iteration spends its time: env + acting + buffer versus the update.

Run from the repository root::

    python benchmarks/dqn_profile.py

Times one compiled chunk of ``dqn_flax_scan`` iterations with learning off
(``learning_starts`` beyond the run) and on, for one seed and for eight seeds
under ``vmap``, and prints milliseconds per iteration.
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time

import jax
import jax.numpy as jnp

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from _timing import machine_line, markdown_table  # noqa: E402

from doors_gym_baselines.learners import dqn_flax_scan  # noqa: E402
from doors_gym_baselines.config import DQNConfig  # noqa: E402


def milliseconds_per_iteration(config: DQNConfig, num_seeds: int) -> float:
    """Median of three timed chunks, after a compiling one."""
    parts = dqn_flax_scan.make_train(config)
    init, run_chunk, iterations = parts.init, parts.run_chunk, parts.iterations_per_chunk
    keys = jax.vmap(jax.random.key)(jnp.arange(num_seeds))
    runner = jax.jit(jax.vmap(init))(keys)
    chunk = jax.jit(jax.vmap(run_chunk, in_axes=(0, None)))
    runner, _ = chunk(runner, jnp.int32(0))
    jax.block_until_ready(runner)
    times = []
    for index in range(1, 4):
        start = time.perf_counter()
        runner, _ = chunk(runner, jnp.int32(index * iterations))
        jax.block_until_ready(runner)
        times.append(time.perf_counter() - start)
    return sorted(times)[1] / iterations * 1e3


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hidden-sizes", type=int, nargs="+", default=[128, 128], help="network widths")
    args = parser.parse_args(argv)
    base = DQNConfig.of(total_steps=300_000, hidden_sizes=tuple(args.hidden_sizes), quiet=True)
    hyper = base.hyperparameters
    rows = []
    for num_seeds in (1, 8):
        acting = milliseconds_per_iteration(base.replace(learning_starts=base.run.total_steps), num_seeds)
        learning = milliseconds_per_iteration(base.replace(learning_starts=0), num_seeds)
        rows.append([num_seeds, f"{acting:.3f}", f"{learning:.3f}", f"{learning - acting:.3f}"])
    widths = list(hyper.hidden_sizes)
    print(f"flax-scan, {hyper.num_envs} envs, batch {hyper.batch_size}, hidden {widths} ({machine_line()})\n")
    print(markdown_table(["seeds", "ms/iteration, no learning", "ms/iteration, learning", "update share (ms)"], rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
