"""``doors-gym compare``: every stack trained over several seeds, side by side, beside the study's Table 2.

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
import json
import pathlib
import sys
import time
import types
from collections.abc import Sequence
from typing import Any

import doors_gym

from . import reporting, tracking
from .arms import ARMS, Arm, ArmProtocol, get_arm
from .config import DQNConfig, RunSettings, check_at_least, check_choice, field
from .presets import RUN_FIELDS, Preset, check_preset, load_preset, preset_field
from .metrics import TrainResult, seconds_to_first_window, seconds_to_solved

DEFAULT_ARMS = ("torch-numpy", "flax-numpy", "flax-jax", "flax-scan")
DEFAULT_EXPERIMENT = "doors-gym-compare"
SHARED_RUN_FIELDS = tuple(
    spec.name
    for spec in dataclasses.fields(RunSettings)
    if spec.name not in (*RUN_FIELDS, "seed", "num_seeds", "env_id")
)
"""The run settings every arm of a comparison shares (its presets set the budget, the arms the env)."""
FIRST_SEED = 100
"""Compare seeds start here; tuning trains on seeds 0-9."""


@dataclasses.dataclass(frozen=True)
class CompareOptions:
    """Settings of one comparison (the ``doors-gym compare`` flags)."""

    arms: tuple[str, ...] = field(DEFAULT_ARMS, f"arms to train, among {', '.join(ARMS)}")
    preset: str = preset_field("every arm")
    seeds: int = field(10, "seeds per arm")
    first_seed: int = field(FIRST_SEED, f"first seed (tuning trains on seeds 0-9, so {FIRST_SEED} and up)")
    total_steps: int | None = field(None, "env steps per seed (default: the preset's)")
    eval_every: int | None = field(None, "env steps between evaluations (default: the preset's)")
    out: str = field("out/compare", "folder for the tables, the plot and the finished runs")
    tracking_uri: str | None = field(
        None, f"MLflow tracking URI (default: $MLFLOW_TRACKING_URI or {tracking.DEFAULT_TRACKING_URI})"
    )
    experiment: str = field(DEFAULT_EXPERIMENT, "MLflow experiment")
    models: bool = field(True, "log the trained models to MLflow")
    fresh: bool = field(False, "retrain every run instead of reusing finished ones")

    def __post_init__(self) -> None:
        if not self.arms:
            raise ValueError("arms=() is empty: expected one or more of " + str(list(ARMS)))
        for arm in self.arms:
            check_choice("arms", arm, tuple(ARMS))
        if len(set(self.arms)) != len(self.arms):
            raise ValueError(f"arms={list(self.arms)} repeats an arm: expected each arm once")
        check_preset(self.preset)
        check_at_least("seeds", self.seeds, 1)
        check_at_least("first_seed", self.first_seed, 1)
        for name in ("total_steps", "eval_every"):
            if getattr(self, name) is not None:
                check_at_least(name, getattr(self, name), 1)

    def preset_config(self, arm: str, run: RunSettings | None = None) -> tuple[DQNConfig, Preset]:
        """``arm``'s preset over ``run`` (layout and machinery), with the budget overrides, and the preset."""
        preset = load_preset(self.preset, arm)
        config = preset.config(run)
        budget = {
            name: getattr(self, name) for name in ("total_steps", "eval_every") if getattr(self, name) is not None
        }
        budget["eval_every"] = min(
            budget.get("eval_every", config.run.eval_every), budget.get("total_steps", config.run.total_steps)
        )
        return config.replace(**budget), preset

    @property
    def run_name(self) -> str:
        """The name of the comparison's MLflow parent run."""
        return f"compare-{pathlib.Path(self.preset).stem}"

    @property
    def seed_list(self) -> list[int]:
        return list(range(self.first_seed, self.first_seed + self.seeds))


def arm_config(options: CompareOptions, arm: Arm, run: RunSettings | None = None) -> tuple[DQNConfig, str]:
    """The config an arm trains with, and where its hyperparameters come from."""
    config, preset = options.preset_config(arm.name, run)
    return arm.configure(config), preset.label


