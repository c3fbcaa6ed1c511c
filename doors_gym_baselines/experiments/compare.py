"""``doors-gym compare``: every stack trained over several seeds, side by side, beside the study's Table 2.

In three steps: :func:`plan` turns the options into the runs to make (:class:`Plan`: per arm, a row of one
run per seed, and for an arm that trains seeds together a row of one run of them all); :func:`make_runs`
makes them (a finished run's figures are reused from ``--out``) and registers each arm's champion;
:func:`report` writes the tables and plots. :func:`compare` does the three inside the comparison's MLflow
parent run.

For each arm (torch x Doors-v0, Flax x Doors-v0, Flax x DoorsJax-v0 and the
fully jitted Flax arm by default) it trains ``--seeds`` seeds with a preset's
hyperparameters and budget (each arm's own tuned preset by default; see
:mod:`doors_gym_baselines.presets`), on seeds other than the tuning seeds
(100-109 by default; tuning trains 0-9), evaluates the greedy policy from every start/goal pair
(episodes never used for training), and writes under ``--out`` the tables and
the plot of :mod:`doors_gym_baselines.reporting`, and ``runs/*.json``: each
finished (arm, seeds) run, so a killed comparison resumes where it stopped (a
run is reused only if its config is identical).

Everything is logged to MLflow: a parent run per comparison, a nested run per
training (params, metrics with ``step=`` env steps, tags, model), and the
tables and plot as artifacts of the parent.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import pathlib
import sys
import tempfile
import time
import types
import warnings
from collections.abc import Sequence
from typing import Any, ClassVar

import doors_gym
from doors_gym.levels import LEVEL_NAMES, STUDY

from .. import reporting, tracking
from ..arm import ArmProtocol
from ..arms import ARMS, get_arm
from ..config import Config, DQNConfig, RunSettings, check_at_least, check_choice, check_folder, field
from ..config.options import RunsOptions
from ..config.seeds import FIRST_EVALUATION_SEED
from ..harness.checkpoint import CHECKPOINT_SUFFIX
from ..harness.metrics import TrainResult
from ..levels import TrainingLevel
from ..presets import RUN_FIELDS, SHARED, Preset, check_preset, hyperparameters_of, preset_field, tuned_path
from ..reporting import best_seed
from ..serving import NATIVE_FLAVOURS, load_model, log_model_file, native_model, register_champion
from .executors import LOCAL_WORKER, RETRIED_TAG, Executor, Job, LocalExecutor, RunsFailed, Trained, job_key
from .executors import describe as describe_executor

DEFAULT_ARMS = ("torch-numpy", "flax-numpy", "flax-jax", "flax-scan")
DEFAULT_EXPERIMENT = "doors-gym-compare"
SHARED_RUN_FIELDS = tuple(
    spec.name
    for spec in dataclasses.fields(RunSettings)
    if spec.name not in (*RUN_FIELDS, "seed", "num_seeds", "env_id")
)
"""The run settings every arm of a comparison shares (its presets set the budget, the arms the env)."""
FIRST_SEED = FIRST_EVALUATION_SEED
"""Compare seeds start here; every choice (tuning trains on seeds 0-9) is made below."""


@dataclasses.dataclass(frozen=True)
class CompareOptions(RunsOptions):
    """Settings of one comparison (the ``doors-gym compare`` flags)."""

    EXPERIMENT: ClassVar[str] = DEFAULT_EXPERIMENT
    OUT: ClassVar[str] = "out/compare"
    MODELS: ClassVar[bool] = True

    arms: tuple[str, ...] = field(DEFAULT_ARMS, f"arms to train, among {', '.join(ARMS)}")
    preset: str = preset_field("every arm")
    seeds: int = field(10, "seeds per arm")
    first_seed: int = field(FIRST_SEED, f"first seed (choices are made below {FIRST_SEED}: tuning trains on seeds 0-9; so {FIRST_SEED} and up)")
    total_steps: int | None = field(None, "env steps per seed (default: the preset's)")
    eval_every: int | None = field(None, "env steps between evaluations (default: the preset's)")
    checkpoint_dir: str | None = field(
        None,
        "folder of the resumable runs' checkpoints (flax-scan's), one every worker reaches at the same path (a "
        "shared filesystem) so that a run retried on another host goes on from its last segment "
        "(default: <out>/runs); made absolute here",
    )
    together: bool = field(
        True, "also train the seeds of an arm that can train them together in one run, as a row of its own"
    )
    level: str = field(
        STUDY,
        "the level every arm trains at, each stepping its own backend's id of it (study: Doors-v0); at a level "
        "other than the study's, 'tuned' is the arm's tuned preset there (hyperparams/<level>/<arm>.yml, written "
        "by tune --level) where it exists, else, as 'shared' always is, the level's shared preset "
        "(hyperparams/level-<level>.yml)",
        choices=LEVEL_NAMES,
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.arms:
            raise ValueError("arms=() is empty: expected one or more of " + str(list(ARMS)))
        for arm in self.arms:
            check_choice("arms", arm, tuple(ARMS))
        if len(set(self.arms)) != len(self.arms):
            raise ValueError(f"arms={list(self.arms)} repeats an arm: expected each arm once")
        check_preset(self.preset)
        check_choice("level", self.level, LEVEL_NAMES)
        if self.checkpoint_dir is not None:
            check_folder("checkpoint_dir", self.checkpoint_dir)
        check_at_least("seeds", self.seeds, 1)
        check_at_least("first_seed", self.first_seed, 1)
        for name in ("total_steps", "eval_every"):
            if getattr(self, name) is not None:
                check_at_least(name, getattr(self, name), 1)

    def training_level(self, run: RunSettings | None = None) -> TrainingLevel:
        """The comparison's level (:class:`~doors_gym_baselines.levels.TrainingLevel`): at the study's level,
        ``run``'s layout (the layout flags'; default: the defaults), at another the level's own."""
        return TrainingLevel.named(self.level, run)

    def preset_config(
        self, arm: str, run: RunSettings | None = None, level: TrainingLevel | None = None
    ) -> tuple[Config, Preset]:
        """``arm``'s preset over ``run`` (layout and machinery) at the comparison's level (``level``, default
        :meth:`training_level`), with the budget overrides, and the preset.

        The level's layout and time limit replace ``run``'s, and the preset is read there
        (:meth:`TrainingLevel.preset <doors_gym_baselines.levels.TrainingLevel.preset>`: at a level other than the
        study's, ``tuned`` is the arm's tuned preset there where one was written, else the level's shared preset)."""
        level = level or self.training_level(run)
        preset = level.preset(self.preset, arm)
        config = preset.config(level.at(run or RunSettings()), hyperparameters_of(arm))
        budget = {
            name: getattr(self, name) for name in ("total_steps", "eval_every") if getattr(self, name) is not None
        }
        budget["eval_every"] = min(
            budget.get("eval_every", config.run.eval_every), budget.get("total_steps", config.run.total_steps)
        )
        return config.replace(**budget), preset

    @property
    def run_name(self) -> str:
        """The name of the comparison's MLflow parent run (its level's name after the preset's, off the study)."""
        if self.level == STUDY:
            return f"compare-{pathlib.Path(self.preset).stem}"
        # "tuned" is the level's shared preset there, unless an arm has a tuned preset at the level.
        tuned = self.preset == "tuned" and any(tuned_path(arm, self.level).exists() for arm in self.arms)
        name = "tuned" if tuned else SHARED if self.preset in ("tuned", SHARED) else pathlib.Path(self.preset).stem
        return f"compare-{name}-{self.level}"

    @property
    def seed_list(self) -> list[int]:
        return list(range(self.first_seed, self.first_seed + self.seeds))

    @property
    def checkpoint_folder(self) -> pathlib.Path:
        """Where the resumable runs' checkpoints go, as an absolute path (a worker's own folder is not the driver's):
        ``checkpoint_dir``, else ``<out>/runs``."""
        folder = self.checkpoint_dir if self.checkpoint_dir is not None else pathlib.Path(self.out) / "runs"
        return pathlib.Path(os.path.abspath(folder))


