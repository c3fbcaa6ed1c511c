"""Whole-training wall time per update of two arms, the same flags, quiet and beside another job.

Run from the repository root::

    python benchmarks/wall_per_update.py                        # torch-numpy against flax-numpy
    python benchmarks/wall_per_update.py --arms torch-compile flax-numpy

Each round runs ``doors-gym train --arm A --preset shared --total-steps 40000 --eval-every 0 --quiet`` for
each arm in turn, in a fresh process, and reads the run's own wall time and updates from the summary it
prints (process start-up and imports left out). Then the same again with another job on the machine: a
process that keeps one core busy (a NumPy loop), as a second training or a browser would. The figure is
the median over the rounds of each run's wall milliseconds per update; threads are each arm's own policy
(``doors_gym_baselines.runtime``), recorded from the run's facts.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import pathlib
import statistics
import subprocess
import sys
from collections.abc import Iterator

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from _timing import machine_line, write_report  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
BUSY = "import numpy as np\nx = np.random.rand(256, 256)\nwhile True:\n    x = np.tanh(x @ x * 1e-3)\n"
"""Another job: one core kept busy (NumPy's own threads set to one)."""


@contextlib.contextmanager
def another_job(on: bool) -> Iterator[None]:
    if not on:
        yield
        return
    env = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PATH": ""}
    job = subprocess.Popen([sys.executable, "-c", BUSY], env=env)
    try:
        yield
    finally:
        job.kill()
        job.wait()


def train(arm: str, total_steps: int) -> tuple[float, dict]:
    """``(wall ms per update, facts)`` of one training in a fresh process."""
    command = [sys.executable, "-m", "doors_gym", "train", "--arm", arm, "--preset", "shared", "--total-steps",
               str(total_steps), "--eval-every", "0", "--quiet", "--no-stop-when-solved"]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=1200, check=True)
    text = done.stdout
    summary = json.loads(text[text.index("{") : text.rindex("}") + 1])
    return 1e3 * summary["wall_seconds"] / summary["updates"], summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--arms", nargs=2, default=["torch-numpy", "flax-numpy"], help="the two arms")
    parser.add_argument("--total-steps", type=int, default=40_000, help="env steps per training (default 40000)")
    parser.add_argument("--rounds", type=int, default=3, help="trainings per arm and condition (default 3)")
    parser.add_argument("--out", type=pathlib.Path, default=ROOT / "benchmarks" / "results" / "wall_per_update.md")
    args = parser.parse_args(argv)
    figures: dict[tuple[str, bool], list[float]] = {}
    for loaded in (False, True):
        with another_job(loaded):
            for _ in range(args.rounds):
                for arm in args.arms:
                    ms, _ = train(arm, args.total_steps)
                    figures.setdefault((arm, loaded), []).append(ms)
                    print(f"{arm}{', another job running' if loaded else ''}: {ms:.3f} ms per update", flush=True)
    rows = []
    first, second = args.arms
    for loaded in (False, True):
        a, b = (statistics.median(figures[(arm, loaded)]) for arm in args.arms)
        rows.append(["another job running" if loaded else "quiet", f"{a:.3f}", f"{b:.3f}", f"{a / b:.2f}x"])
    intro = (
        f"Wall milliseconds per update of `doors-gym train --preset shared --total-steps {args.total_steps} "
        f"--eval-every 0`, median of {args.rounds} trainings per arm, in turn ({machine_line()}; each arm "
        "with its own thread policy: torch 1 intra-op thread, XLA its default)."
    )
    headers = ["condition", first, second, f"{first} / {second}"]
    command = f"python benchmarks/wall_per_update.py --arms {first} {second}"
    print(write_report(args.out, command, intro, headers, rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
