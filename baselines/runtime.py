"""Process-wide settings a run makes, each in one place, set at the run's start and put back after it.

torch has one intra-op thread count per process: a run that sets it for itself (:func:`torch_threads`)
puts it back when it ends, so the next run (another arm of a comparison, the next trial of a study)
starts from what the process had, whichever arm ran first.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

CPU_TORCH_THREADS = 1
"""torch's intra-op threads for a run on a CPU unless told otherwise.

The networks here are small (two or three layers of at most a few hundred units): one thread runs
their update faster than two (``benchmarks/update_cost.py``), and OpenMP threads that spin while
waiting for each other slow down most when other processes share the cores.
"""


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
