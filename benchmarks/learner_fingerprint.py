"""A digest of what every DQN learner computes, to diff two revisions: did a refactor leave the learning bit for bit?

Run it at each revision, on the same machine, and compare the two outputs (a digest holds on one machine only: another
CPU rounds differently)::

    git stash -q; python benchmarks/learner_fingerprint.py > before.json; git stash pop -q
    python benchmarks/learner_fingerprint.py > after.json && diff before.json after.json && echo identical

For each knob setting below it prints the SHA-256 (16 hex digits) of: the fully jitted arm's parameters, losses and
exploration rates after a short run of one seed (``scan``) and of two seeds in one program (``scan2``); Flax's and
torch's learners after 40 updates on fixed batches (``flax``, ``torch``); the host loop's exploration and restart
schedules (``sched``) and the traced one (``schedj``). The settings reach double DQN, clipping, the rate's decay,
Polyak averaging, the ``63x63`` preset's knobs, exploring starts, SGD and MSE, and random doors.
"""

from __future__ import annotations

import hashlib
import json
import sys

import jax
import jax.numpy as jnp
import numpy as np

from doors_gym_baselines.config import DQNConfig
from doors_gym_baselines.learners.cells import input_width
from doors_gym_baselines.learners.dqn_flax import FlaxLearner
from doors_gym_baselines.learners.dqn_flax_scan import make_train
from doors_gym_baselines.learners.dqn_torch import TorchLearner

SMALL = dict(
    total_steps=3_200, num_envs=8, batch_size=32, buffer_size=1600, hidden_sizes=(32, 32), eval_every=0, quiet=True,
    learning_starts=400, target_update=5,
)  # fmt: skip
KNOBS = {
    "plain": {},
    "decay": dict(lr_end_fraction=0.2, lr_decay_fraction=0.7, tau=0.3),
    "clip+double": dict(max_grad_norm=0.3, double_dqn=True),
    "63-like": dict(
        relative_inputs=True, n_step=3, double_dqn=True, layer_norm=True, advantage_learning=0.9, step_cost=0.5,
        lr_end_fraction=0.001, lr_decay_fraction=0.7, tau=0.05, end_epsilon=0.001, gamma=0.99,
    ),
    "restarts+sgd+mse": dict(restart_prob=0.5, restart_fraction=0.5, optimizer="sgd", loss="mse", learning_rate=0.05),
    "random-doors": dict(relative_inputs=True, n_walls=2, doors="random", max_episode_steps=60, dueling=True),
}  # fmt: skip
UPDATES = 40


def digest(arrays: list) -> str:
    """16 hex digits of the SHA-256 of ``arrays``' bytes, in order."""
    hashed = hashlib.sha256()
    for array in arrays:
        hashed.update(np.ascontiguousarray(np.asarray(array)).tobytes())
    return hashed.hexdigest()[:16]


def fixed_batch(config: DQNConfig, seed: int, size: int = 32) -> tuple[np.ndarray, ...]:
    """A replay batch of ``config``'s cells (doors fixed at column 3), the same for every revision."""
    rng = np.random.default_rng(seed)
    cells_count, width = config.params.num_cells, input_width(config.params)
    cells = np.stack([rng.integers(0, cells_count, size), rng.integers(-1, cells_count, size)], 1)
    if width > 2:
        cells = np.concatenate([cells, np.full((size, width - 2), 3)], 1)
    cells = cells.astype(np.int16)
    next_cells = cells.copy()
    next_cells[:, 0] = rng.integers(0, cells_count, size)
    batch = (cells, rng.integers(0, 5, size).astype(np.int64), rng.normal(size=size).astype(np.float32), next_cells,
             (rng.random(size) < 0.1).astype(np.float32))  # fmt: skip
    if config.hyperparameters.n_step > 1:
        batch = (*batch, (0.99 ** rng.integers(1, 4, size)).astype(np.float32))
    return batch


def fingerprint(name: str, config: DQNConfig) -> dict[str, str]:
    """The digests of one knob setting (see the module's docstring)."""
    alone, metrics = jax.jit(make_train(config).train)(jax.random.key(7))
    two, metrics_two = jax.jit(jax.vmap(make_train(config.replace(num_seeds=2)).train))(
        jax.vmap(jax.random.key)(np.array([7, 8]))
    )
    flax_learner, torch_learner = FlaxLearner(config), TorchLearner(config)
    flax_losses = [flax_learner.update(fixed_batch(config, k)) for k in range(UPDATES)]
    torch_losses = [torch_learner.update(fixed_batch(config, k)) for k in range(UPDATES)]
    steps = range(0, 4000, 37)
    schedule = [config.epsilon(step) for step in steps] + [float(config.restart_probability(step)) for step in steps]
    return {
        f"scan/{name}": digest([*jax.tree.leaves(alone.learner.params), metrics["loss"], metrics["epsilon"]]),
        f"scan2/{name}": digest([*jax.tree.leaves(two.learner.params), metrics_two["loss"]]),
        f"flax/{name}": digest([*jax.tree.leaves(flax_learner.state.params), flax_learner.read_losses(flax_losses)]),
        f"torch/{name}": digest(
            [*(p.detach().numpy() for p in torch_learner.network.parameters()), torch_learner.read_losses(torch_losses)]
        ),
        f"sched/{name}": digest([np.asarray(schedule, np.float64)]),
        f"schedj/{name}": digest([jax.jit(lambda s: config.epsilon(s, jnp))(jnp.arange(0, 4000, 37))]),
    }


def main() -> None:
    found: dict[str, str] = {}
    for name, knobs in KNOBS.items():
        found.update(fingerprint(name, DQNConfig.of(**SMALL, **knobs)))
    json.dump(found, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