def seed_runs(result: TrainResult, seeds: Sequence[int]) -> list[reporting.SeedRun]:
    """Each seed's figures and curve; seeds trained together share the wall clock, split evenly.

    So does their time to solved: a seed's is the run's clock when it was
    solved (through the hold-out window) divided by the seeds of the run.
    """
    runs = []
    for index, seed in enumerate(seeds):
        curve = tuple(
            reporting.CurvePoint(
                seconds=row.seconds,
                step=row.step,
                rolling_reward=row.per_seed[index].rolling_reward,
                greedy_step_reward=row.per_seed[index].greedy_step_reward,
            )
            for row in result.history
        )
        hold_out = result.config.run.hold_out_steps
        if len(seeds) == 1:
            solved_at = seconds_to_solved(result.history, hold_out, seed=index)
        else:  # where its own run would have stopped (the run goes on until every seed is solved)
            solved_at = seconds_to_first_window(result.history, hold_out, index) / len(seeds)
        final = result.history[-1].per_seed[index]
        runs.append(
            reporting.SeedRun(
                seed=seed,
                wall_seconds=result.wall_seconds / len(seeds),
                seconds_to_solved=solved_at,
                rolling_reward=final.rolling_reward,
                greedy_success_rate=final.greedy_success_rate,
                greedy_normalised_return=final.greedy_normalised_return,
                greedy_step_reward=final.greedy_step_reward,
                curve=curve,
                phases={name: value / len(seeds) for name, value in result.timings.as_dict().items()},
                updates=result.updates // len(seeds),
                env_steps=result.env_steps // len(seeds),
            )
        )
    return runs


def _cache_path(options: CompareOptions, arm: Arm, seeds: Sequence[int]) -> pathlib.Path:
    label = f"{seeds[0]}" if len(seeds) == 1 else f"{seeds[0]}-{seeds[-1]}"
    return pathlib.Path(options.out) / "runs" / f"{arm.name}-seed{label}.json"


def _cache_key(config: DQNConfig) -> dict[str, Any]:
    """What decides a run's outcome: the config without its display and compilation-cache settings."""
    values = config.to_dict()
    for name in ("quiet", "jax_cache"):
        values["run"].pop(name)
    return values


def _load_cached(path: pathlib.Path, config: DQNConfig) -> tuple[list[reporting.SeedRun], str | None] | None:
    """A finished run's per-seed figures and model URI, if its config is ``config``."""
    if not path.exists():
        return None
    try:
        saved = json.loads(path.read_text())
    except json.JSONDecodeError:
        return None
    if saved.get("config") != _cache_key(config):
        return None
    return [reporting.SeedRun.from_dict(seed) for seed in saved["seeds"]], saved.get("model_uri")


def best_seed(runs: Sequence[reporting.SeedRun]) -> int:
    """The index of the best seed: solved first, then greedy per-step reward, then rolling reward."""
    scores = [(run.solved, run.greedy_step_reward, run.rolling_reward) for run in runs]
    return max(range(len(runs)), key=scores.__getitem__)


def run_arm(options: CompareOptions, arm: Arm, run: RunSettings | None = None) -> list[reporting.ArmRuns]:
    """Trains one arm over every seed, one seed per run, as every arm does; per-seed figures.

    An arm that can train seeds together (under one ``vmap``) also trains them all in one run: a row of
    its own, its figures per seed, never the arm's row (a run of ten seeds is other work than ten runs).
    """
    config, origin = arm_config(options, arm, run)
    seeds = options.seed_list
    per_seed, models = train_groups(options, arm, config, origin, [[seed] for seed in seeds])
    if models:
        from .serving import register_champion

        champion, model_uri = models[best_seed([run for run, _ in models])]
        version = register_champion(arm, model_uri)
        print(f"  {arm.name}: seed {champion.seed} registered as version {version} of doors-{arm.name}@champion")
    rows = [reporting.ArmRuns(arm=arm, hyperparameters=origin, config=config, seeds=tuple(per_seed))]
    if arm.seeds_in_one_run and len(seeds) > 1:
        together, _ = train_groups(options, arm, config, origin, [seeds])
        rows.append(reporting.ArmRuns(arm, origin, config, tuple(together), seeds_in_one_run=len(seeds)))
    return rows


