"""DQN baselines on Doors: PyTorch and Flax against both envs, a fully jitted Flax arm, tuning and comparison.

Named ``doors_gym_baselines`` (so it never clashes with another distribution's top-level ``baselines``).
Every arm exposes ``train(config, trial=None) -> TrainResult``; ``tuning`` runs
Optuna studies over them and ``compare`` trains them side by side, both tracked
in MLflow (``tracking``).
"""


def __getattr__(name: str) -> object:
    """``doors_gym_baselines.compare``, imported when first used: the module
    :mod:`doors_gym_baselines.experiments.compare`, callable as its
    :func:`~doors_gym_baselines.experiments.compare.compare_arms` (``doors_gym_baselines.compare([my_arm, "torch-numpy"])``)."""
    if name == "compare":
        import importlib

        return importlib.import_module(f"{__name__}.experiments.compare")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
