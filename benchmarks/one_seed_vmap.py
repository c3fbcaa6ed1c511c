"""What a ``vmap`` over one seed costs the jitted arm's update, with and without LayerNorm.

Run from the repository root, pinned to one core with nothing else running::

    taskset -c 0 env XLA_FLAGS=--xla_cpu_multi_thread_eigen=false python benchmarks/one_seed_vmap.py
    python benchmarks/one_seed_vmap.py --level 63x63 --rounds 5

Question: the jitted arm traces its program for one seed and ``vmap``s it over a device's seeds; with one seed a
device, is the batched program the unbatched one's cost? Each variant times the level preset's update (PQN's
minibatch regression at ``31x31`` and ``63x63``: ``dqn_flax.make_regression_step``) on one fixed minibatch, jitted
alone, under ``vmap`` over one seed and over two (per seed), the state donated as the scan does; the variants in turn
in each round, a figure the median over the rounds. ``--no-layer-norm`` adds the same without LayerNorm.
``scan_driver.compile_chunk`` runs one seed a device unbatched where the program has LayerNorm, from this.
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from _timing import machine_line, medians_in_turn, write_report  # noqa: E402
from level_update_cost import level_batch, level_config  # noqa: E402

RESULTS = pathlib.Path(__file__).resolve().parent / "results" / "one_seed_vmap.md"


def timers(level: str, layer_norm: bool) -> dict:
    """``{variant: timer(calls) -> ms per update per seed}`` for the level preset's update."""
    import jax
    import jax.numpy as jnp

    from doors_gym_baselines.learners.dqn_flax import (
        Knobs,
        LearnerState,
        init_params,
        make_learning_step,
        make_network,
        make_optimizer,
        make_regression_step,
    )

    config = level_config(level, layer_norm=layer_norm)
    batch, network, knobs = level_batch(config), make_network(config), Knobs.of(config)
    pqn = config.hyperparameters.algorithm == "pqn"
    step = (make_regression_step if pqn else make_learning_step)(network, config)
    params = init_params(network, jax.random.key(0))
    state = LearnerState(params, None if pqn else params, make_optimizer(config).init(params), jnp.int32(0))

    def update(learner: LearnerState, minibatch: tuple) -> tuple:
        return step(learner, minibatch, knobs)

    def timer(function, seeds: int):
        stack = (lambda tree: tree) if seeds == 0 else (
            lambda tree: jax.tree.map(lambda leaf: jnp.repeat(jnp.asarray(leaf)[None], seeds, 0), tree)
        )  # fmt: skip
        learner, minibatch = stack(jax.tree.map(jnp.copy, state)), stack(batch)
        jitted = jax.jit(function, donate_argnums=0)
        learner, loss = jitted(learner, minibatch)  # compiles
        jax.block_until_ready(loss)
        holder = {"learner": learner}

        def run(calls: int) -> float:
            begin = time.perf_counter()
            for _ in range(calls):
                holder["learner"], loss = jitted(holder["learner"], minibatch)
            jax.block_until_ready(loss)
            return (time.perf_counter() - begin) / calls * 1e3 / max(1, seeds)

        return run

    return {
        "jitted alone": timer(update, 0),
        "vmap over 1 seed": timer(jax.vmap(update), 1),
        "vmap over 2 seeds (per seed)": timer(jax.vmap(update), 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--levels", nargs="+", default=["31x31", "63x63"])
    parser.add_argument("--rounds", type=int, default=5, help="rounds over the variants (default 5)")
    parser.add_argument("--calls", type=int, default=150, help="updates timed per variant per round (default 150)")
    parser.add_argument("--no-layer-norm", action="store_true", help="also time the preset without LayerNorm")
    parser.add_argument("--out", type=pathlib.Path, default=RESULTS)
    args = parser.parse_args()
    rows = []
    for level in args.levels:
        for layer_norm in (True, False) if args.no_layer_norm else (True,):
            medians = medians_in_turn(timers(level, layer_norm), args.rounds, args.calls)
            alone = medians["jitted alone"]
            for name, median in medians.items():
                rows.append((level, "on" if layer_norm else "off", name, f"{median:.2f}", f"{median / alone:.2f}x"))
                print(" | ".join(rows[-1]), flush=True)
    command = "python benchmarks/one_seed_vmap.py " + " ".join(sys.argv[1:])
    intro = (
        "ms per update of each level preset's update (PQN's minibatch regression at `31x31` and `63x63`) on one fixed "
        f"minibatch, the median of {args.rounds} rounds over the variants in turn, {args.calls} updates each; "
        f"{machine_line()}; XLA as the process starts it."
    )
    headers = ("level", "LayerNorm", "program", "ms per update per seed", "over jitted alone")
    print(write_report(args.out, command.strip(), intro, headers, rows))


if __name__ == "__main__":
    main()
