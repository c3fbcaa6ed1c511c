"""A probe of one network candidate at a level: the fully jitted arm with factored cell inputs.

The networks of every arm read the agent's and the goal's cells as one-hot planes (one first-layer row per
cell) and each wall's door columns. A candidate that might generalise better across the grid adds one row
per grid row and per grid column of the agent and of the goal (``2 * (H + W)`` more rows), so that "the door
is left of me" is one weight pattern whatever the row. This script trains ``flax-scan`` once with that first
layer (the Flax network swapped for a subclass, nothing else changed) and prints its learning curve, for
``benchmarks/results/ladder/README.md``'s list of what was tried at ``3Walls``:

    python benchmarks/factored_input_probe.py --level 3Walls \
        --preset benchmarks/results/ladder/probes/3Walls-base5m.yml --total-steps 1000000
"""

from __future__ import annotations

import argparse
import time

import flax.linen as nn
import jax.numpy as jnp

from doors_gym.levels import LEVEL_NAMES, get_level
from doors_gym_baselines.learners import dqn_flax
from doors_gym_baselines.arms import get_arm
from doors_gym_baselines.config import RunSettings
from doors_gym_baselines.levels import TrainingLevel
from doors_gym_baselines.presets import load_preset


def factored_network(width: int) -> type[dqn_flax.QNetwork]:
    """The Flax network with a first layer that also adds the rows of the agent's and goal's row and column."""

    class Factored(dqn_flax.QNetwork):
        @nn.compact
        def __call__(self, cells: jnp.ndarray) -> jnp.ndarray:
            size = self.hidden_sizes[0]
            kernel = self.param("planes_kernel", nn.initializers.lecun_normal(), (self.num_inputs, size))
            height = self.num_cells // width
            lines = self.param("lines_kernel", nn.initializers.lecun_normal(), (2 * (height + width), size))
            agent, goal = cells[:, 0].astype(jnp.int32), cells[:, 1].astype(jnp.int32)
            visible, goal = (goal >= 0)[:, None], jnp.maximum(goal, 0)

            def place(cell: jnp.ndarray, first: int) -> jnp.ndarray:
                rows = jnp.take(lines, first + cell // width, axis=0)
                return rows + jnp.take(lines, first + height + cell % width, axis=0)

            features = jnp.take(kernel, agent, axis=0) + place(agent, 0)
            goal_rows = jnp.take(kernel, self.num_cells + goal, axis=0) + place(goal, height + width)
            features = features + jnp.where(visible, goal_rows, 0.0)
            doors = cells[:, 2:].astype(jnp.int32) + jnp.asarray(self.door_offsets, jnp.int32)
            features = features + jnp.take(kernel, doors, axis=0).sum(axis=1)
            features = nn.relu(features + self.param("planes_bias", nn.initializers.zeros_init(), (size,)))
            for hidden in self.hidden_sizes[1:]:
                features = nn.relu(nn.Dense(hidden)(features))
            return nn.Dense(self.num_actions)(features)

    return Factored


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--level", choices=[name for name in LEVEL_NAMES if name != "study"], default="3Walls")
    parser.add_argument("--preset", required=True, help="a preset file (hyperparameters and run)")
    parser.add_argument("--total-steps", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=100)
    args = parser.parse_args()
    level = get_level(args.level)
    dqn_flax.QNetwork = factored_network(level.grid_size[1])  # make_network looks the class up when called
    preset = load_preset(args.preset, "flax-scan")
    layout = RunSettings(**TrainingLevel.named(level.name).settings, seed=args.seed, quiet=True)
    arm = get_arm("flax-scan")
    config = arm.configure(preset.config(layout).replace(total_steps=args.total_steps))
    start = time.perf_counter()
    result = arm.train(config)
    print(f"{args.level}, factored input, {args.total_steps} steps: {time.perf_counter() - start:.0f} s")
    for row in result.history:
        seed = row.per_seed[0]
        print(
            f"  {row.step:>9,} steps: greedy success {seed.greedy_success_rate:.3f}, "
            f"greedy step reward {seed.greedy_step_reward:.3f}, rolling reward {seed.rolling_reward:.3f}"
        )


if __name__ == "__main__":
    main()
