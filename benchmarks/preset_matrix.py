"""Every arm trained with every arm's tuned preset: the presets are each arm's best, not its search's luck.

The algorithm is the same in every arm, so every study's winner is a candidate for every arm. This trains
each arm with each candidate (the committed ``doors_gym_baselines/hyperparams/<arm>.yml``, read before any is
rewritten) on ``--seeds`` tuning seeds, with the candidate's budget (it stops once solved through its
hold-out window), and scores each training as tuning does (wall seconds to solved, compile included; an
unsolved training scores its wall time plus the penalty). Run from the repository root with nothing else
running::

    python benchmarks/preset_matrix.py                 # the matrix, to benchmarks/results/tuning/matrix.md
    python benchmarks/preset_matrix.py --write         # ... and each arm's preset becomes its best candidate

Trainings alternate (seed, arm, candidate), so load from elsewhere falls on every cell alike.
"""

from __future__ import annotations

import argparse
import json
import math
import pathlib
import statistics
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from _timing import machine_line, markdown_table, write_generated  # noqa: E402

from doors_gym_baselines.arms import ARMS, get_arm  # noqa: E402
from doors_gym_baselines.config import Hyperparameters  # noqa: E402
from doors_gym_baselines.runtime import prepare_host_devices  # noqa: E402
from doors_gym_baselines.harness.metrics import seconds_to_solved  # noqa: E402
from doors_gym_baselines.presets import SHARED, HYPERPARAMS_DIR, load_preset, tuned_path, write_preset  # noqa: E402
from doors_gym_baselines.tuning import objective_score  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "tuning"


def write_presets(candidates: dict, chosen: dict[str, str], seeds: list[int], means: dict, arms: list[str]) -> None:
    """Writes each arm's chosen candidate as its tuned preset, and the all-round one as the shared preset."""
    for arm, cand in chosen.items():
        preset = candidates[cand]  # read before any file was rewritten
        figures = {name: round(means[(name, cand)], 3) for name in (arms if arm == SHARED else [arm])}
        matrix = {"candidate_of": cand, "seeds": seeds, "mean_by_arm": figures}
        origin = {key: value for key, value in preset.study.items() if key != "written"}
        origin.update(chosen_for="every arm" if arm == SHARED else arm, matrix=matrix)
        path = (HYPERPARAMS_DIR / f"{SHARED}.yml" if arm == SHARED else tuned_path(arm)).relative_to(ROOT)
        write_preset(path, Hyperparameters(**preset.hyperparameters), preset.config().run, origin,
                     written_by="benchmarks/preset_matrix.py --write")  # fmt: skip
        print(f"wrote {path}: {cand}'s preset")


def all_round(candidates: dict, arms: list[str], means: dict[tuple[str, str], float]) -> str:
    """The candidate every arm solves with whose slowest arm is the fastest (ties: the lower sum)."""
    return min(candidates, key=lambda cand: (max(means[(arm, cand)] for arm in arms), sum(
        means[(arm, cand)] for arm in arms)))  # fmt: skip


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The flags."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], help="tuning seeds (default 0 1 2)")
    parser.add_argument("--arms", nargs="+", default=list(ARMS), choices=list(ARMS), help="arms (rows and candidates)")
    parser.add_argument("--write", action="store_true", help="make each arm's preset its best candidate")
    parser.add_argument("--out", type=pathlib.Path, default=RESULTS / "matrix", help="files' path stem")
    return parser.parse_args(argv)


def train_matrix(
    candidates: dict, arms: list[str], seeds: list[int]
) -> tuple[dict[tuple[str, str], list[float]], dict[tuple[str, str], list[bool]]]:
    """Every arm trained with every candidate on every seed, alternating (seed, arm, candidate):
    ``(scores, solved)`` by ``(arm, candidate)``, one entry per seed."""
    scores: dict[tuple[str, str], list[float]] = {(arm, cand): [] for arm in arms for cand in candidates}
    solved: dict[tuple[str, str], list[bool]] = {key: [] for key in scores}
    for seed in seeds:
        for arm_name in arms:
            arm = get_arm(arm_name)
            for candidate, preset in candidates.items():
                config = arm.configure(preset.config().replace(seed=seed, quiet=True, profile=False))
                result = arm.train(config)
                score = objective_score("time-to-solved", result.history, config.run, final=True)
                scores[(arm_name, candidate)].append(score)
                solved[(arm_name, candidate)].append(
                    math.isfinite(seconds_to_solved(result.history, config.run.hold_out_steps))
                )
                print(f"seed {seed} {arm_name} x {candidate}'s preset: {score:.1f} s", flush=True)
    return scores, solved


def matrix_report(
    args: argparse.Namespace,
    candidates: dict,
    means: dict[tuple[str, str], float],
    solved: dict[tuple[str, str], list[bool]],
    best: dict[str, str],
    shared: str,
) -> str:
    """The Markdown report: the matrix of mean scores (each row's best in bold) and the shared preset."""
    header = ["arm \\ preset of", *candidates, "best"]
    rows = []
    for arm in args.arms:
        cells = []
        for cand in candidates:
            text = f"{means[(arm, cand)]:.1f} ({sum(solved[(arm, cand)])}/{len(args.seeds)})"
            cells.append(f"**{text}**" if cand == best[arm] else text)
        rows.append([arm, *cells, best[arm]])
    return "\n".join(
        [
            f"Mean time-to-solved score (s; solved seeds in brackets) of each arm (row) trained with each arm's "
            f"tuned preset (column) on tuning seeds {', '.join(map(str, args.seeds))}; an unsolved training "
            f"scores its wall time plus the penalty ({machine_line()}). Bold: the row's best, its shipped preset.",
            "",
            markdown_table(header, rows),
            "",
            f"Shared (every arm's like-for-like preset): {shared}'s, whose slowest arm is the fastest "
            f"({max(means[(arm, shared)] for arm in args.arms):.1f} s), with every seed of every arm solved.",
            "",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    """The matrix: flags, every arm with every candidate in turn, the table and the presets written."""
    args = parse_args(argv)
    prepare_host_devices()
    candidates = {name: load_preset("tuned", name) for name in args.arms}
    scores, solved = train_matrix(candidates, args.arms, args.seeds)
    means = {key: statistics.mean(values) for key, values in scores.items()}
    best = {arm: min(candidates, key=lambda cand, arm=arm: means[(arm, cand)]) for arm in args.arms}
    shared = all_round(candidates, args.arms, means)
    text = matrix_report(args, candidates, means, solved, best, shared)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    command = f"python benchmarks/preset_matrix.py{' --write' if args.write else ''}"
    write_generated(args.out.with_suffix(".md"), text, f"`{command}`")
    payload = {
        "seeds": args.seeds,
        "scores": {f"{arm} x {cand}": values for (arm, cand), values in scores.items()},
        "best": best,
        "shared": shared,
    }
    args.out.with_suffix(".json").write_text(json.dumps(payload, indent=1) + "\n")
    print(text)
    if args.write:
        write_presets(candidates, {**best, SHARED: shared}, args.seeds, means, args.arms)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
