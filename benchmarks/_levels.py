"""Speed at every level against the floor of writing the observations once (for throughput.py and figure10.py).

A vector step cannot take less time than writing its observations once, ``num_envs * H * W`` int16
cells. The floor is measured in the same run as each figure, just before it: a plain NumPy copy of that
many bytes into a buffer allocated beforehand (``np.copyto``, one pass of reads and writes). Each step
is then reported as a multiple of its floor, a ratio that the load of other processes on a shared
machine moves far less than it moves either time.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from _timing import human_rate, markdown_table, time_rounds

ACTIONS_PER_ROUND = 5_000
VECTOR_SIZES = (128, 1024)
SCAN_SIZES = (1024, 4096)
SCAN_STEPS = 32
"""Steps per compiled scan call: enough that a call's dispatch is noise at 1024 envs and more."""
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "XLA_FLAGS", "JAX_PLATFORMS")


@dataclasses.dataclass
class LevelSpeed:
    """One method at one level: seconds per (vector) step beside the floor measured just before it."""

    level: str
    method: str
    num_envs: int
    seconds_per_step: float
    obs_bytes: int
    floor_seconds: float

    @property
    def steps_per_second(self) -> float:
        """Env steps per second, all envs together."""
        return self.num_envs / self.seconds_per_step

    @property
    def floor_multiple(self) -> float:
        """The step's time over the time of writing its observations once."""
        return self.seconds_per_step / self.floor_seconds


def thread_settings() -> str:
    """The thread settings the figures were measured under: CPUs this process may use and the variables set."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    variables = ", ".join(f"{name}={os.environ[name]}" for name in THREAD_VARIABLES if name in os.environ)
    return (
        f"{cpus} CPUs usable by this process; {variables or 'no thread variables set'} (NumPy copies and steps "
        "run on one thread; XLA's CPU client uses its own pool over the usable CPUs)"
    )


def copy_seconds(num_bytes: int, seconds: float) -> float:
    """Median seconds of one plain copy of ``num_bytes`` (rounds of enough copies to last about a millisecond)."""
    source = np.ones(num_bytes, dtype=np.uint8)
    target = np.empty_like(source)
    repeats = max(1, 2**20 // max(num_bytes, 1))

    def run(_: int) -> None:
        for _ in range(repeats):
            np.copyto(target, source)

    seconds_per_round, _ = time_rounds(run, seconds)
    return seconds_per_round / repeats


def single_env_loop(env: Any, num_actions: int, seed: int) -> Callable[[int], None]:
    """A round of ``ACTIONS_PER_ROUND`` random steps, resetting on episode ends."""
    actions = np.random.default_rng(seed).integers(0, num_actions, ACTIONS_PER_ROUND).tolist()
    env.reset(seed=seed)

    def run(_: int) -> None:
        step, reset = env.step, env.reset
        for action in actions:
            _, _, terminated, truncated, _ = step(action)
            if terminated or truncated:
                reset()

    return run


def vector_loop(env: Any, steps_per_round: int, seed: int) -> Callable[[int], None]:
    """A round of ``steps_per_round`` vector steps with pre-drawn random actions (autoresets inside)."""
    actions = np.random.default_rng(seed).integers(0, 5, (steps_per_round, env.num_envs))
    env.reset(seed=seed)

    def run(_: int) -> None:
        step = env.step
        for row in actions:
            step(row)

    return run


def unwrapped_step(env: Any, seconds: float) -> float:
    """Median seconds per step of a single env under random actions (reset inside the loop at episode ends)."""
    run = single_env_loop(env, 5, seed=0)
    run(0)
    seconds_per_round, _ = time_rounds(run, seconds)
    env.close()
    return seconds_per_round / ACTIONS_PER_ROUND


def vector_step(env: Any, seconds: float) -> float:
    """Median seconds per vector step under pre-drawn random actions (autoresets inside the loop)."""
    steps = max(4, min(200, 20_000 // env.num_envs))
    run = vector_loop(env, steps, seed=0)
    run(0)
    seconds_per_round, _ = time_rounds(run, seconds, min_rounds=3)
    env.close()
    return seconds_per_round / steps


def scan_step(params: Any, num_envs: int, seconds: float) -> float:
    """Median seconds per step of ``jit(scan(batch_step))`` with random actions, the observation built each step."""
    import jax
    import jax.numpy as jnp

    from doors_gym.jax import functional as F

    def run(key: Any) -> Any:
        reset_key, loop_key = jax.random.split(key)
        obs, state = F.batch_reset(reset_key, num_envs, params)

        def body(carry: Any, _: None) -> tuple[Any, None]:
            obs, state, key = carry
            key, action_key, step_key = jax.random.split(key, 3)
            actions = (jax.random.bits(action_key, (num_envs,), dtype=jnp.uint32) % jnp.uint32(5)).astype(jnp.int32)
            obs, state, *_ = F.batch_step(step_key, state, actions, params)
            return (obs, state, key), None

        return jax.lax.scan(body, (obs, state, key), None, length=SCAN_STEPS)[0]

    compiled = jax.jit(run)
    keys = jax.random.split(jax.random.key(1), 64)
    jax.block_until_ready(compiled(keys[0]))
    seconds_per_call, _ = time_rounds(lambda index: jax.block_until_ready(compiled(keys[index % 64])), seconds, 3)
    return seconds_per_call / SCAN_STEPS


def measure_level(
    level: str, obs_bytes_per_env: int, methods: list[tuple[str, int, Callable[[], float]]], seconds: float
) -> list[LevelSpeed]:
    """Times each ``(method, num_envs, time_one_step)`` of a level, each just after its floor."""
    rows = []
    for method, num_envs, time_step in methods:
        obs_bytes = num_envs * obs_bytes_per_env
        floor = copy_seconds(obs_bytes, seconds / 2)
        step_seconds = time_step()
        rows.append(LevelSpeed(level, method, num_envs, step_seconds, obs_bytes, floor))
        print(
            f"{level:8s} {method:26s} N={num_envs:5d} {human_rate(rows[-1].steps_per_second):>8s} env-steps/s, "
            f"{1e6 * step_seconds:9.1f} us per step, {rows[-1].floor_multiple:6.1f}x the floor",
            flush=True,
        )
    return rows


def speed_table(rows: list[LevelSpeed]) -> str:
    """The levels' speed as Markdown: one row per level and method, the floor and the multiple beside each."""
    table = [
        [
            row.level,
            row.method,
            row.num_envs,
            f"{row.obs_bytes:,}",
            human_rate(row.steps_per_second),
            f"{1e6 * row.seconds_per_step:.1f}",
            f"{1e6 * row.floor_seconds:.2f}",
            f"{row.floor_multiple:.2f}x",
        ]
        for row in rows
    ]
    headers = ["level", "method", "envs", "obs bytes/step", "env-steps/s", "us/step", "floor us", "x floor"]
    return markdown_table(headers, table)


def now() -> str:
    """The UTC time, for the results' header."""
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
