"""The registry of the installed arms (what an arm is: :mod:`doors_gym_baselines.arm`).

Arms are found
through the entry-point group ``doors_gym.arms`` (:data:`ARM_GROUP`): this
distribution names its own six there, and any installed package adds its arms
the same way, with no line changed here. An arm's entry point names its record
(``module:ATTRIBUTE``), which is loaded (its file and framework imported) only
where it is used, so naming arms (``--arm``'s choices, ``doors-gym --help``,
``play``) imports no framework. The CLI, model logging, enjoy, tuning and compare
look arms up here and use the protocol; nothing else compares arm names.
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
from collections.abc import Iterator, Mapping
from typing import Any

from doors_gym.extras import require

from .arm import Arm, ArmProtocol
from .config import check_choice, first_line

ARM_GROUP = "doors_gym.arms"
"""The entry-point group every arm is found through: ``name = "module:ATTRIBUTE"`` (the arm's record)."""
TABLE_ORDER = ("torch-numpy", "torch-jax", "torch-compile", "flax-numpy", "flax-jax", "flax-scan")
"""The order in which tables, plots and ``--arm`` list this distribution's arms (packaging sorts entry points
by name); other packages' arms follow, by name."""


class ArmUnavailable(ValueError):
    """An installed arm cannot be used: its package failed to import, or its entry point is not an arm."""


class ArmNameClash(ValueError):
    """Two installed packages name an arm the same."""


def distribution_of(entry: importlib.metadata.EntryPoint) -> str:
    """The distribution that declares ``entry``, with its version (``doors-gym 0.1.0``)."""
    dist = entry.dist
    return f"{dist.name} {dist.version}" if dist is not None else "an unknown package"


def arm_entry_points(group: str = ARM_GROUP) -> dict[str, list[importlib.metadata.EntryPoint]]:
    """The installed arms' entry points by name: this distribution's first (:data:`TABLE_ORDER`), then the
    others' by name (a name with two entries is a clash, reported where it is used)."""
    entries: dict[str, list[importlib.metadata.EntryPoint]] = {}
    for entry in importlib.metadata.entry_points(group=group):
        found = entries.setdefault(entry.name, [])
        if all(distribution_of(entry) != distribution_of(other) for other in found):  # a package seen twice
            found.append(entry)

    def order(name: str) -> tuple[int, str]:
        return (TABLE_ORDER.index(name), "") if name in TABLE_ORDER else (len(TABLE_ORDER), name)

    return {name: entries[name] for name in sorted(entries, key=order)}


class ArmRegistry(Mapping[str, ArmProtocol]):
    """The installed arms by name (:data:`ARM_GROUP`), in table order; a record is loaded at its first lookup.

    Iterating gives the names without importing anything; looking one up imports its package. A missing
    framework of a built-in arm is named with its extra; a plug-in that fails to import is one line
    naming its package (:class:`ArmUnavailable`), and other arms go on working.
    """

    def __init__(self, group: str = ARM_GROUP) -> None:
        self._group = group
        self._entries: dict[str, list[importlib.metadata.EntryPoint]] | None = None
        self._loaded: dict[str, ArmProtocol] = {}
        self._added: dict[str, ArmProtocol] = {}

    @property
    def entries(self) -> dict[str, list[importlib.metadata.EntryPoint]]:
        if self._entries is None:
            self._entries = arm_entry_points(self._group)
        return self._entries

    def __getitem__(self, name: str) -> ArmProtocol:
        if name in self._added:
            return self._added[name]
        if name not in self._loaded:
            self._loaded[name] = self._load(name, self.entries[name])
        return self._loaded[name]

    def _load(self, name: str, found: list[importlib.metadata.EntryPoint]) -> ArmProtocol:
        if len(found) > 1:
            raise ArmNameClash(
                f"arm {name!r} is provided by two packages, {' and '.join(map(distribution_of, found))}: "
                "uninstall one of them"
            )
        entry = found[0]
        package = distribution_of(entry)
        if self.is_builtin(name):
            require(entry.module, f"the {name} arm")  # a missing framework, named with its extra
        try:
            arm = entry.load()
        except Exception as error:  # noqa: BLE001 - whatever a plug-in raises at import is reported in one line
            raise ArmUnavailable(
                f"the {name} arm of {package} failed to import ({entry.value}): {type(error).__name__}: "
                f"{first_line(error)}"
            ) from error
        if not isinstance(arm, ArmProtocol) or arm.name != name:
            raise ArmUnavailable(f"the entry point {name} = {entry.value!r} of {package} is not the {name} arm")
        return dataclasses.replace(arm, package=package) if isinstance(arm, Arm) else arm

    def is_builtin(self, name: str) -> bool:
        """Whether the arm called ``name`` is one of this package's own."""
        return name not in self._added and all(
            entry.module.startswith(f"{__package__}.") for entry in self.entries.get(name, [])
        )

    def is_installed(self, name: str) -> bool:
        """Whether the arm called ``name`` comes from an installed package (every process finds it by its name),
        not from :meth:`add` (this process only)."""
        return name in self.entries and name not in self._added

    def add(self, arm: ArmProtocol) -> None:
        """Makes ``arm`` (an object, e.g. from a notebook) known by its name for this process; the installed
        arm of that name is fine (the same record), another one is a :class:`ArmNameClash`."""
        if not isinstance(arm, ArmProtocol):
            raise TypeError(f"{arm!r} is not an arm: see doors_gym_baselines.arms.ArmProtocol")
        if arm.name in self.entries and arm.name not in self._added:
            installed = self[arm.name]
            if installed is arm or getattr(installed, "trainer", None) is getattr(arm, "trainer", arm):
                return
            packages = ", ".join(map(distribution_of, self.entries[arm.name]))
            raise ArmNameClash(f"arm {arm.name!r} is installed already ({packages}): name yours otherwise")
        self._added[arm.name] = arm

    def __iter__(self) -> Iterator[str]:
        return iter([*self.entries, *(name for name in self._added if name not in self.entries)])

    def __len__(self) -> int:
        return len(list(iter(self)))


ARMS: ArmRegistry = ArmRegistry()
"""Every installed arm, by name: the one ``--arm`` vocabulary of ``train``, ``enjoy``, ``tune`` and ``compare``."""


class ArmReference:
    """An arm of the registry as a module-level constant: its name is here, the rest of its record is read
    from :data:`ARMS` when first asked for (so that importing the constant imports no framework)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __getattr__(self, attribute: str) -> Any:
        if attribute.startswith("_"):  # copy and pickle probe for these: not the record's
            raise AttributeError(attribute)
        return getattr(ARMS[self.name], attribute)

    def __repr__(self) -> str:
        return f"ArmReference({self.name!r})"


REFERENCE_ARM = ArmReference("torch-numpy")
"""The arm speed-ups are measured against (the study's baseline stack)."""


def get_arm(name: str) -> ArmProtocol:
    """The arm called ``name``; ``ValueError`` listing the known arms otherwise."""
    check_choice("arm", name, tuple(ARMS))
    return ARMS[name]
