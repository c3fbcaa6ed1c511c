"""``doors-gym compare``: every stack trained over several seeds, side by side, beside the study's Table 2.

For each arm (torch x Doors-v0, Flax x Doors-v0, Flax x DoorsJax-v0 and the
fully jitted Flax arm by default) it trains ``--seeds`` seeds with the preset's
hyperparameters (or a tuning study's best with ``--tuned``), on seeds other
than the tuning seed, evaluates the greedy policy from every start/goal pair
(episodes never used for training), and writes under ``--out``:

- ``compare.md`` and ``compare.csv``: per arm, mean and spread over seeds of the
  rolling reward (the study's figure: mean per-step reward of the last 2000
  training episodes), greedy success rate, normalised return and per-step
  reward, the training wall time, the time to a solved agent and the speed-up
  over torch x Doors-v0; the oracle's row and the study's published row;
- ``compare_seeds.csv``: one row per arm and seed;
- ``learning_curves.png``: rolling and greedy reward against wall-clock time;
- ``runs/*.json``: each finished (arm, seed) run, so a killed comparison
  resumes where it stopped (a run is reused only if its config is identical).

Everything is logged to MLflow: a parent run per comparison, a nested run per
training (params, metrics with ``step=`` env steps, tags, model), and the
tables and plot as artifacts of the parent.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import json
import math
import pathlib
import sys
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

import doors_gym

from . import tracking
from .common import (
    ARMS,
    SOLVED_ROLLING_REWARD,
    SOLVED_SUCCESS,
    DQNConfig,
    check_at_least,
    check_choice,
    evaluate_greedy,
    get_arm,
    is_solved,
    load_arm_module,
)

DEFAULT_ARMS = ("torch-numpy", "flax-numpy", "flax-jax", "flax-scan")
REFERENCE_ARM = "torch-numpy"
DEFAULT_EXPERIMENT = "doors-gym-compare"
FIRST_SEED = 100
"""Compare seeds start here; tuning trains on seed 0."""

PRESETS = {
    # About 10 minutes on 2 CPU cores for the default arms and 5 seeds. The
    # hyperparameters are a hand-checked point of the tuning search space that
    # solves within 100k steps (gamma 0.9 is what matters most).
    "quick": {
        "total_steps": 100_000,
        "eval_every": 20_000,
        "learning_rate": 3e-3,
        "gamma": 0.9,
        "target_update": 100,
        "exploration_fraction": 0.2,
        "learning_starts": 2_000,
    },
    # The study's protocol: 5e5 env steps per run, rolling reward over the last 2000 episodes.
    "full": {"total_steps": 500_000, "eval_every": 25_000},
}

PUBLISHED = {
    # Table 2 of the study: one seed each, NVIDIA RTX 5060 Ti GPU + Ryzen 5 7600X, 40 Optuna trials.
    "torch-numpy": {"rolling_reward": 0.73, "wall_seconds": 22.5 * 60, "label": "PyTorch + Gym (sync envs)"},
    "flax-numpy": {"rolling_reward": 0.64, "wall_seconds": 22.8 * 60, "label": "Flax + Gym (sync envs)"},
    "flax-jax": {"rolling_reward": 0.71, "wall_seconds": 2.3 * 60, "label": "Flax + Gym + JAX-vectorised env"},
}

FIGURES = ("rolling_reward", "greedy_success_rate", "greedy_normalised_return", "greedy_step_reward")


@dataclasses.dataclass(frozen=True)
class CompareOptions:
    """Settings of one comparison (the ``doors-gym compare`` flags)."""

    arms: tuple[str, ...] = DEFAULT_ARMS
    preset: str = "quick"
    seeds: int = 5
    first_seed: int = FIRST_SEED
    total_steps: int | None = None
    """Overrides the preset's budget per seed."""
    eval_every: int | None = None
    tuned: bool = False
    storage: str = "sqlite:///optuna.db"
    out: str = "out/compare"
    tracking_uri: str | None = None
    experiment: str = DEFAULT_EXPERIMENT
    log_models: bool = True
    resume: bool = True
    quiet: bool = False

    def __post_init__(self) -> None:
        if not self.arms:
            raise ValueError("arms=() is empty: expected one or more of " + str(list(ARMS)))
        for arm in self.arms:
            check_choice("arms", arm, tuple(ARMS))
        if len(set(self.arms)) != len(self.arms):
            raise ValueError(f"arms={list(self.arms)} repeats an arm: expected each arm once")
        check_choice("preset", self.preset, tuple(PRESETS))
        check_at_least("seeds", self.seeds, 1)
        check_at_least("first_seed", self.first_seed, 1)
        for name in ("total_steps", "eval_every"):
            if getattr(self, name) is not None:
                check_at_least(name, getattr(self, name), 1)

    def base_config(self) -> DQNConfig:
        """The preset's config, with ``total_steps`` / ``eval_every`` overrides (validated by ``DQNConfig``)."""
        values = dict(PRESETS[self.preset])
        if self.total_steps is not None:
            values["total_steps"] = self.total_steps
        if self.eval_every is not None:
            values["eval_every"] = self.eval_every
        values["eval_every"] = min(values["eval_every"], values["total_steps"])
        return DQNConfig(**values, quiet=self.quiet)

    @property
    def seed_list(self) -> list[int]:
        return list(range(self.first_seed, self.first_seed + self.seeds))


