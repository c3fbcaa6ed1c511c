"""The option helpers every settings dataclass uses: :func:`field` declares a field with its help line (what the
command-line generator, :mod:`.flags`, reads), the ``check_*`` functions validate a value in ``__post_init__``
with a ``ValueError`` naming the field, the value and the allowed range.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any


def field(default: Any, help: str, **metadata: Any) -> Any:
    """A dataclass field whose ``help`` (and choices, flags) the command-line generator reads."""
    if isinstance(default, (list, dict, set)):
        raise TypeError("mutable defaults are not allowed")
    return dataclasses.field(default=default, metadata={"help": help, **metadata})


def check_choice(name: str, value: Any, allowed: Sequence[str]) -> None:
    """``ValueError`` naming ``name`` and the allowed values unless ``value`` is one of them."""
    if value not in allowed:
        raise ValueError(f"{name}={value!r} is not supported: expected one of {list(allowed)}")


def check_at_least(name: str, value: Any, minimum: int) -> None:
    """``ValueError`` naming ``name`` and the range unless ``value`` is an integer ``>= minimum``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name}={value!r} is out of range: expected an integer >= {minimum}")


def check_folder(name: str, value: Any) -> None:
    """``ValueError`` naming ``name`` unless ``value`` is a folder's path on a filesystem (no URL)."""
    if not isinstance(value, str) or not value.strip() or "://" in value:
        raise ValueError(
            f"{name}={value!r} is not a folder's path: expected a path on a filesystem (absolute, or relative to "
            "this command's folder); URLs are not supported"
        )


def check_fraction(name: str, value: Any) -> None:
    """``ValueError`` unless ``value`` is a number in ``[0, 1]``."""
    if isinstance(value, bool) or not (isinstance(value, (int, float)) and 0.0 <= value <= 1.0):
        raise ValueError(f"{name}={value!r} is out of range: expected a number in [0, 1]")


def first_line(error: BaseException) -> str:
    """The first line of ``error``'s message (driver and archive errors run to pages)."""
    return (str(error).strip().splitlines() or [""])[0]


def check_choices(instance: Any) -> None:
    """Checks every field of ``instance`` that declares ``choices`` in its metadata."""
    for spec in dataclasses.fields(instance):
        if "choices" in spec.metadata:
            check_choice(spec.name, getattr(instance, spec.name), spec.metadata["choices"])


def field_names(instance: Any) -> tuple[str, ...]:
    """The field names of a dataclass or of its instance."""
    return tuple(spec.name for spec in dataclasses.fields(instance))
