"""Trials trained together: ``doors-gym tune --trials-per-program K`` asks Optuna for K trials at once and trains
them as the K lanes of one compiled program of an arm that trains seeds together (``flax-scan``).

The first trial of a program samples every coordinate; the others are asked with the coordinates that fix the
program's arrays and control flow (network, batch, buffer, env count, train frequency, optimizer) set to the
first's, and sample the rest (:data:`~doors_gym_baselines.learners.scan_lanes.PER_LANE`), so TPE (with its constant liar)
searches the shapes program by program and the rest lane by lane. Each lane reports its own curve to its trial
at every evaluation; a pruned, failed or solved lane freezes while the others train on.

A lane's clock is the seconds its trial would have taken as a run of its own: the program's compile, its share of
every chunk it trained in (the chunk's seconds over the lanes each device ran) and its own greedy evaluations.
Once enough lanes are frozen the live ones are gathered into a smaller program (``--no-gather-lanes``: never);
the recompile is the study's cost, not a lane's. The confirmation re-trains the best trials as single runs.
"""

from __future__ import annotations

import dataclasses
import math
import threading
import time
import warnings
from collections.abc import Callable
from typing import Any

from .. import tracking
from ..arm import ArmProtocol
from ..config import Config, make_config
from ..harness.metrics import HistoryRow, solved_since
from .objective import record_result, trial_tags
from .options import TuneOptions
from .scores import objective_score
from .space import Space, suggest_hyperparameters
from .study import make_sampler, optuna_quiet


def check_lanes_arm(arm: ArmProtocol, trials_per_program: int) -> None:
    """``ValueError`` unless ``arm`` can train ``trials_per_program`` trials in one program."""
    if trials_per_program > 1 and not (arm.seeds_in_one_run and arm.steps_pure_functions):
        raise ValueError(
            f"trials_per_program={trials_per_program} needs an arm that trains seeds together in one jitted "
            f"program; arm={arm.name!r} trains one run per trial: expected trials_per_program=1"
        )


def heartbeat(study: Any, trials: list[Any]) -> None:
    """Records a heartbeat of each running trial (what ``Study.optimize`` does for its one trial): a program killed
    midway stops beating, and :func:`fail_stale` fails its trials when the study resumes."""
    from optuna.storages._heartbeat import is_heartbeat_enabled

    storage = study._storage  # Optuna's ask-and-tell keeps no heartbeat of its own
    if is_heartbeat_enabled(storage):
        for trial in trials:
            storage.record_heartbeat(trial._trial_id)