def arm_config(options: CompareOptions, arm_name: str) -> tuple[DQNConfig, str]:
    """The config an arm trains with, and where its hyperparameters come from."""
    arm = get_arm(arm_name)
    base = dataclasses.replace(options.base_config(), env_id=arm.env_id)
    if options.tuned:
        from .tuning import best_config

        study_name = f"dqn-{arm.name}"
        found = best_config(options.storage, study_name, base)
        if found is not None:
            config, origin = found
            return config, f"tuned ({origin['study']}, trial {origin['trial']})"
        print(
            f"  {arm.name}: no complete trial in the study {study_name!r} of --storage; "
            f"training with the {options.preset} preset (the table says so)",
            file=sys.stderr,
            flush=True,
        )
    return base, options.preset


def _seed_figures(
    seed: int, history: list[dict[str, Any]], wall_seconds: float, final: dict[str, Any]
) -> dict[str, Any]:
    solved_at = next((row["seconds"] for row in history if is_solved(row)), math.nan)
    return {
        "seed": seed,
        "wall_seconds": wall_seconds,
        "seconds_to_solved": solved_at,
        **{key: float(final[key]) for key in FIGURES},
        "curve": [
            {
                "seconds": row["seconds"],
                "step": row["step"],
                "rolling_reward": row["rolling_reward"],
                "greedy_step_reward": row["greedy_step_reward"],
            }
            for row in history
        ],
    }


def _cache_path(options: CompareOptions, arm: str, seeds: Sequence[int]) -> pathlib.Path:
    label = f"{seeds[0]}" if len(seeds) == 1 else f"{seeds[0]}-{seeds[-1]}"
    return pathlib.Path(options.out) / "runs" / f"{arm}-seed{label}.json"


def _load_cached(path: pathlib.Path, config: DQNConfig) -> list[dict[str, Any]] | None:
    if not path.exists():
        return None
    try:
        saved = json.loads(path.read_text())
    except json.JSONDecodeError:
        return None
    return saved["seeds"] if saved.get("config") == _cache_key(config) else None


def _cache_key(config: DQNConfig) -> dict[str, Any]:
    """What decides a run's outcome: the config without its display settings."""
    return {key: value for key, value in config.to_dict().items() if key != "quiet"}