@dataclasses.dataclass(frozen=True)
class PlannedRun:
    """One training to make: an arm's config with its seeds set, and the file its finished figures go to."""

    config: Config
    cache: pathlib.Path

    @property
    def seeds(self) -> list[int]:
        return self.config.seeds


@dataclasses.dataclass(frozen=True)
class PlannedRow:
    """A row of the table to fill: the arm's row (its figures empty until its runs are made) and those runs."""

    row: reporting.ArmRuns
    runs: tuple[PlannedRun, ...]

    @property
    def registers_champion(self) -> bool:
        """Whether its best seed becomes the arm's champion: a row of a run per seed does (seeds trained
        together are other work)."""
        return not self.row.seeds_in_one_run


@dataclasses.dataclass(frozen=True)
class Plan:
    """What a comparison makes: its options, the layout every arm shares, and the rows in table order."""

    options: CompareOptions
    base: Config
    """The layout and machinery (the oracle's row and the table's notes)."""
    rows: tuple[PlannedRow, ...]


def plan(options: CompareOptions, run: RunSettings | None = None, level: TrainingLevel | None = None) -> Plan:
    """The runs of a comparison over ``run`` (layout and machinery) at ``level`` (default: the options',
    :meth:`CompareOptions.training_level`): per arm its preset's config and a row of a run per seed, and for an
    arm that trains seeds together (and several seeds) a row of one run of them all.

    An arm trains one seed per run as every arm does; its row of seeds trained together under one ``vmap`` is a
    row of its own, never the arm's row (a run of ten seeds is other work than ten runs).

    Raises:
        ValueError: where ``level`` is not the level ``options.level`` names.
    """
    level = level or options.training_level(run)
    if level.name != options.level:
        raise ValueError(f"level={level.name!r} is not the comparison's: expected {options.level!r}")
    rows = []
    for arm in map(get_arm, options.arms):
        config, preset = options.preset_config(arm.name, run, level)
        warn_seen_seeds(preset, options.seed_list)
        config = arm.configure(config)
        each = reporting.ArmRuns(arm, preset.label, config, seeds=())
        rows.append(PlannedRow(each, planned_runs(options, arm, config, [[seed] for seed in options.seed_list])))
        if arm.seeds_in_one_run and options.seeds > 1 and options.together:
            together = dataclasses.replace(each, seeds_in_one_run=options.seeds)
            rows.append(PlannedRow(together, planned_runs(options, arm, config, [options.seed_list])))
    return Plan(options, DQNConfig(run=level.at(run or RunSettings())), tuple(rows))


