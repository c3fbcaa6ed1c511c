"""Layers only look down: nothing under ``doors_gym/`` imports the baselines (read from the source)."""

from __future__ import annotations

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1]
UPPER = ("doors_gym_baselines", "baselines")


def imported_names(path: pathlib.Path) -> set[str]:
    """Every module a file imports: ``import``, ``from ... import`` and ``importlib.import_module("...")``."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in (
            "import_module",
            "__import__",
        ):
            names.update(arg.value for arg in node.args if isinstance(arg, ast.Constant) and isinstance(arg.value, str))
    return names


def test_the_env_package_imports_nothing_from_the_baselines():
    files = sorted((ROOT / "doors_gym").rglob("*.py"))
    assert len(files) > 10
    offenders = {
        str(path.relative_to(ROOT)): sorted(name for name in imported_names(path) if name.split(".")[0] in UPPER)
        for path in files
    }
    assert {path: names for path, names in offenders.items() if names} == {}


def test_the_reader_sees_every_kind_of_import(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import baselines.x\nfrom doors_gym_baselines import cli\nimport importlib\n"
        "importlib.import_module('doors_gym_baselines.arms')\n"
    )
    assert {"baselines.x", "doors_gym_baselines", "doors_gym_baselines.arms"} <= imported_names(probe)
