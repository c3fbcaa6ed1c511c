"""What a PQN minibatch update costs in the host loop's torch and Flax learners: the regression on the returns
(``Learner.regress``, what ``harness/pqn.py`` calls) beside the route it replaced, the learner's TD update with
``terminated`` set, which ran the target network's forward over the next cells only to multiply it by zero (and
the target's updates), on the same batch, alternating, in three rounds.

    python benchmarks/pqn_host_update.py                      # the 63x63 level preset (PQN), one thread
    python benchmarks/pqn_host_update.py --level 31x31        # the 31x31 level preset

Pin it to a core and one thread for XLA too (``taskset -c 0 env XLA_FLAGS=--xla_cpu_multi_thread_eigen=false``).
The batch has the preset's minibatch size; its cells are the envs' first observations, repeated. Both routes give
the same parameters (``r + 0 * x == r``): tests/baselines/test_pqn.py holds them to it.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np


def milliseconds(function: Callable[[], object], repeats: int) -> float:
    """Mean wall milliseconds of ``function`` over ``repeats`` calls (each waits for its result)."""
    started = time.perf_counter()
    for _ in range(repeats):
        function()
    return (time.perf_counter() - started) / repeats * 1e3


def torch_routes(config, cells: np.ndarray, actions: np.ndarray) -> dict[str, Callable[[], object]]:
    """The torch learner's two routes on one batch."""
    from doors_gym_baselines.learners.dqn_torch import TorchLearner

    learner, size = TorchLearner(config), len(cells)
    returns, cut = np.zeros(size, np.float32), np.ones(size, np.float32)
    return {
        "TD update, cut bootstrap": lambda: learner.update((cells, actions, returns, cells, cut)).item(),
        "regress": lambda: learner.regress((cells, actions, returns)).item(),
    }


def flax_routes(config, cells: np.ndarray, actions: np.ndarray) -> dict[str, Callable[[], object]]:
    """The Flax learner's two pure steps, each jitted with its state donated, on one batch."""
    import jax
    import jax.numpy as jnp

    from doors_gym_baselines.learners import dqn_flax

    network = dqn_flax.make_network(config)
    params = dqn_flax.init_params(network, jax.random.key(0))
    knobs, size = dqn_flax.Knobs.of(config), len(cells)
    returns, cut = np.zeros(size, np.float32), np.ones(size, np.float32)
    routes = {}
    td_batch, returns_batch = (cells, actions, returns, cells, cut), (cells, actions, returns)
    for name, step, batch in (
        ("TD update, cut bootstrap", dqn_flax.make_learning_step(network, config), td_batch),
        ("regress", dqn_flax.make_regression_step(network, config), returns_batch),
    ):
        opt_state = dqn_flax.make_optimizer(config).init(params)
        copy = lambda tree: jax.tree.map(jnp.copy, tree)  # noqa: E731 (each route's own buffers: the step donates)
        state = [dqn_flax.LearnerState(copy(params), copy(params), opt_state, jnp.int32(0))]
        jitted = jax.jit(lambda state, batch, step=step: step(state, batch, knobs), donate_argnums=0)

        def run(jitted=jitted, batch=batch, state=state) -> object:
            state[0], loss = jitted(state[0], batch)
            return float(loss)

        routes[name] = run
    return routes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--level", default="63x63")
    parser.add_argument("--preset", default="shared", help="a PQN preset (default: the level's, PQN at the hard rungs)")
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads (default: %(default)s)")
    args = parser.parse_args()
    import torch

    from doors_gym_baselines.harness.loop import Rollout
    from doors_gym_baselines.learners.dqn_torch import TorchLearner
    from doors_gym_baselines.presets import preset_at

    torch.set_num_threads(args.threads)
    config = preset_at(args.preset, "torch-numpy", args.level).config()
    hyper = config.hyperparameters
    size = hyper.rollout_steps * hyper.num_envs // hyper.minibatches
    rollout = Rollout(config, TorchLearner(config))
    cells = np.resize(rollout.cells, (size, rollout.cells.shape[1]))
    rollout.close()
    actions = np.random.default_rng(0).integers(0, 5, size)
    print(f"{args.level}, {args.preset}, minibatch {size}, torch {torch.__version__}, {args.threads} thread(s)")
    for stack, routes in (
        ("torch", torch_routes(config, cells, actions)),
        ("flax", flax_routes(config, cells, actions)),
    ):
        for route in routes.values():
            for _ in range(20):  # warm-up (and compile)
                route()
        for _ in range(3):
            times = {name: milliseconds(route, args.repeats) for name, route in routes.items()}
            old, new = times["TD update, cut bootstrap"], times["regress"]
            print(f"{stack}: TD update, cut bootstrap {old:.3f} ms; regress {new:.3f} ms ({new / old:.2f}x)")


if __name__ == "__main__":
    main()
