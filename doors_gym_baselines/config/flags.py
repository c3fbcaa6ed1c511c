"""Command-line flags generated from dataclass fields: one definition for the field, its flag and its help.

Every field becomes ``--field-name`` typed from its annotation (``bool`` fields
become ``--x/--no-x``, tuples take several values), with the help line and
choices from its metadata (see :func:`doors_gym_baselines.config.field`).
Metadata ``cli=False`` leaves a field off the command line, ``layout=True``
marks the layout fields that come from ``doors_gym.cli.layout_parser`` (the
same flags in every command that builds an env), ``flag`` renames the flag and ``switches`` makes
one flag per choice (``--quick`` / ``--full``), beside the flag that takes the
value itself when the field also has a ``metavar``.

We keep argparse rather than tyro: the flags keep their names and argparse's
usage and errors (which the rest of ``doors-gym`` prints), for one small
generator.
"""

from __future__ import annotations

import argparse
import dataclasses
import types
import typing
from collections.abc import Iterable
from typing import Any


def _base_type(hint: Any) -> tuple[Any, bool]:
    """``(type, optional)`` of an annotation: ``int | None`` is ``(int, True)``."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        args = [arg for arg in typing.get_args(hint) if arg is not type(None)]
        return args[0], True
    return hint, False


def cli_fields(cls: type, exclude: Iterable[str] = (), include: Iterable[str] | None = None) -> list[dataclasses.Field]:
    """The fields of ``cls`` that are flags: not ``cli=False``, not layout, not excluded, in ``include`` if given."""
    excluded = set(exclude)
    included = None if include is None else set(include)
    return [
        spec
        for spec in dataclasses.fields(cls)
        if spec.metadata.get("cli", True)
        and not spec.metadata.get("layout")
        and spec.name not in excluded
        and (included is None or spec.name in included)
    ]


FROM_PRESET = "(default: the preset's)"
"""What the help line of a flag whose default comes from a preset says."""


def add_arguments(
    parser: argparse.ArgumentParser | Any,
    cls: type,
    defaults: Any = None,
    exclude: Iterable[str] = (),
    include: Iterable[str] | None = None,
    from_preset: Iterable[str] = (),
) -> None:
    """One flag per field of the dataclass ``cls`` (defaults from the instance ``defaults``, else the fields').

    The fields named in ``from_preset`` take their default from a preset chosen
    at run time: their flags are left out of the parsed namespace unless given
    (``argparse.SUPPRESS``), so :func:`values_from` returns only what was typed.
    """
    hints = typing.get_type_hints(cls)
    preset_fields = set(from_preset)
    for spec in cli_fields(cls, exclude, include):
        default = getattr(defaults, spec.name) if defaults is not None else spec.default
        help_text = spec.metadata["help"].replace("%", "%%")  # argparse formats help with %
        if spec.name in preset_fields:
            default, help_text = argparse.SUPPRESS, f"{help_text} {FROM_PRESET}"
        if "switches" in spec.metadata:
            add_switches(parser, spec, default, help_text)
        else:
            add_flag(parser, spec, _base_type(hints[spec.name])[0], default, help_text)


def flag_of(spec: dataclasses.Field) -> str:
    """The flag of a field: its metadata's ``flag``, else ``--field-name``."""
    return spec.metadata.get("flag", "--" + spec.name.replace("_", "-"))


def add_switches(parser: argparse.ArgumentParser | Any, spec: dataclasses.Field, default: Any, help_text: str) -> None:
    """Exclusive flags of a field with ``switches``: one per named choice (``--quick``, ``--full``), beside the
    flag that takes the value itself when the field has a ``metavar``."""
    group = parser.add_mutually_exclusive_group()
    if "metavar" in spec.metadata:
        group.add_argument(
            flag_of(spec), dest=spec.name, metavar=spec.metadata["metavar"], help=f"{help_text} (default: {default})"
        )
    for value, switch_help in spec.metadata["switches"].items():
        suffix = " (the default)" if value == default else ""
        group.add_argument(f"--{value}", dest=spec.name, action="store_const", const=value, help=switch_help + suffix)
    parser.set_defaults(**{spec.name: default})


def add_flag(
    parser: argparse.ArgumentParser | Any, spec: dataclasses.Field, hint: Any, default: Any, help_text: str
) -> None:
    """The flag of a field of type ``hint``: ``--x/--no-x`` for a bool, several values for a tuple, one otherwise."""
    flag = flag_of(spec)
    if hint is bool:
        parser.add_argument(
            flag, dest=spec.name, action=argparse.BooleanOptionalAction, default=default, help=help_text
        )
    elif typing.get_origin(hint) is tuple:
        item, *rest = typing.get_args(hint)
        nargs = "+" if rest == [Ellipsis] else len(typing.get_args(hint))
        shown = "none" if default is None else " ".join(map(str, default))
        parser.add_argument(
            flag,
            dest=spec.name,
            type=item,
            nargs=nargs,
            default=default if default in (None, argparse.SUPPRESS) else list(default),
            metavar="N" if item is int else "VALUE",
            help=help_text if "(default" in help_text else f"{help_text} (default: {shown})",
        )
    else:
        parser.add_argument(
            flag,
            dest=spec.name,
            type=hint,
            default=default,
            choices=spec.metadata.get("choices"),
            # A help text that explains its own default (a None that stands for a fallback) keeps it.
            help=help_text if "(default" in help_text else f"{help_text} (default: %(default)s)",
        )


def values_from(
    cls: type, args: argparse.Namespace, exclude: Iterable[str] = (), include: Iterable[str] | None = None
) -> dict[str, Any]:
    """The values of ``cls``'s flags and layout fields found in parsed ``args`` (``include`` only, if given),
    lists as tuples."""
    values = {}
    excluded, included = set(exclude), None if include is None else set(include)
    for spec in dataclasses.fields(cls):
        if spec.name in excluded or (included is not None and spec.name not in included):
            continue
        if not spec.metadata.get("cli", True) or not hasattr(args, spec.name):
            continue
        value = getattr(args, spec.name)
        values[spec.name] = tuple(value) if isinstance(value, list) else value
    return values