class Heartbeat:
    """Beats the trials ``trials()`` returns every ``interval`` seconds from a thread of its own while the ``with``
    block runs (Optuna's ``Study.optimize`` does the same for its one trial): a program's trials keep beating while
    it compiles and between its evaluations, so a worker that starts meanwhile never takes them for a dead one's."""

    def __init__(self, study: Any, trials: Callable[[], list[Any]], interval: float) -> None:
        self.study, self.trials, self.interval = study, trials, interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="doors-gym-heartbeat", daemon=True)

    def __enter__(self) -> Heartbeat:
        heartbeat(self.study, self.trials())
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _beat(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                heartbeat(self.study, self.trials())
            except Exception as error:  # noqa: BLE001 - a locked database: the next beat tries again
                warnings.warn(f"heartbeat not recorded: {type(error).__name__}: {error}", RuntimeWarning, stacklevel=1)


def fail_stale(study: Any) -> None:
    """Fails the trials whose program died (no heartbeat within the grace period) and ends their MLflow runs."""
    import optuna
    from optuna.storages import fail_stale_trials

    from .study import mark_killed_runs

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        fail_stale_trials(study)
    mark_killed_runs(study)


def program_coordinates(space: Space) -> list[str]:
    """The coordinates of ``space`` every lane of a program shares (those that set no per-lane hyperparameter)."""
    from ..learners.scan_lanes import PER_LANE  # JAX loads when lanes are used, not when `tune` is imported

    return [coordinate.name for coordinate in space if coordinate.target not in PER_LANE]


def ask_program(
    study: Any, count: int, base: Config, space: Space, tuning_seeds: int, worker: int = 0
) -> list[tuple[Any, Config]]:
    """Asks up to ``count`` trials of one program: the first samples freely (or is the oldest queued trial), the
    others share its program coordinates.

    The points are drawn by the study's sampler (TPE with its constant liar) from an in-memory copy of the study's
    trials (:func:`sample_points`: against the storage the sampler re-reads its running trials at every
    coordinate; ``benchmarks/lane_program_profile.py`` times both), then asked of the study with their values fixed
    (``PartialFixedSampler``). A queued trial (a failed one queued again, a new study's start point) is asked like
    any other, as whichever lane draws it; one whose program coordinates differ from the first lane's ends the
    program before it and leads a program of its own next: the program is shorter, and the trial keeps its place in
    the queue (drawn by another process in the meantime, it is failed and queued again with its hyperparameters,
    :func:`hand_back`). Returns each trial with its config (trial ``n`` trains seed
    ``base.run.seed + n % tuning_seeds``).
    """
    import optuna

    shared = program_coordinates(space)
    points, sampler = one_program(sample_points(study, count, base, space, worker), shared), study.sampler
    asked: list[tuple[Any, Config]] = []
    try:
        for point in points:
            if asked:  # a lane trains in the first lane's program whatever the copy sampled (another's trials)
                point = {**point, **{name: asked[0][0].params[name] for name in shared}}
            with warnings.catch_warnings():
                # every coordinate is fixed: the base sampler draws none; the heartbeat is ours (heartbeat())
                warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                warnings.filterwarnings("ignore", "Heartbeat of storage is supposed to be used", UserWarning)
                study.sampler = optuna.samplers.PartialFixedSampler(point, optuna.samplers.RandomSampler())
                trial = study.ask()
            heartbeat(study, [trial])
            hyperparameters = suggest_hyperparameters(trial, base.hyperparameters, space)
            if asked and any(trial.params[name] != asked[0][0].params[name] for name in shared):
                hand_back(study, trial)  # another process queued a trial of another program since the points
                break
            seed = base.run.seed + trial.number % tuning_seeds
            asked.append((trial, make_config(hyperparameters, dataclasses.replace(base.run, seed=seed))))
    finally:
        study.sampler = sampler
    return asked


def one_program(points: list[dict[str, Any]], shared: list[str]) -> list[dict[str, Any]]:
    """``points`` up to the first whose program coordinates (``shared``) differ from the first point's: a queued
    trial of another program, which leads a program of its own."""
    for index, point in enumerate(points):
        if any(point.get(name) != points[0].get(name) for name in shared):
            return points[:index]
    return points


def hand_back(study: Any, trial: Any) -> None:
    """Fails ``trial`` (asked, never trained) and queues a copy of it with its hyperparameters and user attributes:
    a queued trial that cannot train in the program that drew it waits for a program of its own."""
    import optuna

    study.enqueue_trial(dict(trial.params), user_attrs={**trial.user_attrs, "handed_back_from": trial.number})
    study.tell(trial, state=optuna.trial.TrialState.FAIL)


def sample_points(study: Any, count: int, base: Config, space: Space, worker: int = 0) -> list[dict[str, Any]]:
    """``count`` points of ``space`` drawn by the study's TPE sampler (with its constant liar; seeded by the run's
    seed, the trials so far and ``worker``) from an in-memory copy of its trials (finished, running and queued, in
    order): the first freely (or the oldest queued one), the others with the program coordinates set to the
    first's, each counted as running while the next is drawn."""
    import optuna

    trials = study.get_trials(deepcopy=False)
    sampler = make_sampler(base.run.seed, len(trials), worker, constant_liar=True)
    with optuna_quiet():
        memory = optuna.create_study(direction=study.direction, sampler=sampler)
    memory.add_trials([trial for trial in trials if trial.state != optuna.trial.TrialState.WAITING])
    for trial in trials:
        if trial.state == optuna.trial.TrialState.WAITING:
            memory.enqueue_trial(trial.system_attrs.get("fixed_params", {}), skip_if_exists=False)
    points: list[dict[str, Any]] = []
    for index in range(count):
        if index:
            memory.enqueue_trial({name: points[0][name] for name in program_coordinates(space)}, skip_if_exists=False)
        trial = memory.ask()
        suggest_hyperparameters(trial, base.hyperparameters, space)
        points.append(dict(trial.params))
    return points


class LaneTrials:
    """The trials of one program as the :class:`~doors_gym_baselines.harness.Reporter` of its training.

    ``lane_configs`` tells the arm to train them as lanes; each evaluation row is split into each lane's own row
    (its clock the program's over the lanes), kept for its trial's nested MLflow run and reported to its trial;
    ``stopped_lanes`` are the pruned, failed and solved ones, which the arm freezes. With ``parent`` (the study's
    MLflow run) each trial gets its nested run now and each lane's rows are logged when it stops; without one (a
    program trained on a Dask worker) nothing is logged here: the driver logs the rows that come back
    (:meth:`create_runs`, :meth:`add_row`).
    """

    def __init__(
        self, asked: list[tuple[Any, Config]], options: TuneOptions, arm: ArmProtocol, parent: str | None
    ) -> None:
        self.trials = [trial for trial, _ in asked]
        self.gather_lanes = options.gather_lanes
        self.lane_configs = [config for _, config in asked]
        self.options = options
        self.histories: list[list[HistoryRow]] = [[] for _ in asked]
        self.unlogged: list[list[Any]] = [[] for _ in asked]
        self.stopped_lanes: set[int] = set()
        self.outcome: dict[int, str] = {}
        self.client: Any = None
        self.run_ids: list[str] = []
        if parent is not None:
            self.create_runs(arm, parent)

    def create_runs(self, arm: ArmProtocol, parent: str, started: float | None = None, **tags: str) -> None:
        """Creates each trial's nested MLflow run under ``parent`` (started at ``started``, seconds since the epoch,
        if given), tagged with ``tags`` over the trial's own, and keeps its id on the trial."""
        import mlflow

        self.client = mlflow.MlflowClient()
        experiment = self.client.get_run(parent).info.experiment_id
        start_time = None if started is None else int(started * 1000)
        for trial, config in zip(self.trials, self.lane_configs):
            run_tags = tracking.run_tags(arm, config.params, **{**trial_tags(trial, self.options.worker), **tags})
            run = self.client.create_run(
                experiment, run_name=f"trial-{trial.number}", start_time=start_time,
                tags={**run_tags, "mlflow.parentRunId": parent},
            )  # fmt: skip
            params = {**tracking.config_params(config), **{f"search.{k}": str(v) for k, v in trial.params.items()}}
            self.client.log_batch(run.info.run_id, params=[mlflow.entities.Param(k, v) for k, v in params.items()])
            trial.set_user_attr("mlflow_run_id", run.info.run_id)
            trial.set_user_attr("worker", self.options.worker)
            trial.set_user_attr("seed", config.run.seed)
            trial.set_user_attr("lanes", len(self.trials))
            self.run_ids.append(run.info.run_id)

    def lane_row(self, row: HistoryRow, index: int) -> HistoryRow:
        """Lane ``index``'s own row of a program's row: its figures and its own clock (the program's compile, its
        share of each chunk it trained in, its own evaluations: see :class:`~..scan_driver.CompiledSeeds`)."""
        mine, nan = row.per_seed[index], math.nan
        return dataclasses.replace(
            row, seconds=mine.seconds, sps=row.step / mine.seconds, greedy_success_rate=mine.greedy_success_rate,
            greedy_step_reward=mine.greedy_step_reward, greedy_normalised_return=mine.greedy_normalised_return,
            rolling_reward=mine.rolling_reward, train_success_rate=nan, train_normalised_return=nan,
            train_episode_return=nan, train_episode_length=nan, per_seed=(mine,),
        )  # fmt: skip

    def live_trials(self) -> list[Any]:
        """The trials of the lanes still training (not pruned, failed or solved)."""
        return [trial for index, trial in enumerate(self.trials) if index not in self.stopped_lanes]

    def observe(self, row: HistoryRow) -> float:
        heartbeat(self.trials[0].study, self.live_trials())
        for index, trial in enumerate(self.trials):
            if index in self.stopped_lanes:
                continue
            self.add_row(index, self.lane_row(row, index))
            trial.report(self.score(index, final=False), int(row.step))
            if trial.should_prune():
                self.stop(index, "pruned")
            elif self.lane_configs[index].run.stop_when_solved and self.solved(index):
                self.stop(index, "solved")
        return math.nan

    def add_row(self, index: int, row: HistoryRow) -> None:
        """Keeps a lane's row for its trial's MLflow run (``step=`` env steps, NaN left out), logged when the lane
        stops (:meth:`log_rows`): one write per lane, not one per lane and evaluation."""
        import mlflow

        self.histories[index].append(row)
        if self.client is None:
            return
        stamp = int(time.time() * 1000)
        self.unlogged[index].extend(mlflow.entities.Metric(k, v, stamp, int(row.step)) for k, v in row.metrics().items())

    def log_rows(self, index: int) -> None:
        """Logs lane ``index``'s rows not logged yet to its trial's MLflow run (none without one)."""
        metrics, self.unlogged[index] = self.unlogged[index], []
        for first in range(0, len(metrics), 1000):  # MLflow's limit of metrics per batch
            self.client.log_batch(self.run_ids[index], metrics=metrics[first : first + 1000])

    def solved(self, index: int) -> bool:
        """Lane ``index`` is solved through its hold-out window (its own run would stop here)."""
        return solved_since(self.histories[index], self.lane_configs[index].run.hold_out_steps) is not None

    def score(self, index: int, final: bool) -> float:
        """The objective's score of lane ``index``'s curve so far."""
        options, run = self.options, self.lane_configs[index].run
        return objective_score(options.objective, self.histories[index], run, final, options.penalty_seconds)

    def stop(self, index: int, outcome: str) -> None:
        self.stopped_lanes.add(index)
        self.outcome[index] = outcome
        self.log_rows(index)

    def lanes_failed(self, indices: list[int]) -> None:
        """Lanes whose loss turned non-finite: their trials are pruned (as a single trial's would be)."""
        for index in indices:
            if index not in self.stopped_lanes:
                self.stop(index, "failed")

    def report(self, value: float, step: int) -> None:
        """The program's row is reported lane by lane in :meth:`observe`."""

    def should_prune(self) -> bool:
        return False


def finish_program(study: Any, lanes: LaneTrials, result: Any) -> None:
    """Tells the study each lane's end: pruned (pruned or failed lanes) or complete with its final score."""
    import optuna

    for index, trial in enumerate(lanes.trials):
        outcome = lanes.outcome.get(index, "trained")
        if outcome == "trained":  # it trained to the end of the program: its final evaluation is its last row
            lanes.add_row(index, lanes.lane_row(result.history[-1], index))
        lanes.log_rows(index)
        if outcome in ("pruned", "failed"):
            lanes.client.set_tag(lanes.run_ids[index], "optuna.state", "PRUNED")
            lanes.client.set_terminated(lanes.run_ids[index], "FINISHED")
            study.tell(trial, state=optuna.trial.TrialState.PRUNED)
            continue
        score = lanes.score(index, final=True)
        lanes.client.log_metric(lanes.run_ids[index], "score", score, step=int(lanes.histories[index][-1].step))
        lane_result = dataclasses.replace(
            result, history=lanes.histories[index], wall_seconds=lanes.histories[index][-1].seconds,
            rolling_reward=lanes.histories[index][-1].rolling_reward,
        )  # fmt: skip
        record_lane(trial, lane_result, lanes.lane_configs[index])
        lanes.client.set_tag(lanes.run_ids[index], "optuna.state", "COMPLETE")
        lanes.client.set_terminated(lanes.run_ids[index], "FINISHED")
        study.tell(trial, score)


def record_lane(trial: Any, result: Any, config: Config) -> None:
    """A lane's wall time, time to solved, solved flag and the env step it was solved from on its trial (its own
    clock)."""
    record_result(trial, result, config.run)
    start = solved_since(result.history, config.run.hold_out_steps)
    trial.set_user_attr("solved", start is not None)
    trial.set_user_attr("solved_step", None if start is None else int(start.step))


def run_programs(study: Any, arm: ArmProtocol, base: Config, options: TuneOptions, space: Space, parent: str) -> None:
    """Trains programs of up to ``options.lanes`` trials until the study has ``n_trials`` finished ones (or
    ``timeout`` passed), asking no more than :func:`~.study.trials_left` (other workers' running lanes count), and
    waiting while the others' lanes run. A program's trials beat from a thread while it compiles and trains
    (:class:`Heartbeat`); a program killed midway stops beating and its trials are failed (and queued again) once
    their heartbeat is stale, by whichever worker looks next."""
    from .study import finished_trials, trials_left

    started = time.perf_counter()
    while len(finished_trials(study)) < options.n_trials:
        if options.timeout is not None and time.perf_counter() - started > options.timeout:
            break
        fail_stale(study)
        left = trials_left(study, options.n_trials)
        if left <= 0:  # the rest run in other workers' programs: wait for them (or for their heartbeats to stop)
            time.sleep(options.heartbeat_interval)
            continue
        asked = ask_program(study, min(left, options.lanes), base, space, options.tuning_seeds, options.worker)
        lanes = LaneTrials(asked, options, arm, parent)
        try:
            with Heartbeat(study, lanes.live_trials, options.heartbeat_interval):
                result = arm.train(asked[0][1], lanes)
        except Exception:
            import optuna

            for index, trial in enumerate(lanes.trials):
                lanes.log_rows(index)
                lanes.client.set_terminated(lanes.run_ids[index], "FAILED")
                study.tell(trial, state=optuna.trial.TrialState.FAIL)
            raise
        finish_program(study, lanes, result)
        if options.verbose:
            print(describe_program(lanes, result), flush=True)


def describe_program(lanes: LaneTrials, result: Any) -> str:
    """One line per program: its trials and how each ended, their own clocks, its wall time and its gathers."""
    ends = [f"{trial.number}: {lanes.outcome.get(index, 'trained')}" for index, trial in enumerate(lanes.trials)]
    clocks = ", ".join(f"{history[-1].seconds:.1f}" if history else "-" for history in lanes.histories)
    gathers = "".join(
        f", {gathered['from_slots']}->{gathered['to_slots']} lanes ({gathered['seconds']:.1f} s)"
        for gathered in result.facts.get("gathers", ())
    )
    return f"program of {len(ends)} trials ({', '.join(ends)}); lane seconds: {clocks}; {result.wall_seconds:.1f} s{gathers}"


__all__ = ["LaneTrials", "ask_program", "check_lanes_arm", "program_coordinates", "run_programs"]
