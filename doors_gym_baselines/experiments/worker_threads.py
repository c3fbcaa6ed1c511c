"""XLA's, OpenMP's and BLAS's threads held to a Dask worker's share of the cores, whoever started the worker.

A local cluster's workers get theirs in their environment from their start
(:func:`~doors_gym_baselines.runtime.worker_environment`). A worker started by hand (``dask worker``, dask-jobqueue,
a Kubernetes pod) gets them from :class:`WorkerThreads`, which the driver registers on the cluster at
``--address`` (each worker, and each that joins later, runs its :meth:`~WorkerThreads.setup` before its first task),
or from this module as a preload, before the worker takes any task::

    dask worker tcp://HOST:8786 --nworkers 4 --nthreads 1 --preload doors_gym_baselines.experiments.worker_threads

Either way the share is the worker's own thread count (``--nthreads``) unless told. The process is already running,
so each library takes the limit when it reads it (:func:`limit_threads`):

- XLA (``XLA_FLAGS``, its CPU pool's size, JAX's CPU devices) reads them when JAX's CPU backend starts, at the first
  JAX array of the process: in effect unless a task used JAX in that worker before (then said in the worker's log);
- OpenMP (torch's intra-op pool, ``libgomp``) reads ``OMP_NUM_THREADS`` when it is loaded, at ``import torch``: in
  effect unless a task imported torch before; a torch arm's run sets its own threads anyway (``--torch-threads``);
- BLAS (NumPy's OpenBLAS) started its pool when NumPy was imported, which a worker does as it starts:
  ``threadpoolctl`` resizes it in place (``OPENBLAS_NUM_THREADS`` and ``MKL_NUM_THREADS`` are set as well, for a
  library loaded later).

Nothing here is imported unless Dask is used (``--executor dask``, or the preload).
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

from distributed.diagnostics.plugin import WorkerPlugin

from ..config import check_at_least
from ..runtime import device_count_flagged, worker_environment

PLUGIN_NAME = "doors-gym-worker-threads"
"""The name :class:`WorkerThreads` is registered under: a second driver's registration leaves the first in place."""
logger = logging.getLogger(__name__)


def limit_threads(threads: int) -> list[str]:
    """Holds this process's XLA, OpenMP and BLAS threads to ``threads`` from now on (the module's docstring says
    when each takes it); the settings that came too late to take effect, each in a line (logged as warnings)."""
    check_at_least("threads", threads, 1)
    late = []
    os.environ.update(worker_environment(threads))
    jax = sys.modules.get("jax")
    if jax is not None:
        from jax._src import xla_bridge

        if xla_bridge.backends_are_initialized():
            late.append("XLA: JAX's backends already run here; its CPU threads and devices stay as they are")
        elif not device_count_flagged(os.environ):  # imported: JAX read JAX_NUM_CPU_DEVICES then
            jax.config.update("jax_num_cpu_devices", threads)
    if "torch" in sys.modules:
        late.append("OpenMP: torch was imported here before; its pool keeps its size until a run sets its threads")
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        late.append("BLAS: threadpoolctl is not installed; a pool started already keeps its size")
    else:
        threadpool_limits(limits=threads, user_api="blas")
    for line in late:
        logger.warning("thread limit %d: %s", threads, line)
    return late


class WorkerThreads(WorkerPlugin):
    """A worker plugin that holds each worker's XLA, OpenMP and BLAS threads to ``threads`` (default: the worker's
    own thread count, ``dask worker --nthreads``): ``client.register_plugin(WorkerThreads())``."""

    idempotent = True
    name = PLUGIN_NAME

    def __init__(self, threads: int | None = None) -> None:
        if threads is not None:
            check_at_least("threads", threads, 1)
        self.threads = threads

    def setup(self, worker: Any) -> None:
        limit_threads(self.threads or worker.state.nthreads)


def dask_setup(worker: Any) -> None:
    """The preload's entry (``dask worker ... --preload doors_gym_baselines.experiments.worker_threads``): the worker's threads
    held to its own thread count."""
    limit_threads(worker.state.nthreads)
