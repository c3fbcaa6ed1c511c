"""Where a run's time goes: the phase timer of the host loop, and the result with its timings."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

from ..arm import Arm
from ..config import DQNConfig
from ..evaluation import Evaluation
from ..metrics import HistoryRow, Timings, TrainResult

Result = TypeVar("Result")


class PhaseTimer:
    """Seconds per named phase, added up over the calls it times (two clock reads per call).

    A loop calls its phases through :meth:`timed`, so the timing stays out of the algorithm: the
    clock reads cost about 0.1 % of a vector step (see :class:`~doors_gym_baselines.metrics.Timings`).
    """

    def __init__(self, *phases: str) -> None:
        self.seconds = dict.fromkeys(phases, 0.0)

    def timed(self, phase: str, function: Callable[..., Result], *args: Any) -> Result:
        """``function(*args)``, its seconds added to ``phase``."""
        started = time.perf_counter()
        result = function(*args)
        self.seconds[phase] += time.perf_counter() - started
        return result


def finish(
    arm: Arm,
    config: DQNConfig,
    start: float,
    history: list[HistoryRow],
    last: tuple[Evaluation, HistoryRow],
    phases: dict[str, float],
    method: str = "timed in the loop",
    wall_seconds: float | None = None,
    **figures: Any,
) -> TrainResult:
    """The result of a run whose final evaluation is ``last``.

    ``phases`` are the seconds of the timed phases; the rest of the wall time
    (since ``start``, unless ``wall_seconds`` is given) is ``other``. ``figures``
    are the env steps, updates, model, losses and facts.
    """
    evaluation, final = last
    history.append(final)
    wall_seconds = time.perf_counter() - start if wall_seconds is None else wall_seconds
    timings = Timings(**phases, other=max(0.0, wall_seconds - sum(phases.values())), method=method)
    return TrainResult(
        arm=arm.name,
        env_label=arm.env_label,
        config=config,
        evaluation=evaluation,
        rolling_reward=final.rolling_reward,
        wall_seconds=wall_seconds,
        history=history,
        timings=timings,
        **figures,
    )
