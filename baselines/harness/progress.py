"""The progress bar of a run: for people at a terminal, never for logs."""

from __future__ import annotations

import sys


def in_a_terminal() -> bool:
    """Whether the command writes to a terminal (both streams): progress bars are for people, not logs."""
    return sys.stdout.isatty() and sys.stderr.isatty()


class Progress:
    """A tqdm bar over env steps with SPS and the figures a loop passes (the latest return, epsilon).

    Silent when ``quiet`` and when the output is not a terminal (a log file or a pipe would keep
    every redraw of the bar).
    """

    def __init__(self, total: int, description: str, quiet: bool) -> None:
        self._bar = None
        if not quiet and in_a_terminal():
            from tqdm.auto import tqdm

            self._bar = tqdm(total=total, desc=description, unit="step", unit_scale=True, dynamic_ncols=True)

    def update(self, steps: int, **figures: float) -> None:
        """Advances the bar by ``steps`` env steps and shows ``figures`` (a NaN one is left out)."""
        if self._bar is not None:
            self._bar.update(steps)
            self._bar.set_postfix(
                {key: f"{value:.3g}" for key, value in figures.items() if value == value}, refresh=False
            )

    def close(self) -> None:
        """Ends the bar."""
        if self._bar is not None:
            self._bar.close()
