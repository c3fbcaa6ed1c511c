"""Does a lane's score rank as its own run would? One program of K flax-scan trials, then each complete trial
re-trained alone (same hyperparameters, same seed, one run per program): prints each trial's lane score (its
own clock at its solved step: the program's compile, its share of the chunks it trained in and of the
evaluations) beside its single run's seconds to solved and env steps, then the rank correlation of the two.

    .venv/bin/python benchmarks/lane_vs_single.py --k 8
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import pathlib
import tempfile


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--k", type=int, default=8, help="trials in the program")
    args = parser.parse_args()
    import numpy as np
    import optuna

    from doors_gym_baselines import tuning
    from doors_gym_baselines.arms import get_arm
    from doors_gym_baselines.config import make_config
    from doors_gym_baselines.harness.metrics import seconds_to_solved, solved_since
    from doors_gym_baselines.runtime import prepare_host_devices
    from doors_gym_baselines.tuning.space import hyperparameters_from_params

    prepare_host_devices()
    arm = get_arm("flax-scan")
    run = tuning.check_trial_run(tuning.TUNING_RUN)
    print(f"cores: {os.cpu_count()}; load average {os.getloadavg()[0]:.2f}; one program of {args.k} trials, then each complete one alone")
    print("| trial | seed | lane score (s) | lane solved from (env steps) | alone: s to solved | alone: solved from (env steps) |")
    print("|---:|---:|---:|---:|---:|---:|")
    pairs = []
    with tempfile.TemporaryDirectory() as folder:
        options = tuning.TuneOptions(
            arm="flax-scan", n_trials=args.k, trials_per_program=args.k, verbose=False, models=False,
            storage=f"sqlite:///{pathlib.Path(folder) / 'o.db'}", tracking_uri=f"sqlite:///{pathlib.Path(folder) / 'm.db'}",
        )  # fmt: skip
        study = tuning.tune(options, run)
        for trial in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,)):
            hyperparameters = hyperparameters_from_params(trial.params, arm.hyperparameters())
            config = make_config(hyperparameters, dataclasses.replace(run, seed=trial.user_attrs["seed"]))
            result = arm.train(config)
            alone = seconds_to_solved(result.history, run.hold_out_steps)
            start = solved_since(result.history, run.hold_out_steps)
            pairs.append((trial.value, alone if start else float("nan")))
            print(
                f"| {trial.number} | {trial.user_attrs['seed']} | {trial.value:.2f} "
                f"| {trial.user_attrs.get('solved_step') or '-'} | {alone:.2f} | {start.step if start else '-'} |",
                flush=True,
            )
    both = np.array([pair for pair in pairs if np.isfinite(pair).all()])
    if len(both) >= 3:
        ranks = [np.argsort(np.argsort(column)) for column in both.T]
        rho = np.corrcoef(*ranks)[0, 1]
        ratio = np.median(both[:, 0] / both[:, 1])
        print(f"\n{len(both)} trials solved both ways: Spearman rank correlation {rho:.2f}; lane score / alone, median {ratio:.2f}")


if __name__ == "__main__":
    main()
