"""Steps per second of the unwrapped ``Doors-v0`` single env, before and after a change, in turn.

Run from the repository root, with nothing else running::

    python benchmarks/step_before_after.py --before c26fc2f      # a git revision of this repository

It exports the revision's tree (``git archive``) to a temporary folder and times the unwrapped env's step
(random actions, a reset on each episode end, as ``benchmarks/throughput.py`` times its "unwrapped" row)
in a fresh process of each tree in turn (before, after, before, ... for ``--rounds`` rounds), one thread
each (``OMP_NUM_THREADS=1``; the step is pure Python and NumPy scalars), and prints the medians.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import textwrap

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from _timing import human_rate, machine_line, markdown_table  # noqa: E402
from before_after import HERE, ROOT, shim  # noqa: E402

PROBE = textwrap.dedent(
    """
    import json, sys
    # An editable install's finder would serve modules the tree on PYTHONPATH lacks from the installed tree.
    sys.meta_path = [finder for finder in sys.meta_path if "__editable__" not in getattr(finder, "__module__", "")]
    import doors_gym
    from doors_gym.envs.doors import DoorsEnv
    from throughput import ACTIONS_PER_ROUND, single_env_loop
    from _timing import time_rounds

    run = single_env_loop(DoorsEnv(), 5, seed=0)
    run(0)
    seconds, rounds = time_rounds(run, float(sys.argv[1]))
    print(json.dumps({"steps_per_second": ACTIONS_PER_ROUND / seconds, "package": doors_gym.__file__}))
    """
)


def probe(path: pathlib.Path, tree: pathlib.Path, min_seconds: float) -> float:
    """Steps per second of the unwrapped env of ``tree``, whose ``doors_gym`` is linked under ``path``."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(path), str(HERE)]), "OMP_NUM_THREADS": "1"}
    # Run in ``path``: ``python -c`` puts the working directory first on sys.path, ahead of PYTHONPATH.
    command = [sys.executable, "-c", PROBE, str(min_seconds)]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600, cwd=path)
    if done.returncode != 0:
        raise RuntimeError(f"{path}: {done.stderr[-2000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    if not pathlib.Path(result["package"]).resolve().is_relative_to(tree.resolve()):
        raise RuntimeError(f"{path} imported doors_gym from {result['package']}, not from {tree}")
    return result["steps_per_second"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", required=True, help="the git revision to compare with the working tree")
    parser.add_argument("--rounds", type=int, default=5, help="processes per tree, in turn (default 5)")
    parser.add_argument("--min-seconds", type=float, default=2.0, help="timing per process (default 2)")
    args = parser.parse_args(argv)
    samples: dict[str, list[float]] = {"before": [], "after": []}
    with tempfile.TemporaryDirectory() as folder:
        exported = pathlib.Path(folder) / "before"
        exported.mkdir()
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.before], check=True, capture_output=True)
        subprocess.run(["tar", "-x", "-C", str(exported)], input=archive.stdout, check=True)
        trees = {"before": (shim(exported, pathlib.Path(folder) / "shim-before"), exported),
                 "after": (shim(ROOT, pathlib.Path(folder) / "shim-after"), ROOT)}  # fmt: skip
        for _ in range(args.rounds):
            for tree, (path, source) in trees.items():
                samples[tree].append(probe(path, source, args.min_seconds))
                print(f"{tree}: {human_rate(samples[tree][-1])} steps/s", flush=True)
    before, after = (statistics.median(samples[tree]) for tree in ("before", "after"))
    print(f"\nunwrapped Doors-v0 step, median of {args.rounds} processes per tree in turn, 1 thread ({machine_line()})")
    rows = [[human_rate(before), human_rate(after), f"{after / before:.3f}"]]
    print(markdown_table([f"before ({args.before}) steps/s", "after steps/s", "after / before"], rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
