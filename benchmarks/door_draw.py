"""The JAX door draw of a random-door level against an argsort of ``W`` draws per wall (what it replaced).

An autoreset draws a whole batch of start states, doors included, on every step, so the draw is part of
every ``batch_step``. Prints milliseconds per jitted call (median of rounds) at ``--level`` for each batch
size, beside the floor of a step (a plain NumPy copy of the batch's observation bytes):

    python benchmarks/door_draw.py --level 63x63
"""

from __future__ import annotations

import argparse
import pathlib
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from _levels import SCAN_SIZES, copy_seconds, thread_settings  # noqa: E402
from _timing import machine_line, time_rounds  # noqa: E402


def draw_functions(params, num_envs: int) -> dict:
    """Jitted door draws for ``num_envs`` envs: the shipped one, the argsort rule, the shipped one plus an XLA sort."""
    import jax
    import jax.numpy as jnp

    from doors_gym.jax import functional as F

    def argsort_rule(key):
        draws = jax.random.bits(key, (num_envs, params.n_walls, params.width), dtype=jnp.uint32)
        return jnp.sort(jnp.argsort(draws, axis=-1)[..., : params.n_doors], axis=-1)

    return {
        "draw_doors (ranks, compare-exchange sort)": jax.jit(lambda key: F.draw_doors(key, (num_envs,), params)),
        "draw_doors + jnp.sort of the few doors": jax.jit(lambda key: jnp.sort(F.draw_doors(key, (num_envs,), params))),
        "argsort of W draws per wall (before)": jax.jit(argsort_rule),
    }


def main(argv: list[str] | None = None) -> int:
    import jax

    from doors_gym.levels import get_level

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--level", default="63x63", help="a level with random doors")
    parser.add_argument("--seconds", type=float, default=1.0, help="seconds per configuration")
    args = parser.parse_args(argv)
    params = get_level(args.level).params()
    print(f"{machine_line()}; {thread_settings()}")
    for num_envs in SCAN_SIZES:
        floor_ms = copy_seconds(num_envs * params.num_cells * 2, args.seconds) * 1e3
        print(f"{args.level}, {num_envs} envs: floor (copy of the observations) {floor_ms:.3f} ms")
        key = jax.random.key(0)
        for name, function in draw_functions(params, num_envs).items():
            jax.block_until_ready(function(key))
            seconds, _ = time_rounds(lambda _: jax.block_until_ready(function(key)), args.seconds)
            print(f"  {name:45s} {seconds * 1e3:8.3f} ms  ({seconds * 1e3 / floor_ms:.2f}x the floor)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