def run_arm(options: CompareOptions, arm_name: str, parent_run: str | None) -> dict[str, Any]:
    """Trains one arm over every seed (sequentially, or under one ``vmap`` for flax-scan); per-seed figures."""
    import mlflow

    arm = get_arm(arm_name)
    module = load_arm_module(arm)
    config, origin = arm_config(options, arm_name)
    seeds = options.seed_list
    groups = [seeds] if arm.seeds_in_one_run else [[seed] for seed in seeds]
    per_seed: list[dict[str, Any]] = []
    for group in groups:
        group_config = dataclasses.replace(config, seed=group[0], num_seeds=len(group))
        cache = _cache_path(options, arm.name, group)
        cached = _load_cached(cache, group_config) if options.resume else None
        if cached is not None:
            print(f"  {arm.name} seeds {group}: reusing {cache}", flush=True)
            per_seed += cached
            continue
        tags = tracking.run_tags(arm.name, arm.env_label, seeds=",".join(map(str, group)), hyperparameters=origin)
        with mlflow.start_run(run_name=f"{arm.name}-seed{group[0]}", nested=parent_run is not None, tags=tags):
            mlflow.log_params(tracking.config_params(group_config))
            result = module.train(group_config)
            tracking.log_result(result)
            if options.log_models:
                tracking.log_model(result)
        if arm.seeds_in_one_run:
            figures = _scan_seed_figures(result, group)
        else:
            figures = [_seed_figures(group[0], result.history, result.wall_seconds, result.history[-1])]
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.write_text(json.dumps({"config": _cache_key(group_config), "seeds": figures}, indent=1))
        per_seed += figures
        print(
            f"  {arm.name} seeds {group}: {result.wall_seconds:.1f} s, rolling reward "
            + ", ".join(f"{seed['rolling_reward']:.3f}" for seed in figures),
            flush=True,
        )
    return {"arm": arm.name, "label": arm.label, "hyperparameters": origin, "config": config, "seeds": per_seed}


def _scan_seed_figures(result: Any, seeds: Sequence[int]) -> list[dict[str, Any]]:
    """Per-seed figures of a vmapped run: every seed shares the wall clock; time is split evenly."""
    out = []
    for index, seed in enumerate(seeds):
        history = [{**row, **row["per_seed"][index]} for row in result.history]
        out.append(_seed_figures(seed, history, result.wall_seconds / len(seeds), history[-1]))
    return out


def summarise(arm_result: dict[str, Any]) -> dict[str, Any]:
    """Mean and standard deviation over seeds of every figure, and the totals."""
    seeds = arm_result["seeds"]
    row: dict[str, Any] = {
        "arm": arm_result["arm"],
        "label": arm_result["label"],
        "hyperparameters": arm_result["hyperparameters"],
        "seeds": len(seeds),
        "solved": sum(is_solved(seed) for seed in seeds),
        "wall_seconds_total": float(sum(seed["wall_seconds"] for seed in seeds)),
    }
    for key in (*FIGURES, "wall_seconds"):
        values = np.array([seed[key] for seed in seeds], dtype=float)
        row[f"{key}_mean"] = float(values.mean())
        row[f"{key}_std"] = float(values.std(ddof=1)) if len(values) > 1 else 0.0
    solved_times = np.array([seed["seconds_to_solved"] for seed in seeds], dtype=float)
    solved_times = solved_times[np.isfinite(solved_times)]
    row["seconds_to_solved_mean"] = float(solved_times.mean()) if solved_times.size else math.nan
    row["solved_ever"] = int(solved_times.size)
    return row


def add_speedups(rows: list[dict[str, Any]]) -> None:
    """Sets each row's ``speedup_vs_torch_numpy``: torch x NumPy's total wall time over the row's (``None`` without it)."""
    reference = next((row for row in rows if row["arm"] == REFERENCE_ARM), None)
    for row in rows:
        row["speedup_vs_torch_numpy"] = (
            reference["wall_seconds_total"] / row["wall_seconds_total"] if reference else None
        )


def oracle_row(config: DQNConfig) -> dict[str, Any]:
    """The shortest-path policy's figures on the same greedy evaluation."""
    from doors_gym.oracle import OraclePolicy

    evaluation = evaluate_greedy(OraclePolicy(config.params), config.params)
    return {
        "rolling_reward": evaluation.mean_step_reward,
        "greedy_success_rate": evaluation.success_rate,
        "greedy_normalised_return": evaluation.normalised_return,
        "greedy_step_reward": evaluation.mean_step_reward,
    }


def _spread(row: dict[str, Any], key: str, digits: int = 3) -> str:
    mean, std = row[f"{key}_mean"], row[f"{key}_std"]
    return f"{mean:.{digits}f} ± {std:.{digits}f}"


