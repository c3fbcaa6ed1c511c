"""The README's Python examples run as written (so they cannot rot)."""

from __future__ import annotations

import pathlib
import re

import pytest

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.DOTALL)


def test_readme_has_examples() -> None:
    assert len(BLOCKS) >= 4


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_example_runs(
    index: int, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code = BLOCKS[index]
    if "jax" in code:
        pytest.importorskip("jax")
    monkeypatch.chdir(tmp_path)
    exec(compile(code, f"README.md block {index}", "exec"), {"__name__": "readme_example"})
    printed = capsys.readouterr().out
    assert printed.strip(), "every README example ends by printing what it shows"
