"""When a run evaluates, whom it tells and when it stops: the evaluation schedule, reports and pruning.

Every loop (the host loop and the fully jitted arm's) evaluates through :class:`EvaluationSchedule`, so the
cadence, the reports to an Optuna trial and the stop when solved are the same in every arm.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Protocol

from ..arm import Arm
from ..config import DQNConfig
from .evaluation import Evaluation
from .metrics import HistoryRow, TrainResult, solved_since
from .result import finish


class NonFiniteLoss(ArithmeticError):
    """A run's loss turned non-finite: it cannot learn further (outside a study; a trial is pruned instead)."""


class Reporter(Protocol):
    """What a run reports its evaluations to (Optuna's ``Trial`` methods, and the score to report)."""

    def observe(self, row: HistoryRow) -> float:
        """Takes an evaluation in (logging it, say) and returns the value to report for it."""

    def report(self, value: float, step: int) -> None:
        """Reports ``value`` at env step ``step`` (``optuna.Trial.report``)."""

    def should_prune(self) -> bool:
        """Whether the run should stop here (``optuna.Trial.should_prune``)."""


class GreedyReward:
    """A plain Optuna trial as a :class:`Reporter`: it is told the greedy per-step reward of each evaluation."""

    def __init__(self, trial: Any) -> None:
        self.trial = trial

    def observe(self, row: HistoryRow) -> float:
        return row.greedy_step_reward

    def report(self, value: float, step: int) -> None:
        self.trial.report(value, step)

    def should_prune(self) -> bool:
        return self.trial.should_prune()


def prune(trial: Reporter | None, message: str) -> None:
    """Ends a run: ``optuna.TrialPruned`` inside a study, :class:`NonFiniteLoss` outside one."""
    if trial is None:
        raise NonFiniteLoss(message)
    import optuna

    raise optuna.TrialPruned(message)


def report(trial: Reporter | None, row: HistoryRow) -> None:
    """Reports an evaluation to ``trial`` and prunes when it says so."""
    if trial is None:
        return
    trial.report(trial.observe(row), step=int(row.step))
    if trial.should_prune():
        prune(trial, f"pruned at step {int(row.step)}")


class EvaluationSchedule:
    """The greedy evaluations of a run: every ``eval_every`` env steps while training, and one at the end.

    ``evaluate(step)`` evaluates the current policy and makes its history row; ``seconds`` is the time
    spent in it. ``progress`` (a :class:`~.progress.Progress`, or None; an attribute, set once the bar is made)
    shows each evaluation as it happens.
    """

    def __init__(
        self,
        evaluate: Callable[[int], tuple[Evaluation, HistoryRow]],
        history: list[HistoryRow],
        trial: Reporter | None,
        config: DQNConfig,
        progress: Any = None,
    ) -> None:
        self._evaluate = evaluate
        self.progress = progress
        self._history = history
        self._trial = trial
        self._config = config
        self._next_step = config.run.eval_every or None
        self._last: tuple[Evaluation, HistoryRow] | None = None
        self.seconds = 0.0

    def _timed(self, step: int) -> tuple[Evaluation, HistoryRow]:
        started = time.perf_counter()
        evaluated = self._evaluate(step)
        self.seconds += time.perf_counter() - started
        return evaluated

    def should_stop(self, global_step: int, more_to_come: bool) -> bool:
        """Evaluates if one is due at ``global_step`` (and training goes on); True when training should stop.

        A mid-training evaluation is recorded and reported to the trial (which
        may prune). A run that stops when solved stops once it has been solved
        at every evaluation of the last ``hold_out_steps`` env steps.
        """
        if self._next_step is None or global_step < self._next_step or not more_to_come:
            return False
        self._next_step += self._config.run.eval_every
        self._last = self._timed(global_step)
        self._history.append(self._last[1])
        run = self._config.run
        held = solved_since(self._history, run.hold_out_steps) is not None
        if self.progress is not None:
            self.progress.evaluated(self._last[1], held)
        report(self._trial, self._last[1])
        return run.stop_when_solved and held

    def state_dict(self) -> dict[str, Any]:
        """What a resumed run needs of the schedule (its history is the caller's): the next evaluation's step,
        the last evaluation and the seconds spent evaluating."""
        return {"next_step": self._next_step, "last": self._last, "seconds": self.seconds}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Goes on from :meth:`state_dict`'s ``state`` (the caller restores the history it shares)."""
        self._next_step, self._last, self.seconds = state["next_step"], state["last"], state["seconds"]

    def final(self, global_step: int) -> tuple[Evaluation, HistoryRow]:
        """The evaluation at the end of training (recorded by :func:`~.timing.finish`).

        A run that stopped at an evaluation ends on that evaluation (taken out
        of the history, where :func:`~.timing.finish` puts it back as the final row).
        """
        if self._last is not None and self._last[1].step == global_step and self._history[-1] is self._last[1]:
            self._history.pop()
            return self._last
        return self._timed(global_step)

    def finish(
        self, arm: Arm, start: float, global_step: int, phases: dict[str, float], method: str, **figures: Any
    ) -> TrainResult:
        """The run's result (:func:`~.result.finish`) once training ended at ``global_step``: the final evaluation
        (:meth:`final`) closes the history, and the seconds spent evaluating are the phase ``evaluation`` beside
        ``phases``; ``method`` says how the phases were timed, ``figures`` are the env steps, updates, model and
        facts."""
        last = self.final(global_step)
        phases = {**phases, "evaluation": self.seconds}
        return finish(arm, self._config, start, self._history, last, phases, method, **figures)
