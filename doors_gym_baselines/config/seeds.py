"""Which seeds choose and which seeds report, kept apart.

Anything chosen (a tuning study's trials, a probe, the runs that decide to keep a preset) is chosen on seeds below
:data:`FIRST_EVALUATION_SEED`; ``doors-gym compare`` and ``doors-gym ladder`` report on that seed and above. A preset
names the seeds it was chosen on in its ``study`` section (any ``seed`` or ``seeds`` key, at any depth:
:func:`seeds_named`), so that a comparison can say when it evaluates a seed its preset saw and a test can fail when a
committed preset names an evaluation seed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

FIRST_EVALUATION_SEED = 100
"""Comparisons and the ladder report on seeds from here on; every choice is made on the seeds below."""
SEED_KEYS = ("seed", "seeds")
"""The keys of a preset's ``study`` section that name the seeds it was chosen on."""


def seeds_named(study: Any) -> tuple[int, ...]:
    """The seeds a preset's ``study`` section names (the values of its ``seed`` and ``seeds`` keys at any depth),
    sorted; ``ValueError`` naming a key whose value is not a seed or a list of seeds."""
    seeds: set[int] = set()
    _collect(study, "study", seeds)
    return tuple(sorted(seeds))


def _collect(value: Any, where: str, seeds: set[int]) -> None:
    if isinstance(value, Mapping):
        for key, item in value.items():
            if key in SEED_KEYS:
                seeds.update(_seed_list(item, f"{where}.{key}"))
            else:
                _collect(item, f"{where}.{key}", seeds)
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            _collect(item, f"{where}[{index}]", seeds)


def _seed_list(value: Any, where: str) -> list[int]:
    items = value if isinstance(value, list | tuple) else [value]
    if not all(isinstance(item, int) and not isinstance(item, bool) and item >= 0 for item in items):
        raise ValueError(f"{where}={value!r} is not a seed or a list of seeds: expected integers >= 0")
    return list(items)


LADDER_FIRST_SEED = 110
"""The ladder reports from here on: the level presets' former choices saw seeds 100-109 (`Random`'s budget the
misses of 100-109, `3Walls`' schedule 100-102, `31x31`'s budget 101, `63x63`'s buffer 100-101), before every preset
was kept on seeds below :data:`FIRST_EVALUATION_SEED`."""