def warn_seen_seeds(preset: Preset, seeds: list[int]) -> None:
    """Warns where ``seeds`` include a seed ``preset`` was chosen on: a figure there is no report on unseen seeds."""
    seen = sorted(set(preset.chosen_on) & set(seeds))
    if seen:
        warnings.warn(
            f"preset {preset.label} was chosen on seeds {seen}, which this run evaluates: its figures there are not "
            f"a report on unseen seeds (use --first-seed {max(max(preset.chosen_on) + 1, FIRST_SEED)} or above)",
            UserWarning,
            stacklevel=3,
        )


def planned_runs(
    options: CompareOptions, arm: ArmProtocol, config: Config, groups: list[list[int]]
) -> tuple[PlannedRun, ...]:
    """A run per group of seeds, its figures cached as ``<out>/runs/<arm>-seed<first>[-<last>].json``; a resumable
    arm's run saves its state as it trains, under the same name in :attr:`CompareOptions.checkpoint_folder`
    (``.ckpt``, removed when the run ends), so that the comparison started again after a kill, or the run retried
    on another worker, goes on from there."""
    runs = []
    for group in groups:
        label = f"{group[0]}" if len(group) == 1 else f"{group[0]}-{group[-1]}"
        cache = pathlib.Path(options.out) / "runs" / f"{arm.name}-seed{label}.json"
        checkpoint = None
        if getattr(arm, "resumable", False):
            checkpoint = str(options.checkpoint_folder / cache.with_suffix(CHECKPOINT_SUFFIX).name)
        runs.append(PlannedRun(config.replace(seed=group[0], num_seeds=len(group), checkpoint=checkpoint), cache))
    return tuple(runs)


@dataclasses.dataclass(frozen=True)
class MadeRun:
    """A finished run: each seed's figures, and the model logged for its best seed (if any)."""

    seeds: list[reporting.SeedRun]
    model_uri: str | None


