"""The schedules of every DQN arm, written once over an array module: exploration, exploring starts, learning rate.

Each is a pure function of a step count and the values that shape it. ``xp`` is NumPy for the host loop (and Python
numbers), ``jax.numpy`` inside a trace; the values are Python numbers for a run of its own, or arrays of one value
per lane in a program of lanes (:mod:`.scan_lanes`), so one formula serves the host loop, the fully jitted arm and
its lanes. The torch arms' scheduler and the JAX learning step read the same learning rate.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def epsilon(step: Any, start: float, end: float, fraction: Any, total_steps: int, xp: Any = np) -> Any:
    """The exploration rate at env step ``step``: ``start`` decayed linearly to ``end`` over ``fraction`` of
    ``total_steps`` (at least one step), then ``end``."""
    duration = xp.maximum(1.0, fraction * total_steps)
    progress = xp.minimum(1.0, step / duration)
    return start + progress * (end - start)


def restart_probability(step: Any, probability: Any, fraction: Any, total_steps: int, xp: Any = np) -> Any:
    """The probability that an episode starting after env step ``step`` starts anywhere (exploring starts):
    ``probability`` decayed linearly to 0 over ``fraction`` of ``total_steps`` (at least one step)."""
    duration = xp.maximum(1.0, fraction * total_steps)
    return probability * xp.maximum(0.0, 1.0 - step / duration)


def learning_rate(update: Any, rate: Any, end_fraction: Any, decay_updates: Any, xp: Any = np) -> Any:
    """The learning rate of update ``update`` (from 0): ``rate`` decayed linearly to ``end_fraction`` of it over
    ``decay_updates`` updates, then held (``optax.linear_schedule``'s formula); ``rate`` itself when
    ``end_fraction`` is a number of 1 or more (a constant rate, no schedule traced)."""
    if isinstance(end_fraction, (int, float)) and end_fraction >= 1.0:
        return rate
    end = rate * end_fraction
    remaining = 1 - xp.clip(update, 0, decay_updates) / decay_updates
    return (rate - end) * remaining + end
