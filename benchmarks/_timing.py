"""Shared timing helpers for the benchmark scripts (not part of the package)."""

from __future__ import annotations

import dataclasses
import pathlib
import platform
import statistics
import time
from collections.abc import Callable, Sequence

import numpy as np


@dataclasses.dataclass
class Measurement:
    """One timed configuration: a round of ``env_steps`` environment steps took ``seconds`` (median round)."""

    name: str
    num_envs: int
    env_steps: int
    seconds: float
    rounds: int = 1

    @property
    def steps_per_second(self) -> float:
        """Environment steps per second (summed over the envs of a vector)."""
        return self.env_steps / self.seconds


def time_rounds(step: Callable[[int], None], min_seconds: float, min_rounds: int = 5) -> tuple[float, int]:
    """Runs ``step(round_index)`` until ``min_seconds`` and ``min_rounds`` are both reached.

    Returns ``(median seconds per round, rounds)``: the median keeps a burst of
    load from another process on a shared machine out of the figure.
    """
    durations = []
    total = 0.0
    while total < min_seconds or len(durations) < min_rounds:
        start = time.perf_counter()
        step(len(durations))
        durations.append(time.perf_counter() - start)
        total += durations[-1]
    return statistics.median(durations), len(durations)


def medians_in_turn(timers: dict[str, Callable[..., float]], rounds: int, *args: object) -> dict[str, float]:
    """Each timer's median over ``rounds`` rounds, the timers called in turn within a round (``timer(*args)``), so
    load from elsewhere falls on every one alike."""
    times: dict[str, list[float]] = {name: [] for name in timers}
    for _ in range(rounds):
        for name, timer in timers.items():
            times[name].append(timer(*args))
    return {name: statistics.median(values) for name, values in times.items()}


def machine_line() -> str:
    """A one-line description of where the figures were measured."""
    import os

    processor = platform.processor() or platform.machine()
    return f"{processor}, {os.cpu_count()} cores, Python {platform.python_version()}, NumPy {np.__version__}"


def verdict(value: float, target: float) -> str:
    """``'met'`` when ``value >= target``, else ``'MISSED'``."""
    return "met" if value >= target else "MISSED"


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[object]], left: int = 1) -> str:
    """A GitHub-flavoured Markdown table: its first ``left`` columns aligned left, the rest right."""
    lines = [
        "| " + " | ".join(headers) + " |",
        "|" + "|".join("---" if i < left else "---:" for i in range(len(headers))) + "|",
    ]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def human_rate(value: float) -> str:
    """``1234567`` -> ``'1.23M'``."""
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if value >= scale:
            return f"{value / scale:.3g}{unit}"
    return f"{value:.3g}"


def ms_per_call(step: Callable[[], object], finish: Callable[[object], object], min_seconds: float,
                warmup: int = 20) -> float:  # fmt: skip
    """Milliseconds per call of ``step``, after ``warmup`` calls, over at least ``min_seconds`` (and 20 calls);
    ``finish(last)`` waits for work a call queued (a JAX array, a torch loss)."""
    for _ in range(warmup):
        last = step()
    finish(last)
    calls, start = 0, time.perf_counter()
    while True:
        for _ in range(20):
            last = step()
        calls += 20
        finish(last)
        elapsed = time.perf_counter() - start
        if elapsed >= min_seconds:
            return 1e3 * elapsed / calls


def write_report(path: pathlib.Path, command: str, intro: str, headers: Sequence[str], rows: Sequence) -> str:
    """Writes a benchmark's Markdown: the command that made it, what it measured, the table; returns the text."""
    text = "\n".join([f"# `{command}`", "", intro, "", markdown_table(headers, rows), ""])
    path.write_text(text)
    return text


GENERATED = ("<!-- --8<-- [start:generated] -->", "<!-- --8<-- [end:generated] -->")
"""The markers around a script's part of a results page (a snippet section the docs include by name,
``--8<-- "page.md:generated"``): the page's question, conditions and reading around it are a person's."""


def write_generated(path: pathlib.Path, block: str, title: str) -> str:
    """Writes ``block`` between the :data:`GENERATED` markers of the page at ``path``, keeping the text around them;
    a page without them is written anew as ``title`` and the block. Returns the page."""
    start, end = GENERATED
    old = path.read_text() if path.exists() else ""
    if start in old and end in old:
        text = old[: old.index(start) + len(start)] + "\n" + block.strip() + "\n" + old[old.index(end) :]
    else:
        text = f"# {title}\n\n{start}\n{block.strip()}\n{end}\n"
    path.write_text(text)
    return text