def make_runs(plan: Plan, executor: Executor | None = None) -> list[reporting.ArmRuns]:
    """Makes every planned run (reusing finished ones unless ``fresh``) with ``executor`` (default: one after
    another here), records each as it finishes (:func:`record_run`), then registers each arm's best seed as its
    champion; the rows' figures.

    Raises:
        RunsFailed: after the others finished, naming the runs that raised (a rerun trains only those).
    """
    executor = executor or LocalExecutor()
    made = finished_runs(plan, report=True)
    jobs, origins = [], {}
    for planned, run, job in missing_jobs(plan, made):
        jobs.append(job)
        origins[job.key] = (planned.row.hyperparameters, run)
    if plan.options.fresh:  # no run goes on from a killed one either (a run sent ahead had its own cleared before)
        executor.clear(checkpoints(plan, [job.key for job in jobs if not executor.submitted(job.key)]))
    if jobs:
        print(f"training {len(jobs)} run{'s' if len(jobs) > 1 else ''}: {describe_executor(executor)}", flush=True)

    finished = []

    def done(job: Job, trained: Trained) -> None:
        origin, run = origins[job.key]
        finished.append(job.key)
        made[run.cache] = record_run(job, trained, origin, run, f"{len(finished)} of {len(jobs)} done")

    failures = executor.run(jobs, done)
    if failures:
        raise RunsFailed(failures)
    return [champion_row(planned, [made[run.cache] for run in planned.runs]) for planned in plan.rows]


def finished_runs(plan: Plan, report: bool = False) -> dict[pathlib.Path, MadeRun]:
    """The plan's runs that finished before with the same config (none with ``fresh``), by cache file; ``report``
    prints a line for each."""
    made = {}
    for planned in plan.rows:
        for run in planned.runs:
            cached = None if plan.options.fresh else load_cached(run)
            if cached is not None:
                if report:
                    print(f"  {planned.row.arm.name} {describe_seeds(run.seeds)}: reusing {run.cache}", flush=True)
                made[run.cache] = cached
    return made


def checkpoints(plan: Plan, keys: Sequence[str] | None = None) -> list[str]:
    """The checkpoint files of the plan's resumable runs (of the runs whose task keys are ``keys``, if given)."""
    paths = []
    for planned, run, job in missing_jobs(plan, {}):
        if run.config.run.checkpoint and (keys is None or job.key in keys):
            paths.append(run.config.run.checkpoint)
    return paths


def missing_jobs(
    plan: Plan, made: dict[pathlib.Path, MadeRun] | None = None
) -> list[tuple[PlannedRow, PlannedRun, Job]]:
    """The job of each planned run not in ``made`` (default: the runs that finished before), with its row and run."""
    made = finished_runs(plan) if made is None else made
    missing = []
    for planned in plan.rows:
        arm = planned.row.arm
        for run in planned.runs:
            if run.cache not in made:
                key = job_key(run.cache, run.config.to_dict(), plan.options.models)
                reference = arm.name if ARMS.is_installed(arm.name) else arm
                label = f"{arm.name} {describe_seeds(run.seeds)} at {plan.options.level}"  # a ladder mixes levels
                missing.append((planned, run, Job(key, reference, run.config, plan.options.models, label)))
    return missing


def champion_row(planned: PlannedRow, made: Sequence[MadeRun]) -> reporting.ArmRuns:
    """The row's figures; a row of a run per seed registers its best seed's model as the arm's champion."""
    arm = planned.row.arm
    models = [(run.seeds[best_seed(run.seeds)], run.model_uri) for run in made if run.model_uri]
    if planned.registers_champion and models:
        champion, model_uri = models[best_seed([seed for seed, _ in models])]
        version = register_champion(arm, model_uri)
        print(f"  {arm.name}: seed {champion.seed} registered as version {version} of doors-{arm.name}@champion")
    return dataclasses.replace(planned.row, seeds=tuple(seed for run in made for seed in run.seeds))


def record_run(job: Job, trained: Trained, origin: str, planned: PlannedRun, tally: str = "") -> MadeRun:
    """The driver's record of a finished run, wherever it trained: a nested MLflow run (from when training
    started; params, the host and worker that ran it, curve, finals, the best seed's model from its file) and
    the resume cache."""
    arm, result = get_arm(job.arm) if isinstance(job.arm, str) else job.arm, trained.result
    retried = {RETRIED_TAG: ",".join(trained.lost_on)} if trained.lost_on else {}
    with tracking.tracked_run(
        arm, planned.config, nested=True, started=trained.started, hyperparameters=origin, worker=trained.worker,
        **retried,
    ) as tracked:
        import mlflow

        mlflow.log_params({"host": trained.host, "worker": trained.worker})
        tracking.log_result(result)
        if trained.model_file is not None:
            with tempfile.TemporaryDirectory() as folder:
                path = pathlib.Path(folder) / "model.bin"
                path.write_bytes(trained.model_file)
                tracked.log_models(result, trained.model_seed, file_logger(arm, path))
    made = MadeRun(trained.figures, tracked.model_uri)
    planned.cache.parent.mkdir(parents=True, exist_ok=True)
    seeds = [seed.to_dict() for seed in made.seeds]
    saved = {"config": planned.config.outcome_key(), "model_uri": made.model_uri, "seeds": seeds}
    planned.cache.write_text(json.dumps(saved, indent=1))
    where = "" if trained.worker == LOCAL_WORKER else f" on {trained.host} ({trained.worker})"
    if trained.lost_on:
        where += f", run again after losing worker {' and '.join(trained.lost_on)}"
    tally = f" ({tally})" if tally else ""
    print(f"  {job.label}: {result.wall_seconds:.1f} s{where}, {describe_rolling(made.seeds)}{tally}", flush=True)
    return made


