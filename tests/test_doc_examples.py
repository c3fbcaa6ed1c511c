"""The Python examples of the README and of the docs run as written (so they cannot rot).

Every ```python block of README.md and docs/*.md runs in a fresh namespace, in a temporary
directory, and must print what it shows. Examples that must not run here (long training, servers)
are written as ```bash or another fence language instead.
"""

from __future__ import annotations

import pathlib
import re
import sys
import textwrap

import pytest
from stacks import needs

ROOT = pathlib.Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOC_PAGES = sorted((ROOT / "docs").glob("*.md"))
EXAMPLE_SOURCES = {"doors_gym_qtable": ROOT / "examples" / "doors-gym-qtable" / "src"}
"""The example plug-in's package, which the docs import (``docs/own-agent.md``), by its source folder."""
FENCE = re.compile(r"```python\n(.*?)```", flags=re.DOTALL)
IMPORT = re.compile(r"^\s*(?:from|import)\s+([A-Za-z_]\w*)", flags=re.MULTILINE)


def python_blocks(path: pathlib.Path) -> list[str]:
    """The ```python blocks of a Markdown file, dedented (a block may sit in a list item)."""
    return [textwrap.dedent(code) for code in FENCE.findall(path.read_text())]


SLOW_EXAMPLES = ("doors_gym_baselines.compare(",)
"""Examples that train several arms and seeds to solved (about half a minute alone): in the slow tier."""
EXAMPLES = [
    pytest.param(
        path,
        index,
        code,
        id=f"{path.relative_to(ROOT).as_posix()}-{index}",
        marks=[pytest.mark.slow] if any(call in code for call in SLOW_EXAMPLES) else [],
    )
    for path in (README, *DOC_PAGES)
    for index, code in enumerate(python_blocks(path))
]


def test_readme_has_examples() -> None:
    assert len(python_blocks(README)) >= 4


def test_docs_have_examples() -> None:
    pages = {path.name for path in DOC_PAGES if python_blocks(path)}
    assert {"index.md", "getting-started.md", "rules.md", "jax.md", "baselines.md"} <= pages


@pytest.mark.parametrize(("path", "index", "code"), EXAMPLES)
def test_doc_example_runs(
    path: pathlib.Path,
    index: int,
    code: str,
    tmp_path: pathlib.Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Optional stacks (JAX, torch, ...) skip; the package's own imports must work, and the example plug-in's
    # from its source when it is not installed.
    for module in sorted(set(IMPORT.findall(code))):
        if module in EXAMPLE_SOURCES:
            monkeypatch.syspath_prepend(str(EXAMPLE_SOURCES[module]))
        if module not in sys.stdlib_module_names and module not in ("doors_gym", "doors_gym_baselines"):
            needs(module)
    monkeypatch.chdir(tmp_path)
    if "doors_gym_baselines" in code:  # an arm an example adds stays the example's (other tests list the arms)
        from doors_gym_baselines.arms import ARMS

        monkeypatch.setattr(ARMS, "_added", dict(ARMS._added))
    exec(compile(code, f"{path.relative_to(ROOT)} block {index}", "exec"), {"__name__": "doc_example"})
    printed = capsys.readouterr().out
    assert printed.strip(), f"every example of {path.name} ends by printing what it shows"


DOCTEST_MODULES = sorted(
    ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
    for path in (ROOT / "doors_gym").rglob("*.py")
    if ">>> " in path.read_text()
)
"""Every module of the env package whose docstrings hold examples."""


@pytest.mark.parametrize("name", DOCTEST_MODULES)
def test_the_modules_docstring_examples_run_as_written(name: str) -> None:
    assert len(DOCTEST_MODULES) >= 3
    import doctest
    import importlib

    if name.startswith("doors_gym.jax"):
        needs("jax")
    module = importlib.import_module(name)
    failures, tried = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert tried > 0 and failures == 0, f"{name}: {failures} of {tried} examples failed"
