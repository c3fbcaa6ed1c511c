"""Shared timing helpers for the benchmark scripts (not part of the package)."""

from __future__ import annotations

import dataclasses
import platform
import time
from collections.abc import Callable, Sequence

import numpy as np


@dataclasses.dataclass
class Measurement:
    """One timed configuration: ``env_steps`` environment steps in ``seconds``."""

    name: str
    num_envs: int
    env_steps: int
    seconds: float

    @property
    def steps_per_second(self) -> float:
        """Environment steps per second (summed over the envs of a vector)."""
        return self.env_steps / self.seconds


def time_calls(step: Callable[[int], None], calls_per_round: int, min_seconds: float) -> tuple[int, float]:
    """Runs ``step(round_index)`` rounds until ``min_seconds`` pass; returns ``(calls, seconds)``.

    ``step(i)`` must run ``calls_per_round`` calls; rounds keep the clock reads
    off the hot path.
    """
    calls = 0
    rounds = 0
    start = time.perf_counter()
    while True:
        step(rounds)
        rounds += 1
        calls += calls_per_round
        elapsed = time.perf_counter() - start
        if elapsed >= min_seconds:
            return calls, elapsed


def machine_line() -> str:
    """A one-line description of where the figures were measured."""
    import os

    return f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, NumPy {np.__version__}"


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A GitHub-flavoured Markdown table."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---:" if i else "---" for i in range(len(headers))) + "|"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def human_rate(value: float) -> str:
    """``1234567`` -> ``'1.23M'``."""
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if value >= scale:
            return f"{value / scale:.3g}{unit}"
    return f"{value:.3g}"