def train_groups(
    options: CompareOptions, arm: Arm, config: DQNConfig, origin: str, groups: list[list[int]]
) -> tuple[list[reporting.SeedRun], list[tuple[reporting.SeedRun, str]]]:
    """Trains ``arm`` once per group of seeds (finished runs reused); each seed's figures, and each run's
    best seed with its logged model."""
    import mlflow

    per_seed: list[reporting.SeedRun] = []
    models: list[tuple[reporting.SeedRun, str]] = []
    for group in groups:
        group_config = config.replace(seed=group[0], num_seeds=len(group))
        cache = _cache_path(options, arm, group)
        cached = None if options.fresh else _load_cached(cache, group_config)
        if cached is not None:
            figures, model_uri = cached
            print(f"  {arm.name} {describe_seeds(group)}: reusing {cache}", flush=True)
            per_seed += figures
            if model_uri:
                models.append((figures[best_seed(figures)], model_uri))
            continue
        tags = tracking.run_tags(arm, seeds=",".join(map(str, group)), hyperparameters=origin)
        with mlflow.start_run(run_name=tracking.run_name(arm, group), nested=True, tags=tags):
            mlflow.log_params(tracking.config_params(group_config))
            result = arm.train(group_config)
            tracking.log_result(result)
            figures = seed_runs(result, group)
            best = best_seed(figures) if options.models else None
            if len(group) > 1:  # seeds trained together: a nested run per seed, the model in the best one's
                model_uri = tracking.log_seed_runs(result, arm, group, model_seed=best)
            else:
                model_uri = None if best is None else tracking.log_model(result, seed_index=best)
        if model_uri:
            models.append((figures[best], model_uri))
        cache.parent.mkdir(parents=True, exist_ok=True)
        saved = {
            "config": _cache_key(group_config),
            "model_uri": model_uri,
            "seeds": [seed.to_dict() for seed in figures],
        }
        cache.write_text(json.dumps(saved, indent=1))
        per_seed += figures
        print(
            f"  {arm.name} {describe_seeds(group)}: {result.wall_seconds:.1f} s, {describe_rolling(figures)}",
            flush=True,
        )
    return per_seed, models


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
class Outcome:
    """What :func:`compare` returns: the summary rows, the oracle's row, the table and the files written."""

    rows: list[reporting.Summary]
    oracle: dict[str, float]
    table: str
    paths: dict[str, pathlib.Path]
    run_id: str
    experiment_id: str | None = None


def compare(options: CompareOptions, run: RunSettings | None = None) -> Outcome:
    """Runs the comparison over ``run`` (layout and machinery); writes the tables and the plot, logs to MLflow."""
    out = pathlib.Path(options.out)
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    base = DQNConfig(run=run or RunSettings())  # the layout: the oracle's row and the table's notes
    with tracking.quiet_mlflow():
        import mlflow

        experiment_id = tracking.connect(options.tracking_uri, options.experiment)
        with mlflow.start_run(
            run_name=options.run_name,
            tags={
                "doors_gym.version": doors_gym.__version__,
                "git_commit": tracking.git_commit(),
                "doors_gym.role": "compare",
                tracking.PROCESS_TAG: tracking.this_process(),
            },
        ) as parent:
            mlflow.log_params(
                {
                    "arms": ",".join(options.arms),
                    "preset": options.preset,
                    "seeds": ",".join(map(str, options.seed_list)),
                    # The layout and machinery; each arm's hyperparameters and budget are on its nested runs.
                    **{key: value for key, value in tracking.config_params(base).items() if key in SHARED_RUN_FIELDS},
                }
            )
            results = []
            for arm in map(get_arm, options.arms):
                print(f"{arm.name}: training {options.seeds} seed{'s' if options.seeds > 1 else ''}", flush=True)
                results += run_arm(options, arm, run)
            rows = reporting.summarise_all(results)
            oracle = reporting.oracle_row(base.params)
            table = reporting.markdown_table(rows, oracle, base, reporting.machine_line())
            paths = reporting.write_all(out, table, rows, oracle, results)
            for path in paths.values():
                mlflow.log_artifact(str(path))
            for row in rows:
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
            mlflow.log_metric("compare_wall_seconds", time.perf_counter() - start)
    return Outcome(rows, oracle, table, paths, parent.info.run_id, experiment_id)


def compare_arms(arms: Sequence[ArmProtocol | str], run: RunSettings | None = None, **options: Any) -> Outcome:
    """Compares ``arms``: installed arms by name, or arm objects (:class:`~doors_gym_baselines.arms.ArmProtocol`)
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


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m doors_gym_baselines.compare``: the same as ``doors-gym compare``."""
    from .cli import main as cli_main

    return cli_main(["compare", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(main())