def file_logger(arm: ArmProtocol, path: pathlib.Path) -> Any:
    """Logs the model file ``path`` (a worker's best seed) as a seed's model: the :data:`tracking.ModelLogger` of a
    run whose model object stayed where it trained (its native flavour is rebuilt from the file)."""

    def log_one(result: TrainResult, _seed_index: int) -> str:
        native = None
        if arm.framework in NATIVE_FLAVOURS:
            _, model, _ = load_model(path, arm)
            native = native_model(arm, dataclasses.replace(result, model=model), 0)
        return log_model_file(arm, path, result.config.params, native)

    return log_one


def load_cached(planned: PlannedRun) -> MadeRun | None:
    """A finished run's per-seed figures and model URI, if its cache holds them for the same config."""
    if not planned.cache.exists():
        return None
    try:
        saved = json.loads(planned.cache.read_text())
    except json.JSONDecodeError:
        return None
    if not planned.config.same_outcome(saved.get("config")):
        return None
    return MadeRun([reporting.SeedRun.from_dict(seed) for seed in saved["seeds"]], saved.get("model_uri"))


def describe_seeds(seeds: Sequence[int]) -> str:
    """``seed 100``, or ``seeds 100-109`` for seeds trained together (consecutive), for a progress line."""
    return f"seed {seeds[0]}" if len(seeds) == 1 else f"seeds {seeds[0]}-{seeds[-1]}"


def describe_rolling(figures: Sequence[reporting.SeedRun]) -> str:
    """One seed's rolling reward, or the range of several, for a progress line that fits a terminal."""
    rewards = [seed.rolling_reward for seed in figures]
    if len(rewards) == 1:
        return f"rolling reward {rewards[0]:.3f}"
    return f"rolling reward {min(rewards):.3f}-{max(rewards):.3f}"


@dataclasses.dataclass
class Report:
    """The comparison's report: the summary rows, the oracle's row, the Markdown table and the files written."""

    rows: list[reporting.Summary]
    oracle: dict[str, float]
    table: str
    paths: dict[str, pathlib.Path]


@dataclasses.dataclass
class Outcome(Report):
    """What :func:`compare` returns: the report, and the comparison's MLflow parent run and experiment."""

    run_id: str = ""
    experiment_id: str | None = None


def report(plan: Plan, results: Sequence[reporting.ArmRuns]) -> Report:
    """Summarises the rows over their seeds and writes the tables, the CSVs and the plots under ``--out``."""
    rows = reporting.summarise_all(list(results))
    oracle = reporting.oracle_row(plan.base.params)
    table = reporting.markdown_table(rows, oracle, plan.base, reporting.machine_line())
    published = reporting.is_study_layout(plan.base)
    paths = reporting.write_all(pathlib.Path(plan.options.out), table, rows, oracle, list(results), published)
    return Report(rows, oracle, table, paths)


def log_report(written: Report) -> None:
    """Logs the report to the active (parent) run: its files as artifacts, each row's figures as metrics."""
    import mlflow

    for path in written.paths.values():
        mlflow.log_artifact(str(path))
    for row in written.rows:
        mlflow.log_metrics(
            {
                f"{row.key}.rolling_reward_mean": row.rolling_reward.mean,
                **{f"{row.key}.{name}_iqm": value.iqm for name, value in row.intervals.items()},
                f"{row.key}.greedy_success_rate_mean": row.greedy_success_rate.mean,
                f"{row.key}.wall_seconds_total": row.wall_seconds_total,
                f"{row.key}.env_steps_per_second": row.env_steps_per_second,
                **{f"{row.key}.seconds_{name}": value for name, value in row.phases.items()},
            }
        )