def markdown_table(rows: list[dict[str, Any]], oracle: dict[str, Any], config: DQNConfig, machine: str) -> str:
    """The comparison as Markdown: ours (mean ± sd over seeds), the oracle, the study's published figures."""
    head = (
        "| arm | hyperparameters | solved at the end | rolling reward | greedy success | normalised return "
        "| greedy step reward | wall s (all seeds) | s per seed | s to first solved (seeds) "
        "| speed-up vs torch x NumPy |"
    )
    lines = [head, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for row in rows:
        speedup = "-" if row["speedup_vs_torch_numpy"] is None else f"{row['speedup_vs_torch_numpy']:.1f}x"
        to_solved = (
            "-"
            if math.isnan(row["seconds_to_solved_mean"])
            else f"{row['seconds_to_solved_mean']:.1f} ({row['solved_ever']}/{row['seeds']})"
        )
        lines.append(
            f"| {row['label']} | {row['hyperparameters']} | {row['solved']}/{row['seeds']} "
            f"| {_spread(row, 'rolling_reward')} | {_spread(row, 'greedy_success_rate')} "
            f"| {_spread(row, 'greedy_normalised_return')} | {_spread(row, 'greedy_step_reward')} "
            f"| {row['wall_seconds_total']:.1f} | {_spread(row, 'wall_seconds', 1)} | {to_solved} | {speedup} |"
        )
    lines.append(
        f"| oracle (shortest paths) | - | - | {oracle['rolling_reward']:.3f} | {oracle['greedy_success_rate']:.3f} "
        f"| {oracle['greedy_normalised_return']:.3f} | {oracle['greedy_step_reward']:.3f} | - | - | - | - |"
    )
    published = [
        "",
        "The study's Table 2 (published; one seed each, tuned with 40 Optuna trials, on an RTX 5060 Ti GPU):",
        "",
        "| study arm | rolling reward | wall time | speed-up | ours, same stack: rolling reward "
        "| ours: wall s per seed |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    ours = {row["arm"]: row for row in rows}
    for arm, figures in PUBLISHED.items():
        mine = ours.get(arm)
        published.append(
            f"| {figures['label']} | {figures['rolling_reward']:.2f} | {figures['wall_seconds'] / 60:.1f} min "
            f"| {PUBLISHED[REFERENCE_ARM]['wall_seconds'] / figures['wall_seconds']:.1f}x "
            f"| {_spread(mine, 'rolling_reward') if mine else '-'} "
            f"| {_spread(mine, 'wall_seconds', 1) if mine else '-'} |"
        )
    settings = (
        f"{config.total_steps:,} env steps per seed, {config.num_envs} envs, evaluation every {config.eval_every:,} "
        f"steps; rolling reward over the last {config.rolling_episodes} training episodes; greedy figures over all "
        f"{config.params.width ** 2} start/goal pairs. Spread: ± one standard deviation over seeds. "
        f"Solved: greedy success >= {SOLVED_SUCCESS * 100:g} % and rolling reward >= {SOLVED_ROLLING_REWARD}; "
        "s to first solved is the mean wall time of "
        "the first evaluation where a seed was solved, over the seeds that got there. flax-scan trains its seeds "
        "together under one vmap; its s per seed is the total divided by the seeds."
    )
    return "\n".join([*lines, "", settings, "", machine, *published, ""])


CSV_COLUMNS = (
    "arm",
    "label",
    "hyperparameters",
    "seeds",
    "solved",
    "solved_ever",
    "wall_seconds_total",
    "wall_seconds_mean",
    "wall_seconds_std",
    "seconds_to_solved_mean",
    *(f"{key}_{stat}" for key in FIGURES for stat in ("mean", "std")),
    "speedup_vs_torch_numpy",
)


def write_csv(rows: list[dict[str, Any]], oracle: dict[str, Any], path: pathlib.Path) -> None:
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=CSV_COLUMNS)
        writer.writeheader()
        for row in rows:
            writer.writerow({key: row.get(key, "") for key in CSV_COLUMNS})
        writer.writerow(
            {
                "arm": "oracle",
                "label": "oracle (shortest paths)",
                **{f"{key}_mean": value for key, value in oracle.items()},
            }
        )
        for arm, figures in PUBLISHED.items():
            writer.writerow(
                {
                    "arm": f"published:{arm}",
                    "label": figures["label"],
                    "seeds": 1,
                    "rolling_reward_mean": figures["rolling_reward"],
                    "wall_seconds_total": figures["wall_seconds"],
                    "wall_seconds_mean": figures["wall_seconds"],
                }
            )


def write_seed_csv(results: list[dict[str, Any]], path: pathlib.Path) -> None:
    columns = ("arm", "seed", "wall_seconds", "seconds_to_solved", *FIGURES)
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        for result in results:
            for seed in result["seeds"]:
                writer.writerow({"arm": result["arm"], **{key: seed[key] for key in columns[1:]}})


def plot_curves(results: list[dict[str, Any]], oracle: dict[str, Any], path: pathlib.Path) -> None:
    """Rolling and greedy per-step reward against wall-clock seconds: mean over seeds, min-max band."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, 2, figsize=(12, 4.5), sharey=True)
    for result in results:
        curves = [seed["curve"] for seed in result["seeds"]]
        length = min(len(curve) for curve in curves)
        seconds = np.mean([[point["seconds"] for point in curve[:length]] for curve in curves], axis=0)
        for axis, key in zip(axes, ("rolling_reward", "greedy_step_reward")):
            values = np.array([[point[key] for point in curve[:length]] for curve in curves], dtype=float)
            keep = ~np.isnan(values).all(axis=0)  # points where no seed had finished a training episode yet
            values, point_seconds = values[:, keep], seconds[keep]
            one_run = get_arm(result["arm"]).seeds_in_one_run
            label = result["label"] + (f" ({len(curves)} seeds in one run)" if one_run else "")
            (line,) = axis.plot(point_seconds, np.nanmean(values, axis=0), marker="o", markersize=3, label=label)
            axis.fill_between(
                point_seconds, np.nanmin(values, axis=0), np.nanmax(values, axis=0), alpha=0.2, color=line.get_color()
            )
    for axis, title in zip(axes, ("rolling reward (last 2000 training episodes)", "greedy per-step reward")):
        axis.axhline(oracle["greedy_step_reward"], color="black", linestyle="--", linewidth=1, label="oracle")
        axis.set_xscale("log")
        axis.set_xlabel("wall-clock seconds of a training run (log scale)")
        axis.set_title(title)
        axis.grid(alpha=0.3)
    for arm, figures in PUBLISHED.items():
        axes[0].scatter(
            figures["wall_seconds"],
            figures["rolling_reward"],
            marker="*",
            s=90,
            zorder=3,
            label=f"study: {figures['label']}",
        )
    axes[0].set_ylabel("mean reward per step")
    axes[0].set_ylim(bottom=-0.1, top=0.85)
    axes[1].legend(fontsize=7, loc="lower right")
    axes[0].legend(fontsize=7, loc="lower right")
    figure.suptitle("DQN on Doors-v0: mean over seeds, band = min to max")
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def machine_line() -> str:
    import os
    import platform

    return f"Machine: {platform.machine()}, {os.cpu_count()} CPU cores, Python {platform.python_version()}."


def compare(options: CompareOptions) -> dict[str, Any]:
    """Runs the comparison; returns the summary rows, the oracle row, and the paths written."""
    import mlflow

    out = pathlib.Path(options.out)
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    with tracking.quiet_mlflow():
        tracking.connect(options.tracking_uri, options.experiment)
        with mlflow.start_run(
            run_name=f"compare-{options.preset}",
            tags={
                "doors_gym.version": doors_gym.__version__,
                "git_commit": tracking.git_commit(),
                "doors_gym.role": "compare",
            },
        ) as parent:
            mlflow.log_params(
                {
                    "arms": ",".join(options.arms),
                    "preset": options.preset,
                    "seeds": ",".join(map(str, options.seed_list)),
                    "tuned": str(options.tuned),
                    **tracking.config_params(options.base_config()),
                }
            )
            results = []
            for arm in options.arms:
                print(f"{arm}: training {options.seeds} seeds", flush=True)
                results.append(run_arm(options, arm, parent.info.run_id))
            rows = [summarise(result) for result in results]
            add_speedups(rows)
            base = options.base_config()
            oracle = oracle_row(base)
            table = markdown_table(rows, oracle, base, machine_line())
            paths = {
                "markdown": out / "compare.md",
                "csv": out / "compare.csv",
                "seeds_csv": out / "compare_seeds.csv",
                "plot": out / "learning_curves.png",
            }
            paths["markdown"].write_text(table)
            write_csv(rows, oracle, paths["csv"])
            write_seed_csv(results, paths["seeds_csv"])
            plot_curves(results, oracle, paths["plot"])
            for path in paths.values():
                mlflow.log_artifact(str(path))
            for row in rows:
                mlflow.log_metrics(
                    {
                        f"{row['arm']}.{key}": float(row[key])
                        for key in ("rolling_reward_mean", "greedy_success_rate_mean", "wall_seconds_total")
                    }
                )
            mlflow.log_metric("compare_wall_seconds", time.perf_counter() - start)
    return {"rows": rows, "oracle": oracle, "table": table, "paths": paths, "run_id": parent.info.run_id}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``doors-gym compare`` flags."""
    preset = parser.add_mutually_exclusive_group()
    preset.add_argument(
        "--quick",
        dest="preset",
        action="store_const",
        const="quick",
        help="100k env steps per seed, about 10 minutes on 2 cores (the default)",
    )
    preset.add_argument(
        "--full",
        dest="preset",
        action="store_const",
        const="full",
        help="the study's protocol: 500k env steps per seed",
    )
    parser.set_defaults(preset="quick")
    parser.add_argument(
        "--arms",
        nargs="+",
        default=list(DEFAULT_ARMS),
        metavar="ARM",
        help=f"arms to train, among {', '.join(ARMS)} (default: {' '.join(DEFAULT_ARMS)})",
    )
    parser.add_argument("--seeds", type=int, default=5, help="seeds per arm (default: 5)")
    parser.add_argument(
        "--first-seed", type=int, default=FIRST_SEED, help=f"first seed (default: {FIRST_SEED}; tuning uses seed 0)"
    )
    parser.add_argument("--total-steps", type=int, default=None, help="env steps per seed (overrides the preset)")
    parser.add_argument("--eval-every", type=int, default=None, help="env steps between evaluations")
    parser.add_argument(
        "--tuned",
        action="store_true",
        help="use each arm's best trial in study dqn-<arm> of --storage where one exists",
    )
    parser.add_argument("--storage", default="sqlite:///optuna.db", help="Optuna storage for --tuned")
    parser.add_argument(
        "--out", default="out/compare", help="folder for the tables and the plot (default: %(default)s)"
    )
    parser.add_argument(
        "--tracking-uri",
        default=None,
        help="MLflow tracking URI (default: $MLFLOW_TRACKING_URI or sqlite:///mlflow.db)",
    )
    parser.add_argument("--experiment", default=DEFAULT_EXPERIMENT, help="MLflow experiment (default: %(default)s)")
    parser.add_argument("--fresh", action="store_true", help="retrain every run instead of reusing finished ones")
    parser.add_argument("--no-models", action="store_true", help="do not log the trained models")
    parser.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="show a progress bar per training (default: on)",
    )


def options_from_arguments(args: argparse.Namespace) -> CompareOptions:
    return CompareOptions(
        arms=tuple(args.arms),
        preset=args.preset,
        seeds=args.seeds,
        first_seed=args.first_seed,
        total_steps=args.total_steps,
        eval_every=args.eval_every,
        tuned=args.tuned,
        storage=args.storage,
        out=args.out,
        tracking_uri=args.tracking_uri,
        experiment=args.experiment,
        log_models=not args.no_models,
        resume=not args.fresh,
        quiet=not args.progress,
    )


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m doors_gym_baselines.compare``: the same as ``doors-gym compare``."""
    from doors_gym import cli

    return cli.main(["compare", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(main())
