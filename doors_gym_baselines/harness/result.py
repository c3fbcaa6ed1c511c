"""The result of a run: its final evaluation, its learning curve and where its time went."""

from __future__ import annotations

import time
from typing import Any

from ..arm import Arm, env_label_at
from ..config import DQNConfig
from .evaluation import Evaluation
from .metrics import HistoryRow, Timings, TrainResult


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
        env_label=env_label_at(arm, config.params),
        config=config,
        evaluation=evaluation,
        rolling_reward=final.rolling_reward,
        wall_seconds=wall_seconds,
        history=history,
        timings=timings,
        **figures,
    )
