"""What a run sets for the whole process, each in one place, set at a command's start, put back where it can be.

Nothing here runs at import or while a parser is built: a command (``train``, ``tune``, ``compare``,
``enjoy``) calls :func:`command` at its start, and a run the settings it needs around itself:

- JAX's CPU devices (:func:`prepare_host_devices`): one per core, so that the fully jitted arm can spread
  its seeds over the cores. XLA decides them once, when its backends start, so this is the one setting
  that cannot be put back;
- torch's intra-op threads (:func:`torch_threads`): set for a torch arm's run, put back after;
- JAX's persistent compilation cache (:func:`jax_compilation_cache`): set for a JAX arm's run, put back after;
- MLflow's environment (:func:`mlflow_environment`): no telemetry (nothing here may use the network) and
  no per-download progress bars, for the command, put back after;
- a worker process's threads (:func:`worker_environment`), given to the processes a command starts (a local
  cluster's, a tuning worker's) and set by a Dask worker itself (:mod:`~doors_gym_baselines.experiments.worker_threads`).

Plots draw on figures of their own (``matplotlib.figure.Figure``), so no backend is ever chosen for the
process.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator, Mapping, Sequence

FORCE_FLAG = "xla_force_host_platform_device_count"
JAX_CACHE_VARIABLE = "DOORS_GYM_JAX_CACHE"
"""The default folder of JAX's persistent compilation cache (see :func:`jax_compilation_cache`)."""
CACHED_COMPILE_SECONDS = 0.5
"""Programs that took at least this long to compile are stored in the persistent cache."""
CPU_TORCH_THREADS = 1
"""torch's intra-op threads for a run on a CPU unless told otherwise.

The networks here are small (two or three layers of at most a few hundred units): one thread runs
their update faster than two (``benchmarks/update_cost.py``), and OpenMP threads that spin while
waiting for each other slow down most when other processes share the cores.
"""
MLFLOW_ENVIRONMENT = {"MLFLOW_DISABLE_TELEMETRY": "true", "MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR": "false"}
"""MLflow's telemetry would try the network (it starts at ``import mlflow``); its per-download progress
bars would bury ours."""


def available_cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


def prepare_host_devices() -> bool:
    """Asks for one JAX CPU device per core if nothing decided it yet; True if it did.

    At the last moment it can: before ``import jax`` (``JAX_NUM_CPU_DEVICES``) or, once imported, before
    the backends start (``jax.config``). It leaves alone a choice already made (the variable,
    ``jax_num_cpu_devices`` or ``--xla_force_host_platform_device_count``) and a process whose backends
    already run. It only concerns the CPU platform: on a GPU the devices are the GPUs.
    """
    if "JAX_NUM_CPU_DEVICES" in os.environ or device_count_flagged(os.environ):
        return False
    if sys.modules.get("jax") is None:  # not imported yet (or blocked: then nothing reads the variable)
        os.environ["JAX_NUM_CPU_DEVICES"] = str(available_cores())
        return True
    import jax
    from jax._src import xla_bridge

    if xla_bridge.backends_are_initialized() or jax.config.jax_num_cpu_devices != -1:
        return False
    jax.config.update("jax_num_cpu_devices", available_cores())
    return True


XLA_THREAD_FLAGS = ("--xla_cpu_multi_thread_eigen=false",)
"""XLA's flags for a worker held to its share of the cores: Eigen's products and convolutions on one thread. The size
of XLA's CPU thread pool is no flag: it is :data:`XLA_POOL_VARIABLE`."""
XLA_POOL_VARIABLE = "NPROC"
"""The threads of XLA's CPU pool (``tf_XLAEigen``), read when JAX's CPU backend starts; without it one per core. The
pool never has fewer threads than JAX has CPU devices (measured with jaxlib 0.10: ``NPROC=1`` gives one thread, three
with three devices)."""
WORKER_THREADS_VARIABLE = "DOORS_GYM_WORKER_THREADS"
"""Set in a worker's environment by :func:`worker_environment`: the cores it may use."""


def flag_name(token: str) -> str:
    """The name of an ``XLA_FLAGS`` token: ``--xla_dump_to=/tmp/x`` is ``xla_dump_to``."""
    return token.lstrip("-").split("=", 1)[0]


