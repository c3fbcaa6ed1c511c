"""The scale curve: each arm at a level over the number of parallel envs, along two rules (each stack at its best).

Every point is a comparison (``doors-gym compare``'s machinery: its seeds, IQM and 95 % CI, resume cache and
MLflow runs) of one arm at ``--level`` with the level's shared preset and ``num_envs`` changed, the batch, the
buffer (in transitions), the network and the budget in env steps as the preset's, along one of two rules:

- ``per-env-step``: gradient updates per env step held at the preset's (16 envs, an update every 3 vector steps:
  1 per 48 env steps), so ``N`` envs make ``N / 16`` updates (``gradient_steps``) every 3 vector steps;
- ``per-vector-step``: updates per vector step held (one every 3 vector steps), so fewer per env step as envs
  grow: what a loop that adds envs and changes nothing else does.

The two rules meet at the preset's own 16 envs (trained once). Writes ``scale.md``, ``scale.csv`` and
``scale.png`` (wall time to solved against parallel envs, log axes, a line per arm and rule, each arm's best
point ringed) under ``--out``, and each point's comparison in a folder of its own (a killed run resumes).

    python benchmarks/scale_curve.py --level Random --seeds 3                    # every default arm
    python benchmarks/scale_curve.py --level 3Walls --arms flax-scan flax-numpy --seeds 3
    python benchmarks/scale_curve.py --level 3Walls --arms flax-numpy --rules per-env-step   # one rule of one arm
    python benchmarks/scale_curve.py --level 3Walls --arms flax-scan flax-numpy --trained-only   # the table of both
    python benchmarks/scale_curve.py --level Random --seeds 1 --steps 20000 --out /tmp/scale-smoke   # a smoke run
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import math
import os
import pathlib
from collections.abc import Sequence

from _levels import THREAD_VARIABLES
from _timing import markdown_table

from doors_gym.levels import LEVEL_NAMES, STUDY
from doors_gym_baselines.experiments.compare import DEFAULT_ARMS, CompareOptions, compare, missing_jobs, plan
from doors_gym_baselines.config import RunSettings
from doors_gym_baselines.presets import level_preset, write_preset
from doors_gym_baselines.arms import ARMS, get_arm

ENVS = (16, 64, 256, 1024)
RULES = ("per-env-step", "per-vector-step")
HEADERS = [
    "arm", "rule", "envs", "updates per env step", "solved", "s to solved, IQM [95 % CI]", "env steps to solved, IQM",
    "env steps/s", "ms per update",
]  # fmt: skip
"""The columns of ``scale.md``."""
POINT_RUN = RunSettings(quiet=True, profile=False)  # every point's machinery: no profile, no per-run output


@dataclasses.dataclass(frozen=True)
class Point:
    """One arm at one scale and rule: its comparison's figures over the seeds."""

    arm: str
    rule: str
    num_envs: int
    updates_per_env_step: float
    seeds: int
    solved: int
    seconds_to_solved: float
    seconds_low: float
    seconds_high: float
    steps_to_solved: float
    env_steps_per_second: float
    ms_per_update: float


def point_changes(level: str, num_envs: int, rule: str) -> dict[str, int]:
    """The hyperparameters a point changes in the level's shared preset (``ValueError`` naming a bad scale)."""
    hyper = level_preset(level).hyperparameters
    base = hyper["num_envs"]
    if num_envs % base:
        raise ValueError(f"num_envs={num_envs} is not a multiple of the preset's {base}: expected one of {ENVS}")
    changes = {"num_envs": num_envs}
    if rule == "per-env-step":
        changes["gradient_steps"] = hyper.get("gradient_steps", 1) * num_envs // base
    return changes


