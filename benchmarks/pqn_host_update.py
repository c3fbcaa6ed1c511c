"""What a PQN minibatch update costs in torch's host loop, and the share of it spent on the target network's forward
pass over the next cells, which PQN's cut bootstrap multiplies by zero (``harness/pqn.py`` routes its returns through
the learner's own TD update with ``terminated`` set).

    python benchmarks/pqn_host_update.py                      # the jitted arm's 63x63 preset file, one torch thread
    python benchmarks/pqn_host_update.py --level 31x31 --preset doors_gym_baselines/hyperparams/31x31/flax-scan.yml

Both figures are timed on the same batch, side by side, in three rounds: a batch of the preset's minibatch size
whose cells are the envs' first observations, repeated.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np
import torch

from doors_gym_baselines.harness.loop import Rollout
from doors_gym_baselines.learners.dqn_torch import TorchLearner
from doors_gym_baselines.presets import preset_at


def milliseconds(function: Callable[[], object], repeats: int) -> float:
    """Mean wall milliseconds of ``function`` over ``repeats`` calls."""
    started = time.perf_counter()
    for _ in range(repeats):
        function()
    return (time.perf_counter() - started) / repeats * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--level", default="63x63")
    parser.add_argument("--preset", default="doors_gym_baselines/hyperparams/63x63/flax-scan.yml")
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads (default: %(default)s)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    config = preset_at(args.preset, "torch-numpy", args.level).config()
    hyper = config.hyperparameters
    size = hyper.rollout_steps * hyper.num_envs // hyper.minibatches
    learner = TorchLearner(config)
    rollout = Rollout(config, learner)
    cells = np.resize(rollout.cells, (size, rollout.cells.shape[1]))
    rollout.close()
    actions = np.random.default_rng(0).integers(0, 5, size)
    batch = (cells, actions, np.zeros(size, np.float32), cells, np.ones(size, np.float32))
    next_cells = torch.as_tensor(cells)

    def target_forward() -> None:
        with torch.no_grad():
            learner.target_network(next_cells)

    for _ in range(20):  # warm-up
        learner.update(batch)
        target_forward()
    print(f"{args.level}, {args.preset}, minibatch {size}, torch {torch.__version__}, {args.threads} thread(s)")
    for _ in range(3):
        update = milliseconds(lambda: learner.update(batch), args.repeats)
        forward = milliseconds(target_forward, args.repeats)
        print(f"update {update:.3f} ms, target forward {forward:.3f} ms ({forward / update:.0%} of an update)")


if __name__ == "__main__":
    main()