def device_count_flagged(environ: Mapping[str, str]) -> bool:
    """Whether ``environ``'s ``XLA_FLAGS`` set JAX's CPU devices (``--xla_force_host_platform_device_count``)."""
    return any(flag_name(token) == FORCE_FLAG for token in environ.get("XLA_FLAGS", "").split())


def xla_flags(flags: Sequence[str], user: str) -> str:
    """``XLA_FLAGS`` of ``flags`` followed by the user's ``user`` flags, these kept as they are; a flag the user set
    is not added again (theirs stays).

    XLA's parser stops at the first token without its leading ``--`` and drops every flag after it, silently: ours
    are real flags, each with its dashes, and come first, so that nothing of the user's can hide them.
    """
    for flag in flags:
        if not flag.startswith("--") or "=" not in flag:
            raise ValueError(
                f"XLA flag {flag!r} is not --NAME=VALUE: XLA's parser would stop at it and drop every flag after it"
            )
    tokens = user.split()
    named = {flag_name(token) for token in tokens}
    return " ".join([*(flag for flag in flags if flag_name(flag) not in named), *tokens])


def worker_environment(threads: int, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The variables of a worker process that runs on ``threads`` cores of a machine it shares with others (a Dask
    worker, a tuning worker), over ``environ`` (default: this process's): OpenMP's and BLAS's threads (torch's
    intra-op pool starts from them), XLA's CPU pool (:data:`XLA_POOL_VARIABLE`) and flags (:func:`xla_flags`: the
    user's kept) and JAX's CPU devices, all held to ``threads``; a device count the user's ``XLA_FLAGS`` set is
    left to them."""
    environ = os.environ if environ is None else environ
    count = str(threads)
    environment = {
        "OMP_NUM_THREADS": count,
        "MKL_NUM_THREADS": count,
        "OPENBLAS_NUM_THREADS": count,
        XLA_POOL_VARIABLE: count,
        "XLA_FLAGS": xla_flags(XLA_THREAD_FLAGS, environ.get("XLA_FLAGS", "")),
        WORKER_THREADS_VARIABLE: count,
    }
    if not device_count_flagged(environ):
        environment["JAX_NUM_CPU_DEVICES"] = count
    return environment


@contextlib.contextmanager
def mlflow_environment() -> Iterator[None]:
    """:data:`MLFLOW_ENVIRONMENT` for the block; variables the user set are left as they are."""
    added = {name: value for name, value in MLFLOW_ENVIRONMENT.items() if name not in os.environ}
    os.environ.update(added)
    try:
        yield
    finally:
        for name in added:
            os.environ.pop(name, None)


@contextlib.contextmanager
def command() -> Iterator[None]:
    """What every baselines command sets at its start: JAX's CPU devices and MLflow's environment."""
    prepare_host_devices()
    with mlflow_environment():
        yield


@contextlib.contextmanager
def torch_threads(threads: int | None, device: str = "cpu") -> Iterator[int]:
    """Sets torch's intra-op threads for the block (``threads``, else :data:`CPU_TORCH_THREADS` on a CPU;
    a GPU run leaves them as they are); yields the count in effect and puts the previous one back."""
    import torch

    previous = torch.get_num_threads()
    wanted = threads if threads is not None else (CPU_TORCH_THREADS if device == "cpu" else previous)
    torch.set_num_threads(wanted)
    try:
        yield torch.get_num_threads()
    finally:
        torch.set_num_threads(previous)


@contextlib.contextmanager
def jax_compilation_cache(folder: str | None) -> Iterator[str | None]:
    """JAX's persistent compilation cache in ``folder`` (else ``$DOORS_GYM_JAX_CACHE``) for the block; yields it.

    Off unless asked, as in JAX. With it, a process that compiles a program an earlier one compiled (the
    same shapes, hyperparameters, devices and JAX version) loads it from the folder instead: torch's
    inductor keeps such a cache by default, and this is the JAX arms' counterpart.
    """
    folder = folder or os.environ.get(JAX_CACHE_VARIABLE) or None
    if folder is None:
        yield None
        return
    import jax

    names = ("jax_compilation_cache_dir", "jax_persistent_cache_min_compile_time_secs")
    previous = {name: getattr(jax.config, name) for name in names}
    jax.config.update("jax_compilation_cache_dir", str(folder))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", CACHED_COMPILE_SECONDS)
    try:
        yield str(folder)
    finally:
        for name, value in previous.items():
            jax.config.update(name, value)
