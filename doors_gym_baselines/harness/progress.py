"""The progress of a run: a bar for people at a terminal, a line per tenth of the run for logs, and each evaluation
as it happens (greedy success, rolling reward against the level's bar, solved) in both."""

from __future__ import annotations

import dataclasses
import re
import sys
import time
from collections.abc import Iterable
from typing import Any

LOG_LINES = 10
"""Lines a run writes to a log (stderr not a terminal): one each time it passes another tenth of its env steps."""


def in_a_terminal() -> bool:
    """Whether the command writes to a terminal (both streams): progress bars are for people, not logs."""
    return sys.stdout.isatty() and sys.stderr.isatty()


class Progress:
    """A tqdm bar over env steps with SPS and the figures a loop passes (the latest return, epsilon).

    At a terminal, the bar; when the output is a log file or a pipe (which would keep every redraw of a bar), a plain
    line on stderr at each tenth of the run: env steps, seconds, env steps/s, the time left at that rate and the
    figures. Each evaluation (:meth:`evaluated`) is a line of its own in both, and stays on the bar. Silent when
    ``quiet``.
    """

    def __init__(self, total: int, description: str, quiet: bool, done: int = 0) -> None:
        """``done``: env steps already made (a resumed run's), shown from the start and left out of the rate."""
        self._bar = None
        self._lines = not quiet and not in_a_terminal()
        self._total, self._description = max(int(total), 1), description
        self._done, self._start = int(done), time.perf_counter()
        self._resumed_at, self._logged = self._done, min(LOG_LINES, self._done * LOG_LINES // self._total)
        self._quiet = quiet
        self._evaluation: dict[str, str] = {}
        if not quiet and not self._lines:
            from tqdm.auto import tqdm

            self._bar = tqdm(
                total=total, initial=done, desc=description, unit="step", unit_scale=True, dynamic_ncols=True
            )

    def update(self, steps: int, **figures: float) -> None:
        """Advances by ``steps`` env steps and shows ``figures`` (a NaN one is left out)."""
        shown = {key: f"{value:.3g}" for key, value in figures.items() if value == value}
        if self._bar is not None:
            self._bar.update(steps)
            self._bar.set_postfix({**shown, **self._evaluation}, refresh=False)
        self._done += steps
        tenth = min(LOG_LINES, self._done * LOG_LINES // self._total)
        if self._lines and tenth > self._logged:
            self._logged = tenth
            seconds = time.perf_counter() - self._start
            rate = (self._done - self._resumed_at) / seconds if seconds > 0 else float("nan")
            left = (self._total - self._done) / rate if rate > 0 else float("nan")
            extra = "".join(f", {key} {value}" for key, value in shown.items())
            print(
                f"{self._description}: {self._done:,} of {self._total:,} env steps ({self._done / self._total:.0%}), "
                f"{seconds:,.0f} s, {rate:,.0f} env steps/s, {describe_seconds(left)} left{extra}",
                file=sys.stderr,
                flush=True,
            )

    def evaluated(self, row: Any, held: bool) -> None:
        """Shows an evaluation as it happens: ``row`` (a :class:`~doors_gym_baselines.metrics.HistoryRow`, means over
        seeds) its greedy success and rolling reward against the level's bar, whether it is solved there, and
        ``held``: whether the run is solved through its hold-out window (it counts as solved from here)."""
        if self._quiet:
            return
        bar = row.per_seed[0].solved_reward if row.per_seed else float("nan")
        state = "solved and held" if held else "solved" if row.solved else "not solved"
        self._evaluation = {
            "greedy": f"{row.greedy_success_rate:.3f}",
            "rolling": f"{row.rolling_reward:.3f}/{bar:.3f}",
            "state": state.replace(" ", "-"),
        }
        line = (
            f"{self._description}: evaluation at {row.step:,} env steps: greedy success {row.greedy_success_rate:.3f}, "
            f"rolling reward {row.rolling_reward:.4f} (bar {bar:.4f}), {state}"
        )
        if self._bar is not None:
            self._bar.write(line)
        elif self._lines:
            print(line, file=sys.stderr, flush=True)

    def close(self) -> None:
        """Ends the bar."""
        if self._bar is not None:
            self._bar.close()


EVALUATION_LINE = re.compile(
    r"^(?P<description>.+?): evaluation at (?P<step>[\d,]+) env steps: greedy success (?P<greedy>[\d.]+), "
    r"rolling reward (?P<rolling>-?[\d.]+|nan) \(bar (?P<bar>[\d.]+|nan)\), (?P<state>solved and held|solved|not solved)$"
)
"""A line of :meth:`Progress.evaluated` in a log, read back by :func:`read_evaluations`."""


@dataclasses.dataclass(frozen=True)
class LoggedEvaluation:
    """One evaluation as a log line says it (figures rounded as printed; means over seeds in a run of several)."""

    description: str
    step: int
    greedy_success_rate: float
    rolling_reward: float
    solved_reward: float
    solved: bool


def read_evaluations(lines: Iterable[str]) -> list[LoggedEvaluation]:
    """The evaluations of a run's log (its other lines are left out), in order."""
    found = []
    for line in lines:
        match = EVALUATION_LINE.match(line.rstrip("\n"))
        if match:
            found.append(
                LoggedEvaluation(
                    description=match["description"],
                    step=int(match["step"].replace(",", "")),
                    greedy_success_rate=float(match["greedy"]),
                    rolling_reward=float(match["rolling"]),
                    solved_reward=float(match["bar"]),
                    solved=match["state"] != "not solved",
                )
            )
    return found


def describe_seconds(seconds: float) -> str:
    """``seconds`` for a progress line: ``42 s``, ``12 min``, ``2.3 h`` (``?`` when unknown)."""
    if not seconds == seconds or seconds == float("inf"):
        return "? s"
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
