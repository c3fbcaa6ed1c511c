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