def parent_run_params(plan: Plan) -> dict[str, str]:
    """The parent run's params: the arms, the preset, the seeds, and the layout and machinery every arm shares
    (each arm's hyperparameters and budget are on its nested runs)."""
    options = plan.options
    shared = {key: value for key, value in tracking.config_params(plan.base).items() if key in SHARED_RUN_FIELDS}
    seeds = ",".join(map(str, options.seed_list))
    return {"arms": ",".join(options.arms), "preset": options.preset, "level": options.level, "seeds": seeds, **shared}


def compare(
    options: CompareOptions,
    run: RunSettings | None = None,
    executor: Executor | None = None,
    level: TrainingLevel | None = None,
) -> Outcome:
    """Runs the comparison over ``run`` (layout and machinery) at ``level`` (default: the options'): plans it,
    makes its runs with ``executor`` (default: one after another here) inside its MLflow parent run, writes and
    logs the report.

    A comparison made again (the same folder, parent run name and run configs; not ``fresh``) continues its own
    parent run, killed or finished, so every run of it sits under one parent."""
    pathlib.Path(options.out).mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    planned = plan(options, run, level)
    with tracking.quiet_mlflow():
        import mlflow

        experiment_id = tracking.connect(options.tracking_uri, options.experiment)
        tags = {
            "doors_gym.version": doors_gym.__version__,
            "git_commit": tracking.git_commit(),
            "doors_gym.role": "compare",
            tracking.PROCESS_TAG: tracking.this_process(),
        }
        parent = parent_run(options, experiment_id, comparison_key(planned), tags)
        try:
            mlflow.log_params(parent_run_params(planned))
            written = report(planned, make_runs(planned, executor))
            log_report(written)
            mlflow.log_metric("compare_wall_seconds", time.perf_counter() - start)
        except BaseException as error:
            mlflow.end_run(status=tracking.ended_status(error))
            raise
        mlflow.end_run()
    return Outcome(**vars(written), run_id=parent.info.run_id, experiment_id=experiment_id)


COMPARISON_TAG = "doors_gym.comparison"
"""The tag of a comparison's parent run that says which comparison it is (:func:`comparison_key`)."""


def comparison_key(planned: Plan) -> str:
    """What makes a comparison the same one again: its folder, its parent run's name and every run's arm and
    config (two arms share a config: a comparison of one must not continue the other's parent run)."""
    runs = [[row.row.arm.name, each.config.outcome_key()] for row in planned.rows for each in row.runs]
    body = [str(pathlib.Path(planned.options.out).resolve()), planned.options.run_name, runs]
    return hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode()).hexdigest()[:24]


def parent_run(options: CompareOptions, experiment_id: str, key: str, tags: dict[str, str]) -> Any:
    """The comparison's parent run, started: the latest one of the same comparison (``key``) if there is one and
    the runs are not ``fresh`` (a killed comparison resumed, a finished one made again), else a new one."""
    import mlflow

    if not options.fresh:
        query = f"tags.`{COMPARISON_TAG}` = '{key}'"
        found = mlflow.MlflowClient().search_runs(
            [experiment_id], query, max_results=1, order_by=["attributes.start_time DESC"]
        )
        if found:
            parent = mlflow.start_run(run_id=found[0].info.run_id)
            mlflow.set_tags(tags)  # this process now holds it
            print(f"MLflow: continuing the parent run {options.run_name} ({found[0].info.run_id})", flush=True)
            return parent
    return mlflow.start_run(run_name=options.run_name, tags={**tags, COMPARISON_TAG: key})


def compare_arms(arms: Sequence[ArmProtocol | str], run: RunSettings | None = None, **options: Any) -> Outcome:
    """Compares ``arms``: installed arms by name, or arm objects (:class:`~doors_gym_baselines.arm.ArmProtocol`)
    straight from a notebook, with ``options`` (the fields of :class:`CompareOptions`) over ``run``.

    The module is callable as this function: ``doors_gym_baselines.compare([my_arm, "torch-numpy"], seeds=3)``.
    """
    names = []
    for arm in arms:
        if not isinstance(arm, str):
            ARMS.add(arm)
            arm = arm.name
        names.append(arm)
    return compare(CompareOptions(arms=tuple(names), **options), run)


class _CallableModule(types.ModuleType):
    """This module, callable as :func:`compare_arms` (``doors_gym_baselines.compare(...)``)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Outcome:
        return compare_arms(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
