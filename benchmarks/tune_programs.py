"""A flax-scan study's wall time against the trials trained per program (``doors-gym tune --trials-per-program K``).

For each K, a fresh study of ``--n-trials`` trials (TPE + Hyperband, time-to-solved, today's 200k env steps per
trial, tuning seeds 0-9), then its ``--confirm-top`` best trials re-trained as single runs on ``--confirm-seeds``
more tuning seeds each; it prints the seconds spent training the trials, the study's wall time (``tune`` without
confirmation: set-up, trials, plots), the whole command's, and the confirmed winner's mean seconds to solved over
its single runs (K > 1: its three confirmation seeds, a lane's clock being no single run; K = 1: its trial's seed
too), beside today's figures from ``benchmarks/results/tuning/``. One K after the other, never two at once (the
objective is wall time).

    .venv/bin/python benchmarks/tune_programs.py                      # K = 1, 4, 8, 20, 40; 40 never gathered
    .venv/bin/python benchmarks/tune_programs.py --ks 1 8 --n-trials 20
    .venv/bin/python benchmarks/tune_programs.py --ks 8 1 --no-gather-ks --presets-out winners/  # then compare them
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import re
import tempfile
import time

RESULTS = pathlib.Path(__file__).parent / "results" / "tuning"


def today() -> tuple[float, float, float]:
    """Today's flax-scan tuning (one trial per program): its command's wall seconds, and its confirmed winner's mean
    seconds to solved over its four seeds (its trial's and three confirmations) and over its three confirmations."""
    summary = json.loads((RESULTS / "flax-scan" / "summary.json").read_text())
    winner = min(summary["confirmed"], key=lambda found: sum(found["scores"]) / len(found["scores"]))
    walls = [line for line in (RESULTS / "wall_times.md").read_text().splitlines() if line.startswith("| flax-scan")]
    wall = float(walls[-1].split("|")[3].strip().split()[0])
    return wall, sum(winner["scores"]) / 4, sum(winner["scores"][1:]) / 3


TRIALS_SECONDS: list[float] = []
"""The seconds of each call of ``tune``'s trial loop since the list was last cleared (:func:`time_trials`)."""


def time_trials() -> None:
    """Times the training of a study's trials (``tune`` less its set-up, plots and summary) into
    :data:`TRIALS_SECONDS`."""
    from doors_gym_baselines.tuning import command

    for name in ("run_programs", "run_trials"):
        function = getattr(command, name)

        def timed(*args, _function=function, **kwargs):
            started = time.perf_counter()
            try:
                return _function(*args, **kwargs)
            finally:
                TRIALS_SECONDS.append(time.perf_counter() - started)

        setattr(command, name, timed)


def one_study(k: int, args: argparse.Namespace, folder: pathlib.Path, gather: bool = True) -> dict[str, float]:
    """Tunes flax-scan with ``k`` trials per program in ``folder`` (``gather``: live lanes gathered into smaller
    programs); its timings and confirmed winner."""
    import dataclasses

    import optuna

    from doors_gym_baselines import tuning

    options = tuning.TuneOptions(
        arm="flax-scan", n_trials=args.n_trials, trials_per_program=k, storage=f"sqlite:///{folder / 'optuna.db'}",
        tracking_uri=f"sqlite:///{folder / 'mlflow.db'}", models=False, verbose=False, confirm_top=0,
        gather_lanes=gather,
    )  # fmt: skip
    TRIALS_SECONDS.clear()
    started = time.perf_counter()
    tuning.tune(options, tuning.TUNING_RUN)
    study_seconds = time.perf_counter() - started
    preset_out = None
    if args.presets_out:
        label = f"k{k}" if gather or k == 1 else f"k{k}-never-gathered"
        preset_out = str(pathlib.Path(args.presets_out) / f"flax-scan-{label}.yml")
    confirming = dataclasses.replace(
        options, confirm_top=args.confirm_top, confirm_seeds=args.confirm_seeds, preset_out=preset_out
    )
    study = tuning.tune(confirming, tuning.TUNING_RUN)  # the study is complete: this only confirms
    total_seconds = time.perf_counter() - started
    confirmed = [value for key, value in study.user_attrs.items() if re.fullmatch(r"confirm\.\d+", key)]
    winner = min(confirmed, key=lambda found: sum(found["scores"]) / len(found["scores"]), default=None)
    states = [trial.state for trial in study.get_trials(deepcopy=False)]
    return {
        "trials_s": sum(TRIALS_SECONDS),
        "study_s": study_seconds,
        "total_s": total_seconds,
        "complete": states.count(optuna.trial.TrialState.COMPLETE),
        "pruned": states.count(optuna.trial.TrialState.PRUNED),
        "winner_trial": winner["trial"] if winner else -1,
        "winner_mean_s": sum(winner["scores"]) / len(winner["scores"]) if winner else float("nan"),
        "winner_seeds": len(winner["scores"]) if winner else 0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ks", type=int, nargs="+", default=[1, 4, 8, 20, 40], help="trials per program")
    parser.add_argument("--n-trials", type=int, default=40)
    parser.add_argument("--confirm-top", type=int, default=5)
    parser.add_argument("--confirm-seeds", type=int, default=3)
    parser.add_argument(
        "--presets-out", help="write each study's confirmed winner here as a preset (flax-scan-k<K>.yml)"
    )
    parser.add_argument(
        "--no-gather-ks", type=int, nargs="*", default=[40], help="also run these K with the live lanes never gathered"
    )
    args = parser.parse_args()
    from doors_gym_baselines.runtime import prepare_host_devices

    prepare_host_devices()
    threads = {name: os.environ.get(name, "-") for name in ("OMP_NUM_THREADS", "XLA_FLAGS")}
    load = os.getloadavg()[0]
    started = time.strftime("%H:%M:%S", time.gmtime())
    print(f"cores: {os.cpu_count()}; {threads}; load average {load:.2f}; started {started} UTC", flush=True)
    today_wall, today_four, today_three = today()
    print(
        f"today (K=1, one trial per program): {today_wall:.0f} s in all, winner {today_four:.2f} s to solved over 4 "
        f"seeds, {today_three:.2f} s over its 3 confirmation seeds"
    )
    time_trials()
    print(
        f"| K | {args.n_trials} trials trained | `tune` without confirmation | with confirmation | complete | pruned "
        "| winner (trial) | winner's mean s to solved (single runs) |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    runs = [(k, True) for k in args.ks] + [(k, False) for k in args.no_gather_ks]
    for k, gather in runs:
        with tempfile.TemporaryDirectory() as folder:
            row = one_study(k, args, pathlib.Path(folder), gather)
        label = f"{k}" if gather or k == 1 else f"{k}, never gathered"
        print(
            f"| {label} | {row['trials_s']:.0f} s | {row['study_s']:.0f} s | {row['total_s']:.0f} s | {row['complete']} | {row['pruned']} "
            f"| {row['winner_trial']} | {row['winner_mean_s']:.2f} s over {row['winner_seeds']} seeds |",
            flush=True,
        )


if __name__ == "__main__":
    main()
