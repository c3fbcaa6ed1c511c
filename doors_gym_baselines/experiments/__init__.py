"""The experiments: arms trained side by side and level by level, here or on a cluster.

- :mod:`.compare`: ``doors-gym compare``, the arms over seeds at one level, tracked in MLflow, with its tables;
- :mod:`.ladder`: ``doors-gym ladder``, a comparison per level;
- :mod:`.executors`: where a comparison's runs train (this process, or a Dask cluster);
- :mod:`.worker_threads`: a Dask worker's threads held to its share of the cores.

Tuning, an experiment of its own kind, is :mod:`doors_gym_baselines.tuning`.
"""
