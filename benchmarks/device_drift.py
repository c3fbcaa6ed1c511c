"""How far flax-scan's seeds drift when spread over devices, and why: one program repeats, two shapes differ.

Run from the repository root::

    python benchmarks/device_drift.py            # about a minute on 2 cores

Trains the same three seeds of ``flax-scan`` (a tiny budget) on one JAX CPU device and spread over two,
twice each, in fresh processes, for XLA's code generation for this CPU and capped at AVX2. It prints how
many of the run's losses differ bit for bit (a repeat of the same program, one device against two) and
the largest relative difference: on one device the three seeds form one batch, on two each device runs
a batch of two, another program. ``tests/baselines/test_speed.py`` holds the two to 1e-5 relative.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

RUN = """
import json, sys
from doors_gym_baselines.arms import get_arm
from doors_gym_baselines.config import DQNConfig

config = DQNConfig.of(
    total_steps=3_000, learning_starts=500, num_envs=8, batch_size=32, buffer_size=2_000, hidden_sizes=(32,),
    eval_every=1_000, num_seeds=3, devices=int(sys.argv[1]), quiet=True, profile=False,
)
print(json.dumps(get_arm("flax-scan").train(config).losses))
"""
"""One training in a fresh process (the device count is fixed at JAX's start); prints its losses."""


def losses(devices: int, isa: str) -> list[float]:
    """The losses of one training over ``devices`` CPU devices, XLA's code capped at ``isa`` (or the host's)."""
    env = {**os.environ, "JAX_NUM_CPU_DEVICES": "2", "JAX_PLATFORMS": "cpu"}
    if isa != "host":
        env["XLA_FLAGS"] = f"{env.get('XLA_FLAGS', '')} --xla_cpu_max_isa={isa}".strip()
    completed = subprocess.run(
        [sys.executable, "-c", RUN, str(devices)], capture_output=True, text=True, env=env, check=True
    )
    return json.loads(completed.stdout.strip().splitlines()[-1])


def differences(first: list[float], second: list[float]) -> tuple[int, float]:
    """How many values differ bit for bit, and the largest relative difference."""
    assert len(first) == len(second), "the runs made different numbers of updates"
    relative = [abs(a - b) / max(abs(a), 1e-30) for a, b in zip(first, second)]
    return sum(a != b for a, b in zip(first, second)), max(relative)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--isa", nargs="+", default=["host", "AVX2"], help="XLA CPU ISAs to try (host: no cap)")
    args = parser.parse_args(argv)
    print("| XLA code | losses | repeat, 1 device | repeat, 2 devices | 1 against 2 devices | largest relative |")
    print("|---|---:|---:|---:|---:|---:|")
    for isa in args.isa:
        one, one_again, two, two_again = (losses(devices, isa) for devices in (1, 1, 2, 2))
        across, largest = differences(one, two)
        print(
            f"| {isa} | {len(one)} | {differences(one, one_again)[0]} differ | {differences(two, two_again)[0]} differ "
            f"| {across} differ | {largest:.1e} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
