"""Layers only look down, read from the source (every import counts, those inside functions too).

- nothing under ``doors_gym/`` imports the baselines;
- inside the baselines, a module imports only modules of its own layer or below (:data:`LAYERS`, bottom first):
  the learners sit below the registry, tracking, tuning and compare that use them, the commands at the top,
  and nothing imports ``cli`` but the ``__main__`` entry points;
- there is no import cycle among the project's files.
"""

from __future__ import annotations

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1]
UPPER = ("doors_gym_baselines", "baselines")
PACKAGES = {name: ROOT / name for name in ("doors_gym", "doors_gym_baselines")}
"""Each project package and its folder (each folder is named as its package imports)."""

LAYERS = (
    ("config", "runtime", "harness.metrics", "learners.cells"),
    ("harness.evaluation", "arm"),
    ("harness",),
    ("api",),
    ("learners",),
    ("arms", "presets"),
    ("levels",),
    ("serving",),
    ("tracking",),
    ("reporting", "tuning", "serving.enjoy", "experiments", "experiments.executors", "experiments.worker_threads"),
    ("experiments.compare",),
    ("experiments.ladder",),
    ("cli", "__main__"),
)
"""The baselines' layers, bottom first, by module below the package (a package stands for its modules, but for
those named on their own): the foundations (the config package: options, hyperparameters, run settings, the
schedules, flag generation, search-space ranges; process settings; typed results; the networks' input);
evaluation and the arm record; the training harness; the public API of arms (what a learner or a plug-in
imports); the learners; the registry of installed arms and the presets; the level a run trains at; model
logging and loading; MLflow tracking; the reports, tuning, ``enjoy`` and the executors; the comparison; the
ladder (a comparison per level); the commands."""
ENTRY_POINTS = ("__main__",)
"""The only modules that may import ``cli`` (``python -m``)."""


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


def module_name(package: str, folder: pathlib.Path, path: pathlib.Path) -> str:
    """The dotted name of the file ``path`` of ``package`` (installed from ``folder``)."""
    parts = list(path.relative_to(folder).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([package, *parts])


def project_modules() -> dict[str, pathlib.Path]:
    """Every module of the project's packages by dotted name."""
    return {
        module_name(package, folder, path): path
        for package, folder in PACKAGES.items()
        for path in sorted(folder.rglob("*.py"))
    }


def resolved_imports(name: str, path: pathlib.Path, modules: dict[str, pathlib.Path]) -> set[str]:
    """The project modules the module ``name`` imports, wherever in the file (relative imports resolved;
    ``from package import module`` counts the module, ``from module import name`` the module)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            # a submodule named in ``from package import module`` is that module; any other name, its module's
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) == "import_module":
            targets = [arg.value for arg in node.args if isinstance(arg, ast.Constant) and isinstance(arg.value, str)]
        for target in targets:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def import_graph() -> dict[str, set[str]]:
    """Each project module and the project modules it imports."""
    modules = project_modules()
    return {name: resolved_imports(name, path, modules) for name, path in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in graph.get(node, ()):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def layer_of(name: str) -> int:
    """The index in :data:`LAYERS` of a baselines module: that of the longest entry its name below the package
    starts with (a module named on its own, else its package; every ``__main__`` is an entry point, with the
    commands)."""
    parts = name.split(".")[1:] or ["__init__"]
    if parts[-1] == "__main__":
        parts = ["__main__"]
    for length in range(len(parts), 0, -1):
        prefix = ".".join(parts[:length])
        for position, members in enumerate(LAYERS):
            if prefix in members:
                return position
    raise AssertionError(f"{name} is in no layer of tests/test_layers.py: put it in one")


def test_the_env_package_imports_nothing_from_the_baselines():
    files = sorted((ROOT / "doors_gym").rglob("*.py"))
    assert len(files) > 10
    offenders = {
        str(path.relative_to(ROOT)): sorted(name for name in imported_names(path) if name.split(".")[0] in UPPER)
        for path in files
    }
    assert {path: names for path, names in offenders.items() if names} == {}


def test_the_project_has_no_import_cycle():
    assert cycles(import_graph()) == []


def test_the_baselines_import_only_their_own_layer_or_below():
    graph = import_graph()
    upward = {
        f"{name} -> {other}"
        for name, imported in graph.items()
        if name.startswith("doors_gym_baselines.") and name.count(".") >= 1
        for other in imported
        if other.startswith("doors_gym_baselines.") and layer_of(other) > layer_of(name)
    }
    assert sorted(upward) == []


def test_nothing_imports_the_commands_but_the_entry_points():
    graph = import_graph()
    importers = {
        name
        for name, imported in graph.items()
        if "doors_gym_baselines.cli" in imported and name.rpartition(".")[2] not in ENTRY_POINTS
    }
    assert importers == set()


def test_every_baselines_module_has_a_layer():
    names = [name for name in project_modules() if name.startswith("doors_gym_baselines.")]
    assert len(names) > 20
    for name in names:
        layer_of(name)  # raises naming the module


def test_the_reader_sees_every_kind_of_import(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import baselines.x\nfrom doors_gym_baselines import cli\nimport importlib\n"
        "importlib.import_module('doors_gym_baselines.arms')\n"
    )
    assert {"baselines.x", "doors_gym_baselines", "doors_gym_baselines.arms"} <= imported_names(probe)


def test_the_graph_resolves_relative_and_function_level_imports(tmp_path):
    folder = tmp_path / "pkg"
    (folder / "sub").mkdir(parents=True)
    for name in ("__init__.py", "a.py", "b.py", "sub/__init__.py", "sub/c.py"):
        (folder / name).write_text("")
    (folder / "a.py").write_text("def f():\n    from .sub import c\n")
    (folder / "sub" / "c.py").write_text("from .. import b\nfrom ..a import f\n")
    modules = {module_name("pkg", folder, path): path for path in folder.rglob("*.py")}
    graph = {name: resolved_imports(name, path, modules) for name, path in modules.items()}
    assert graph["pkg.a"] == {"pkg.sub.c"}
    assert graph["pkg.sub.c"] == {"pkg.b", "pkg.a"}
    assert cycles(graph) == [["pkg.a", "pkg.sub.c"]]
