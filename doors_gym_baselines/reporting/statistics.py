"""Statistics over seeds that hold up (Agarwal et al. 2021, "Deep RL at the edge of the statistical precipice").

A figure over seeds is reported as its interquartile mean (IQM: the mean of
the middle 50 % of the seeds, ``scipy.stats.trim_mean(x, 0.25)``) with a 95 %
percentile bootstrap confidence interval over seeds. rliable's stratified
bootstrap resamples the runs within each task; with one task (Doors-v0) that is
the plain bootstrap over seeds that ``scipy.stats.bootstrap`` does. (rliable
1.2 installs beside our pins but does not import: its ``arch`` dependency fails
against pandas 3.)

Seeds that never solve are counted, not dropped: their time to solved is
``inf``, which the IQM trims while they are at most a quarter of the seeds and
which otherwise makes the IQM, or the interval's upper end, ``inf``.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Sequence

import numpy as np

TRIM = 0.25
"""Proportion cut from each end for the interquartile mean."""
CONFIDENCE = 0.95
RESAMPLES = 5000
SEED = 0
"""The bootstrap's seed: the same figures give the same interval."""


@dataclasses.dataclass(frozen=True)
class Interval:
    """An interquartile mean over seeds with its bootstrap confidence interval."""

    iqm: float
    low: float
    high: float

    def __format__(self, spec: str) -> str:
        if math.isnan(self.iqm):  # a figure no seed has (no training episode ended)
            return "-"
        spec = spec or ".3f"
        return f"{_number(self.iqm, spec)} [{_number(self.low, spec)}, {_number(self.high, spec)}]"


def _number(value: float, spec: str) -> str:
    if math.isinf(value):
        return "∞" if value > 0 else "-∞"
    return format(value, spec)


def iqm(values: Sequence[float], axis: int = -1) -> np.ndarray | float:
    """The interquartile mean (``inf`` stays ``inf``)."""
    from scipy.stats import trim_mean

    with np.errstate(invalid="ignore"):
        return trim_mean(np.asarray(values, dtype=float), TRIM, axis=axis)


def iqm_interval(values: Sequence[float], confidence: float = CONFIDENCE, resamples: int = RESAMPLES) -> Interval:
    """The IQM of ``values`` and its percentile bootstrap interval (both ends the IQM for one value).

    ``ValueError`` for no values or a NaN (a missing figure must be ``inf`` or left out on purpose).
    """
    from scipy.stats import bootstrap

    array = np.asarray(values, dtype=float)
    if array.size == 0 or np.isnan(array).any():
        raise ValueError(f"values={array.tolist()!r} are invalid: expected one or more numbers, inf allowed, no NaN")
    centre = float(iqm(array))
    if array.size == 1 or np.all(array == array[0]):
        return Interval(centre, centre, centre)
    with warnings.catch_warnings(), np.errstate(invalid="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)  # inf - inf while interpolating between two inf resamples
        result = bootstrap(
            (array,),
            iqm,
            confidence_level=confidence,
            n_resamples=resamples,
            method="percentile",
            vectorized=True,
            rng=np.random.default_rng(SEED),
        )
    low, high = (float(end) for end in (result.confidence_interval.low, result.confidence_interval.high))
    return Interval(centre, low if not math.isnan(low) else math.inf, high if not math.isnan(high) else math.inf)
