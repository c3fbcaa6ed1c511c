"""Wall time to a solved DQN agent for every arm, side by side in one run.

Run from the repository root (``pip install -e .[baselines]``)::

    python benchmarks/dqn_solve.py            # every arm, up to 600k env steps each
    python benchmarks/dqn_solve.py --quick    # a smaller budget, for a smoke run

Every arm trains with the same hyperparameters (``DQNConfig`` defaults unless
overridden) and stops at the first greedy evaluation where it is solved:
greedy success >= 99 % over all 225 start/goal pairs and rolling reward (mean
per-step reward of the last 2000 training episodes) >= 0.75. Wall time counts
everything, compilation included. ``flax-scan x 8 seeds`` trains eight seeds
in one compiled ``vmap``; its figures are means over the seeds and it is
solved when every seed is.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from _timing import machine_line, markdown_table  # noqa: E402

from doors_gym.oracle import evaluate_oracle  # noqa: E402

try:
    from doors_gym_baselines import common, dqn_flax, dqn_flax_scan, dqn_torch  # noqa: E402
except ModuleNotFoundError:
    from baselines import common, dqn_flax, dqn_flax_scan, dqn_torch  # noqa: E402

RUNS = (
    ("torch x Doors-v0", dqn_torch, {"env_id": "Doors-v0"}),
    ("torch x DoorsJax-v0", dqn_torch, {"env_id": "DoorsJax-v0"}),
    ("flax x Doors-v0", dqn_flax, {"env_id": "Doors-v0"}),
    ("flax x DoorsJax-v0", dqn_flax, {"env_id": "DoorsJax-v0"}),
    ("flax-scan x 1 seed", dqn_flax_scan, {"num_seeds": 1}),
    ("flax-scan x 8 seeds", dqn_flax_scan, {"num_seeds": 8}),
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="120k env steps per arm instead of 600k")
    parser.add_argument("--total-steps", type=int, default=None, help="budget per arm (overrides --quick)")
    parser.add_argument("--eval-every", type=int, default=20_000, help="env steps between evaluations (default 20000)")
    parser.add_argument("--only", nargs="+", default=None, help="run only the arms whose name contains one of these")
    parser.add_argument("--hidden-sizes", type=int, nargs="+", default=None, help="network widths for every arm")
    parser.add_argument("--json", type=pathlib.Path, default=None, help="also write the rows to this JSON file")
    args = parser.parse_args(argv)
    total_steps = args.total_steps or (120_000 if args.quick else 600_000)
    if total_steps < 1 or args.eval_every < 1:
        parser.error("--total-steps and --eval-every must be >= 1")
    base = common.DQNConfig(total_steps=total_steps, eval_every=args.eval_every, stop_when_solved=True, quiet=True)
    if args.hidden_sizes:
        base = dataclasses.replace(base, hidden_sizes=tuple(args.hidden_sizes))
    oracle = evaluate_oracle()

    rows, results = [], {}
    for name, module, overrides in RUNS:
        if args.only and not any(part in name for part in args.only):
            continue
        result = module.train(dataclasses.replace(base, **overrides))
        results[name] = result
        summary = result.summary()
        print(f"{name}: {json.dumps(summary)}", flush=True)
        rows.append((name, result))

    reference = results.get("torch x Doors-v0")
    table = []
    for name, result in rows:
        speedup = f"{reference.wall_seconds / result.wall_seconds:.1f}x" if reference else "-"
        table.append(
            [
                name,
                "yes" if result.solved else "no",
                f"{result.wall_seconds:.1f}",
                f"{result.env_steps:,}",
                f"{result.updates:,}",
                f"{result.evaluation.success_rate:.3f}",
                f"{result.evaluation.mean_step_reward:.3f}",
                f"{result.rolling_reward:.3f}",
                speedup,
            ]
        )
    table.append(
        [
            "oracle (shortest paths)",
            "-",
            "-",
            "-",
            "-",
            f"{oracle.success_rate:.3f}",
            f"{oracle.mean_step_reward:.3f}",
            f"{oracle.mean_step_reward:.3f}",
            "-",
        ]
    )
    headers = [
        "arm",
        "solved",
        "wall s",
        "env steps",
        "updates",
        "greedy success",
        "greedy step reward",
        "rolling reward",
        "speed-up vs torch x Doors-v0",
    ]
    print(f"\nDQN to solved (budget {total_steps:,} env steps per seed; {machine_line()})\n")
    print(markdown_table(headers, table))
    single, multi = results.get("flax-scan x 1 seed"), results.get("flax-scan x 8 seeds")
    if single and multi:
        print(
            f"\n8 seeds under one vmap: {multi.wall_seconds / single.wall_seconds:.1f}x the wall time of 1 seed "
            "(target <= 3x)"
        )
    if args.json:
        args.json.write_text(json.dumps([{"name": name, **result.summary()} for name, result in rows], indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
