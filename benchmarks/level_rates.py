"""Env steps per second of a whole training at each level's preset, as a multiple of ``Random``'s.

Run from the repository root with nothing else running::

    python benchmarks/level_rates.py                                 # the fully jitted arm, every level
    python benchmarks/level_rates.py --arms flax-scan torch-numpy --levels Random 63x63 --rounds 3

Question: what does a level's preset (its network and knobs, ``doors-gym train --level L``) cost a training over
``Random``'s, in env steps per second? Each round runs ``doors-gym train --arm A --level L --total-steps 300000
--eval-every 300000 --hold-out-steps 0 --quiet`` for every level and arm in turn, each in a fresh process, and reads
the run's own ``wall_seconds`` and ``env_steps`` from the summary it prints (process start-up and imports left out,
compilation and the one evaluation in). A figure is the median over the rounds; the ratio is a level's median over
``Random``'s of the same arm. Threads are each arm's own policy (``doors_gym_baselines.runtime``).
"""

from __future__ import annotations

import argparse
import datetime
import json
import pathlib
import statistics
import subprocess
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from _levels import thread_settings  # noqa: E402
from _timing import machine_line, markdown_table, verdict, write_generated  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
LEVELS = ("Random", "31x31", "63x63")
TARGET = 0.5
"""The ratio the hard rungs' issue asks of ``63x63`` over ``Random``."""


def train(arm: str, level: str, total_steps: int) -> dict:
    """The summary of one training in a fresh process."""
    command = [sys.executable, "-m", "doors_gym", "train", "--arm", arm, "--level", level, "--total-steps",
               str(total_steps), "--eval-every", str(total_steps), "--hold-out-steps", "0", "--quiet"]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=3600, check=True)
    text = done.stdout
    return json.loads(text[text.index("{") : text.rindex("}") + 1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--arms", nargs="+", default=["flax-scan"], help="arms to time (default flax-scan)")
    parser.add_argument("--levels", nargs="+", default=list(LEVELS), help="levels; Random is always added first")
    parser.add_argument("--total-steps", type=int, default=300_000, help="env steps per training (default 300000)")
    parser.add_argument("--rounds", type=int, default=2, help="trainings per arm and level (default 2)")
    parser.add_argument("--out", type=pathlib.Path, default=ROOT / "benchmarks" / "results" / "ladder" / "rates.md")
    args = parser.parse_args(argv)
    for name, value in (("--total-steps", args.total_steps), ("--rounds", args.rounds)):
        if value < 1:
            parser.error(f"{name}={value} is out of range: expected an integer >= 1")
    levels = ["Random", *(level for level in args.levels if level != "Random")]
    rates: dict[tuple[str, str], list[float]] = {}
    updates: dict[tuple[str, str], int] = {}
    for round_ in range(args.rounds):
        for level in levels:
            for arm in args.arms:
                summary = train(arm, level, args.total_steps)
                rate = summary["env_steps"] / summary["wall_seconds"]
                rates.setdefault((arm, level), []).append(rate)
                updates[arm, level] = summary["updates"]
                print(f"round {round_ + 1}: {arm} at {level}: {rate:,.0f} env steps/s ({summary['updates']} updates, "
                      f"{summary['wall_seconds']:.1f} s)", flush=True)  # fmt: skip
    rows = []
    for arm in args.arms:
        base = statistics.median(rates[arm, "Random"])
        for level in levels:
            rate = statistics.median(rates[arm, level])
            spread = f"{min(rates[arm, level]):,.0f}-{max(rates[arm, level]):,.0f}"
            ratio = rate / base
            judged = f" (target >= {TARGET}x: {verdict(ratio, TARGET)})" if level == "63x63" else ""
            rows.append([arm, level, updates[arm, level], f"{rate:,.0f}", spread, f"{ratio:.2f}x{judged}"])
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT).stdout
    block = "\n".join([
        f"`python benchmarks/level_rates.py --arms {' '.join(args.arms)} --levels {' '.join(levels)} "
        f"--total-steps {args.total_steps} --rounds {args.rounds}`: {datetime.date.today()}, commit "
        f"{commit.strip() or 'unknown'}; {machine_line()}; {thread_settings()}.",
        "",
        markdown_table(["arm", "level", "updates", "env steps/s (median)", "range", "over Random"], rows, left=2),
    ])  # fmt: skip
    text = write_generated(args.out, block, "Env steps per second at each level's preset")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