def preset_file(level: str, num_envs: int, rule: str, out: pathlib.Path, steps: int | None) -> pathlib.Path:
    """The point's preset, written under ``out/presets`` (the level's shared preset with the point's changes)."""
    from doors_gym_baselines.config import Hyperparameters

    shared = level_preset(level)
    hyperparameters = Hyperparameters(**{**shared.hyperparameters, **point_changes(level, num_envs, rule)})
    budget = dict(shared.run)
    if steps is not None:
        budget.update(total_steps=steps, eval_every=max(1, steps // 4), hold_out_steps=0)
    run = dataclasses.replace(RunSettings(), **budget)
    origin = {"origin": f"{shared.name} with {point_changes(level, num_envs, rule)} (benchmarks/scale_curve.py)"}
    path = out / "presets" / f"{rule}-{num_envs}.yml"
    before = path.read_text() if path.exists() else None
    write_preset(path, hyperparameters, run, origin, written_by="benchmarks/scale_curve.py")
    if before is not None and undated(before) == undated(path.read_text()):
        path.write_text(before)  # the same preset: it keeps its date (a resumed or --trained-only run moves nothing)
    return path


def undated(preset: str) -> list[str]:
    """A preset file's lines but the date it was written."""
    return [line for line in preset.splitlines() if not line.strip().startswith("written:")]


def point_options(arm: str, level: str, num_envs: int, rule: str, args: argparse.Namespace) -> CompareOptions:
    """The comparison of one point: the arm alone, a run per seed, its folder under ``--out/points``."""
    out = pathlib.Path(args.out)
    return CompareOptions(
        arms=(arm,),
        preset=str(preset_file(level, num_envs, rule, out, args.steps)),
        seeds=args.seeds,
        out=str(out / "points" / f"{arm}-{rule}-{num_envs}"),
        tracking_uri=args.tracking_uri,
        experiment="doors-gym-scale",
        models=False,
        together=False,  # the arm's own row, a run per seed: seeds trained together are other work
        level=level,
    )


def measure(arm: str, level: str, num_envs: int, rule: str, args: argparse.Namespace) -> Point:
    """Trains one point (its comparison resumed from its folder) and returns its figures."""
    options = point_options(arm, level, num_envs, rule, args)
    config, _ = options.preset_config(arm)
    outcome = compare(options, POINT_RUN)
    row = next(row for row in outcome.rows if row.key == arm)  # the arm's own row, a run per seed
    seconds, steps = row.intervals["seconds_to_solved"], row.intervals["steps_to_solved"]
    return Point(
        arm, rule, num_envs, nominal_rate(config.hyperparameters), row.seeds, row.solved_ever,
        seconds.iqm, seconds.low, seconds.high, steps.iqm, row.env_steps_per_second, row.ms_per_update,
    )  # fmt: skip


def trained(arm: str, level: str, num_envs: int, rule: str, args: argparse.Namespace) -> bool:
    """Whether every run of a point finished before with the point's config (compare's own resume check: runs of
    another preset or budget in the folder do not count)."""
    return not missing_jobs(plan(point_options(arm, level, num_envs, rule, args), POINT_RUN))


def nominal_rate(hyper: object) -> float:
    """Gradient updates per env step once learning has started: ``gradient_steps / (train_frequency * num_envs)``."""
    return hyper.gradient_steps / (hyper.train_frequency * hyper.num_envs)


def best_points(points: Sequence[Point]) -> dict[str, Point]:
    """Each arm's fastest point to solved (its best scale and rule), where one solved."""
    best: dict[str, Point] = {}
    for point in points:
        if math.isfinite(point.seconds_to_solved) and (
            point.arm not in best or point.seconds_to_solved < best[point.arm].seconds_to_solved
        ):
            best[point.arm] = point
    return best


def markdown(points: Sequence[Point], level: str) -> str:
    """The table: a row per point, each arm's best marked."""
    best = best_points(points)
    rows = []
    for point in points:
        mark = " **best**" if best.get(point.arm) is point else ""
        low, high = number(point.seconds_low), number(point.seconds_high)
        seconds = f"{number(point.seconds_to_solved)} [{low}, {high}]"
        steps = f"{point.steps_to_solved / 1e3:,.0f}k" if math.isfinite(point.steps_to_solved) else "∞"
        rows.append(
            [
                f"{point.arm}{mark}",
                point.rule,
                point.num_envs,
                f"1/{1 / point.updates_per_env_step:,.0f}",
                f"{point.solved}/{point.seeds}",
                seconds if point.solved else "unsolved",
                steps,
                f"{point.env_steps_per_second:,.0f}",
                f"{point.ms_per_update:.2f}",
            ]
        )
    intro = (
        f"Scale curve at `{level}` (`python benchmarks/scale_curve.py --level {level}`); thread settings: "
        + ", ".join(f"{name}={os.environ.get(name, 'unset')}" for name in THREAD_VARIABLES)
    )
    return "\n".join([intro, "", markdown_table(HEADERS, rows, left=2)])


def number(seconds: float) -> str:
    """Seconds to one decimal; ∞ where a seed did not solve within the budget (its IQM or bound is infinite)."""
    return f"{seconds:.1f}" if math.isfinite(seconds) else "∞"


def plot(points: Sequence[Point], path: pathlib.Path, level: str) -> None:
    """Wall time to solved against parallel envs, log axes: a line per arm and rule, each arm's best ringed."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(7.5, 4.8))
    axis = figure.subplots()
    for arm in dict.fromkeys(point.arm for point in points):
        color = None
        for rule, style in zip(RULES, ("o-", "s--")):
            mine = [p for p in points if p.arm == arm and (p.rule == rule or p.num_envs == ENVS[0])]
            mine = sorted((p for p in mine if math.isfinite(p.seconds_to_solved)), key=lambda p: p.num_envs)
            if mine:
                xs, ys = [p.num_envs for p in mine], [p.seconds_to_solved for p in mine]
                color = axis.plot(xs, ys, style, color=color, label=f"{arm}, {rule}")[0].get_color()
    finite = [p.seconds_to_solved for p in points if math.isfinite(p.seconds_to_solved)]
    ceiling = max(finite + [1.0]) * 1.5
    for which, color, label in ((lambda p: not p.solved, "red", "no seed solved within the budget"),
                                (lambda p: p.solved, "orange", "a seed unsolved within the budget")):  # fmt: skip
        unsolved = [p for p in points if not math.isfinite(p.seconds_to_solved) and which(p)]
        if unsolved:  # a cross at the top: its IQM is infinite
            axis.plot([p.num_envs for p in unsolved], [ceiling] * len(unsolved), "x", color=color, markersize=9,
                      label=label)  # fmt: skip
    for point in best_points(points).values():
        axis.plot([point.num_envs], [point.seconds_to_solved], "o", markersize=14, fillstyle="none", color="black")
    axis.set_xscale("log", base=2)
    axis.set_yscale("log")
    axis.set_xlabel("parallel envs")
    axis.set_ylabel("wall s to solved, IQM over seeds")
    axis.set_title(f"time to solved against parallel envs at {level} (ringed: each arm's best)")
    axis.grid(True, which="both", alpha=0.3)
    axis.legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(path, dpi=120)


def write(points: Sequence[Point], out: pathlib.Path, level: str) -> str:
    """Writes ``scale.md``, ``scale.csv`` and ``scale.png``; returns the table."""
    table = markdown(points, level)
    (out / "scale.md").write_text(table + "\n")
    with (out / "scale.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=[spec.name for spec in dataclasses.fields(Point)])
        writer.writeheader()
        writer.writerows(dataclasses.asdict(point) for point in points)
    plot(points, out / "scale.png", level)
    return table


def read_points(path: pathlib.Path) -> list[Point]:
    """The points of a ``scale.csv`` (for ``--report-only``)."""
    types = {spec.name: spec.type for spec in dataclasses.fields(Point)}
    with path.open() as handle:
        rows = list(csv.DictReader(handle))
    cast = {"str": str, "int": int, "float": float}
    return [Point(**{name: cast[types[name]](value) for name, value in row.items()}) for row in rows]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--level", choices=[name for name in LEVEL_NAMES if name != STUDY], default="Random")
    parser.add_argument("--arms", nargs="+", choices=tuple(ARMS), default=list(DEFAULT_ARMS))
    parser.add_argument("--envs", nargs="+", type=int, default=list(ENVS))
    parser.add_argument("--rules", nargs="+", choices=RULES, default=list(RULES))
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=None, help="env steps per run (default: the level preset's)")
    parser.add_argument("--out", default=None, help="default: benchmarks/results/scale/<level>")
    parser.add_argument("--tracking-uri", default=None)
    parser.add_argument("--report-only", action="store_true", help="train nothing: the table and plot of scale.csv")
    parser.add_argument(
        "--trained-only",
        action="store_true",
        help="train nothing new: the table and plot of the points whose --seeds runs finished under --out/points "
        "with the point's own preset and budget (compare's resume check; points trained by separate commands, e.g. "
        "one arm's rules at a time); the others are named and left out",
    )
    args = parser.parse_args()
    args.out = args.out or f"benchmarks/results/scale/{args.level}"
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.report_only:
        print(write(read_points(out / "scale.csv"), out, args.level))
        return
    points = []
    for arm in map(get_arm, args.arms):  # arms in turn, each over its scales: a point's seeds run side by side
        for num_envs in args.envs:
            for rule in args.rules if num_envs != ENVS[0] else args.rules[:1]:  # one run where the rules meet
                if args.trained_only and not trained(arm.name, args.level, num_envs, rule, args):
                    print(f"== {arm.name}, {num_envs} envs, updates {rule}: not trained, left out", flush=True)
                    continue
                print(f"== {arm.name}, {num_envs} envs, updates {rule}", flush=True)
                points.append(measure(arm.name, args.level, num_envs, rule, args))
                write(points, out, args.level)  # the table so far, after every point
    if not points:
        arms = " ".join(args.arms)
        folder = out / "points"
        parser.error(f"--trained-only: no point of {arms} has its {args.seeds} runs of its own preset under {folder}")
    print(write(points, out, args.level))


if __name__ == "__main__":
    main()
