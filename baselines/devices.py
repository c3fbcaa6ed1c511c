"""One JAX CPU device per core, so that the fully jitted arm can spread its seeds over the cores.

XLA gives a CPU one device unless told otherwise before its backends start;
then a vmapped run of several seeds keeps to that device's threads. This asks
for one device per core the process may use, at the last moment it can: before
``import jax`` (``JAX_NUM_CPU_DEVICES``) or, once imported, before the backends
start (``jax.config``). It leaves alone a choice already made (the variable,
``jax_num_cpu_devices`` or ``--xla_force_host_platform_device_count``) and a
process whose backends already run. It only concerns the CPU platform: on a GPU
the devices are the GPUs.
"""

from __future__ import annotations

import os
import sys

FORCE_FLAG = "xla_force_host_platform_device_count"
JAX_CACHE_VARIABLE = "DOORS_GYM_JAX_CACHE"
"""The default folder of JAX's persistent compilation cache (see :func:`use_jax_compilation_cache`)."""
CACHED_COMPILE_SECONDS = 0.5
"""Programs that took at least this long to compile are stored in the persistent cache."""


def available_cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


def prepare_host_devices() -> bool:
    """Asks for one CPU device per core if nothing decided it yet; True if it did."""
    if "JAX_NUM_CPU_DEVICES" in os.environ or FORCE_FLAG in os.environ.get("XLA_FLAGS", ""):
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


def use_jax_compilation_cache(folder: str | None) -> str | None:
    """Points JAX's persistent compilation cache at ``folder`` (else ``$DOORS_GYM_JAX_CACHE``); returns it, or None.

    Off unless asked, as in JAX. With it, a process that compiles a program an
    earlier one compiled (the same shapes, hyperparameters, devices and JAX
    version) loads it from the folder instead: torch's inductor keeps such a
    cache by default, and this is the JAX arms' counterpart.
    """
    folder = folder or os.environ.get(JAX_CACHE_VARIABLE) or None
    if folder is None:
        return None
    import jax

    jax.config.update("jax_compilation_cache_dir", str(folder))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", CACHED_COMPILE_SECONDS)
    return str(folder)
